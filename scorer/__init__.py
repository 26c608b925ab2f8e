"""Scorer: results Parquet + plan -> lm-eval-compatible metrics, stderr and group aggregates (polars)."""

from lmeval.scorer.compare import compare
from lmeval.scorer.errors import ScoreError
from lmeval.scorer.score import score

__all__ = ["ScoreError", "compare", "score"]
