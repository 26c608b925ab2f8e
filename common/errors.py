"""User-facing errors. The CLI prints ``str(err)`` as one line and exits with status 2, no traceback.

Every package raises a subclass of ``UserError`` for bad input (configs, data, plans, results); anything else
is a bug and keeps its traceback. ``lmeval.plans.errors`` re-exports these for the stages.
"""

from __future__ import annotations

import stat


class UserError(Exception):
    """Bad input from a user: a one-line message naming file, task, field and doc id where they apply."""


class InputError(UserError):
    """An input file that breaks a limit: not a regular file, too large, a value beyond the rules."""


def quoted(value: object, limit: int = 60) -> str:
    """``repr(value)`` for an error line, cut to ``limit`` characters (``...`` and the full length marked): a
    1 MB value from an input file is named, never copied whole into the one line."""
    text = repr(value)
    if len(text) <= limit:
        return text
    size = f" ({len(value)} characters)" if isinstance(value, str) else ""
    return text[: max(limit - 3, 1)] + "..." + size


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
)


def file_kind(mode: int) -> str:
    """What a path that is not a regular file is, for a one-line error."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"
