"""Errors of the execute stage. ``ExecuteError`` is a ``UserError``: the CLI prints it as one line, exit 2."""

from __future__ import annotations

from lmeval.plans import UserError


class ExecuteError(UserError):
    """Bad input to ``lmeval execute``/``lmeval merge``: plan, model, overrides or results directory."""


def first_line(e: BaseException) -> str:
    """The first line of an exception's message (its type's name when it has none), for one-line errors."""
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def failed(what: str, e: BaseException) -> str:
    """``failed to WHAT (Type: first line of its message)``: a plugin's exception, said in one line."""
    return f"failed to {what} ({type(e).__name__}: {first_line(e)[:300]})"
