"""samples.parquet's rows (``plans.scored``): one per task, document and filter, with each metric's
per-document number (Float64) and the other per-document values as JSON in ``items``."""

from __future__ import annotations

from typing import Any

import polars as pl

from lmeval.plans import ITEMS, REASONING_COLUMNS, empty_samples
from lmeval.scorer.filterscores import MISSING, FilterScores, items_json
from lmeval.scorer.planload import TaskDocs


def sample_frames(task: str, td: TaskDocs, fscores: list[FilterScores]) -> list[pl.DataFrame]:
    """One frame per filter that scored a document."""
    return [_filter_frame(task, td, fs) for fs in fscores if len(fs.doc_ids)]


def samples_table(frames: list[pl.DataFrame]) -> pl.DataFrame:
    """Every task's frames as one table (columns a task lacks are null)."""
    return pl.concat(frames, how="diagonal_relaxed", rechunk=False) if frames else empty_samples()


def _targets(td: TaskDocs, doc_ids: pl.Series) -> pl.Series:
    docs = td.docs
    if not (docs.height == len(doc_ids) and docs["doc_id"].equals(doc_ids)):
        docs = docs.join(pl.DataFrame({"doc_id": doc_ids}), on="doc_id", how="semi").sort("doc_id")
    return docs.select(
        pl.coalesce(pl.col("target_str"), pl.col("target_int").cast(pl.String), pl.col("target_json"))
    ).to_series()


def _filter_frame(task: str, td: TaskDocs, fs: FilterScores) -> pl.DataFrame:
    n = len(fs.doc_ids)
    cols: dict[str, Any] = {
        "task": pl.Series([task] * n, dtype=pl.String),
        "doc_id": fs.doc_ids.alias("doc_id"),
        "filter": pl.Series([fs.filter] * n, dtype=pl.String),
        "target": _targets(td, fs.doc_ids).alias("target"),
        "filtered": fs.filtered if fs.filtered is not None else pl.Series([None] * n, dtype=pl.String),
    }
    if fs.reasoning is not None:  # run.reasoning: the first response's reasoning part and its length
        cols.update({c: fs.reasoning[c] for c in REASONING_COLUMNS})
    items: dict[str, list[Any]] = {}
    for key, vals in fs.values.items():
        if isinstance(vals, pl.Series):
            cols[key] = vals.cast(pl.Float64)
        elif all(isinstance(v, bool) or v is None or v is MISSING for v in vals):
            cols[key] = pl.Series([None if v is MISSING or v is None else float(v) for v in vals], dtype=pl.Float64)
        else:
            items[key] = vals
    if items:
        cols[ITEMS] = pl.Series(
            [items_json({k: v[i] for k, v in items.items() if v[i] is not MISSING}) for i in range(n)],
            dtype=pl.String,
        )
    return pl.DataFrame(cols)
