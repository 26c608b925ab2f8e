"""generate_until scoring on all documents at once: a filter's String responses against the golds, each
metric through its vectorised path (``scorer.metrics``: ``Metric.vector``)."""

from __future__ import annotations

from typing import Any

import polars as pl

from lmeval.plans import TaskSummary
from lmeval.scorer.errors import ScoreError
from lmeval.scorer.filters import FilterOutput
from lmeval.scorer.filterscores import FilterScores
from lmeval.scorer.metrics.registry import METRICS
from lmeval.scorer.metrics.resolve import TaskMetrics


def score_generate_fast(
    ts: TaskSummary,
    tm: TaskMetrics,
    docs: pl.DataFrame,
    rows: pl.DataFrame,
    fo: FilterOutput,
    filt: str,
    multiple_target: bool,
    cache: dict[Any, Any],
) -> FilterScores | None:
    """The vectorised path (each metric's ``Metric.vector``), or None where it does not apply exactly (the
    caller scores those documents one by one)."""
    fast_ok = (
        fo.kind == "scalar"
        and tm.process_results is None
        and not multiple_target
        and all(s.builtin is not None and METRICS[s.builtin].vector is not None for s in tm.metrics)
        and not any(METRICS[s.builtin].raw_gold for s in tm.metrics if s.builtin is not None)
    )
    if not fast_ok:
        return None
    assert fo.scalar is not None
    if "golds" not in cache:
        # lm-eval: gold = choices[target] with choices; else str(target) when the response is a str
        gold = (
            pl.when(pl.col("choices").is_not_null())
            .then(pl.col("choices").list.get(pl.col("target_int"), null_on_oob=True))
            .when(pl.col("target_str").is_not_null())
            .then(pl.col("target_str"))
            .otherwise(pl.col("target_int").cast(pl.String))
        )
        cache["golds"] = docs.select("doc_id", gold.alias("g"))
    g = cache["golds"]
    golds_series = cache.setdefault("gold_series", g["g"])
    preds_df = pl.DataFrame({"doc_id": rows["doc_id"], "idx": rows["idx"], "v": fo.scalar}).filter(pl.col("idx") == 0)
    if preds_df.height != docs.height or preds_df["v"].null_count() or g["g"].null_count():
        return None
    if not preds_df["doc_id"].equals(g["doc_id"]):
        preds_df = g.select("doc_id").join(preds_df, on="doc_id", how="left", maintain_order="left")
    preds, golds = preds_df["v"], golds_series
    values: dict[str, Any] = {}
    for entry in tm.metrics:
        assert entry.builtin is not None
        metric = METRICS[entry.builtin]
        assert metric.vector is not None
        try:
            values[entry.name] = metric.vector(preds, golds, entry.kwargs, cache)
        except TypeError as e:
            raise ScoreError(f"task {ts.name}: metric {entry.builtin}: {e}") from None
    return FilterScores(filt, g["doc_id"], values, preds.alias("filtered"))
