"""Scorer: results Parquet + plan -> lm-eval-compatible metrics, stderr and group aggregates (polars).

Its face: ``score`` (and ``ScoreError``, its one error), ``check_user_code`` (the consent to run a task's code)
and the paired statistics other tools build on (``paired_test``, ``mde``, ``Z_ALPHA``; ``lmeval.diff.runs``
compares two scored runs with them)."""

from lmeval.scorer.errors import ScoreError
from lmeval.scorer.power import Z_ALPHA, mde, paired_test
from lmeval.scorer.score import ScoreOutcome, score, score_run
from lmeval.scorer.usercode import check_user_code

__all__ = ["ScoreError", "ScoreOutcome", "Z_ALPHA", "check_user_code", "mde", "paired_test", "score", "score_run"]
