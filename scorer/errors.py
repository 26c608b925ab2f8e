"""Errors the scorer reports to users (one line, exit status 2 from the CLI)."""

from __future__ import annotations

from lmeval.plans import UserError


class ScoreError(UserError):
    """Results or plan that cannot be scored: wrong plan, unknown metric, invalid regex, untrusted code."""


class PartialResultsError(ScoreError):
    """Raised by the CLI after scoring what is complete when instances are missing (see ``score``)."""
