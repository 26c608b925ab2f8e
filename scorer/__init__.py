"""Scorer: results Parquet + plan -> lm-eval-compatible metrics, stderr and group aggregates (polars)."""

from scorer.compare import compare
from scorer.errors import ScoreError
from scorer.score import score

__all__ = ["ScoreError", "compare", "score"]
