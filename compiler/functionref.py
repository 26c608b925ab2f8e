"""A ``!function module.attr`` reference as a task config holds it (``compiler.tasks.functions`` locates and
records it). A record of its own, below the task and format subsystems, so both can test for it without either
importing the other."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FunctionRef:
    """A reference to ``module.attr`` found in a config at ``source`` (a YAML file, or None)."""

    qualname: str  # module.attr as the config wrote it
    base_dir: str | None = None
    source: str | None = None
