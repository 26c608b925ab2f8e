"""One (task, filter)'s per-document metric values (``FilterScores``), how they are kept, and a subset of them.

Every per-document value is a document's own, so the clean subset of ``lmeval score --exclude`` is scored by
filtering the all-documents scores (``without_docs``), not by scoring again."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import polars as pl


@dataclass
class FilterScores:
    filter: str
    doc_ids: pl.Series  # Int64, sorted
    values: dict[str, Any] = field(default_factory=dict)  # metric key -> pl.Series (Float64) or list
    filtered: pl.Series | None = None  # one String per document (the first instance's filtered response)
    reasoning: pl.DataFrame | None = None  # run.reasoning: reasoning, reasoning_chars per document


def items_json(x: Any) -> str:
    """A document's non-numeric metric values as samples.parquet's ``items`` JSON (numpy values unwrapped)."""
    return json.dumps(x, ensure_ascii=False, default=_np_default)


def _np_default(o: Any) -> Any:
    import numpy as np

    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


MISSING = _Missing()


def as_series_or_list(col: list[Any]) -> Any:
    if col and all(type(v) in (int, float) for v in col):
        return pl.Series(col, dtype=pl.Float64)
    return col


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
