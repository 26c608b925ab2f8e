"""User-facing errors. The CLI prints ``str(err)`` as one line and exits with status 2, no traceback.

Every stage raises a subclass of ``UserError`` for bad input (configs, data, plans, results); anything else
is a bug and keeps its traceback.
"""

from lmeval.common.errors import UserError

__all__ = ["PlanError", "UserError"]


class PlanError(UserError):
    """A plan file (or a results directory) that cannot be read or does not match what it claims to be."""
