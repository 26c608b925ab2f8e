"""Errors ``lmeval report`` shows users (one line, exit status 2 from the CLI)."""

from __future__ import annotations

from lmeval.plans import UserError


class ReportError(UserError):
    """A results directory (or the plan it names) that cannot be reported: missing, unscored, malformed."""
