"""User-facing errors. The CLI prints ``str(err)`` as one line and exits with status 2, no traceback.

Every stage raises a subclass of ``UserError`` for bad input (configs, data, plans, results); anything else
is a bug and keeps its traceback.
"""

from collections.abc import Iterator
from contextlib import contextmanager

from lmeval.common import UserError

__all__ = ["PlanError", "RegistrationError", "UserError", "reraised_as"]


class PlanError(UserError):
    """A plan file (or a results directory) that cannot be read or does not match what it claims to be."""


class RegistrationError(UserError, ValueError):
    """A registration (a metric, an aggregation, a backend: a plugin's) that is refused: a name that would make
    results ambiguous or take another's place. A ``ValueError`` to the code registering; one line from a command."""


@contextmanager
def reraised_as(error: type[UserError]) -> Iterator[None]:
    """A ``PlanError`` raised inside the block becomes ``error`` with the same one-line message (the stage's
    own error class; no chained traceback)."""
    try:
        yield
    except PlanError as e:
        raise error(str(e)) from None
