"""Scorer: results Parquet + plan -> lm-eval-compatible metrics, stderr and group aggregates (polars)."""

from lmeval.scorer.compare import compare
from lmeval.scorer.errors import ScoreError
from lmeval.scorer.score import score
from lmeval.scorer.usercode import check_user_code

__all__ = ["ScoreError", "check_user_code", "compare", "score"]
