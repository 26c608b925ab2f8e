"""User-facing errors. The CLI prints ``str(err)`` as one line and exits with status 2, no traceback.

Every stage raises a subclass of ``UserError`` for bad input (configs, data, plans, results); anything else
is a bug and keeps its traceback.
"""


class UserError(Exception):
    """Bad input from a user: a one-line message naming file, task, field and doc id where they apply."""


class PlanError(UserError):
    """A plan file (or a results directory) that cannot be read or does not match what it claims to be."""
