"""A task's scores less some documents (``lmeval score --exclude``): every per-document value is a
document's own, so the clean subset is scored by filtering the all-documents scores, not by scoring again."""

from __future__ import annotations

from typing import Any

import polars as pl

from lmeval.scorer.taskscore import FilterScores


def without_docs(fs: FilterScores, drop: list[int]) -> FilterScores:
    """``fs`` less the documents ``drop`` (``lmeval score --exclude``): every per-document value is a
    document's own, so a subset's scores are the subset of the scores."""
    keep = ~fs.doc_ids.is_in(drop)
    mask = keep.to_list()

    def sub(v: Any) -> Any:
        return v.filter(keep) if isinstance(v, pl.Series) else [x for x, k in zip(v, mask, strict=True) if k]

    return FilterScores(
        fs.filter,
        fs.doc_ids.filter(keep),
        {k: sub(v) for k, v in fs.values.items()},
        None if fs.filtered is None else fs.filtered.filter(keep),
        None if fs.reasoning is None else fs.reasoning.filter(keep),
    )
