"""Write an already sealed plan (header + the record bytes ``plans.io.seal`` produced) atomically.

Same bytes as ``plans.io.write_plan``; it only skips encoding every record a second time.
"""

from plans.io import write_sealed

__all__ = ["write_sealed"]
