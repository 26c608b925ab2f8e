"""Errors the contamination check reports to users (one line, exit status 2 from the CLI)."""

from __future__ import annotations

from lmeval.plans import UserError


class ContaminationError(UserError):
    """A corpus, report or worker setting the contamination check cannot use."""
