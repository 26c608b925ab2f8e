"""Errors of the execute stage. ``ExecuteError`` is a ``UserError``: the CLI prints it as one line, exit 2."""

from __future__ import annotations

from lmeval.plans.errors import UserError


class ExecuteError(UserError):
    """Bad input to ``lmeval execute``/``lmeval merge``: plan, model, overrides or results directory."""
