"""multiple_choice scoring in numpy over (documents x choices) arrays, for the default take_first filter.

Documents the arrays cannot score exactly go through lm-eval's process_results path (``scorer.metrics.doc_metrics``)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import polars as pl

from lmeval.plans import unconditional_metrics
from lmeval.scorer.errors import ScoreError
from lmeval.scorer.filterscores import FilterScores, items_json
from lmeval.scorer.metrics import doc_metrics
from lmeval.scorer.metrics.evidence import ChoiceArrays
from lmeval.scorer.metrics.registry import METRICS, Metric, metrics_for
from lmeval.scorer.metrics.resolve import TaskMetrics
from lmeval.scorer.planload import TaskDocs


def fast_mc(names: list[str]) -> bool:
    """Whether every metric of ``names`` has a form over (documents x choices) arrays (``choices_vector``)."""
    return all(n in METRICS and METRICS[n].choices_vector is not None for n in names)


def score_mc_fast(
    tm: TaskMetrics, td: TaskDocs, docs: pl.DataFrame, rows: pl.DataFrame, filt: str, multiple_target: bool
) -> FilterScores:
    """multiple_choice with the default take_first filter, in numpy over (documents x choices) arrays.

    lm-eval's process_results takes ``np.argmax`` of the log-likelihoods (divided by choice lengths for
    acc_norm/acc_bytes) per document; here the same numpy operations run on a 2-D array of all documents
    with the same number of requests at once, so ties and NaNs resolve exactly as in lm-eval. Documents
    that do not fit (list or text targets, negative targets, unexpected request counts) go to Python.
    """
    names = tm.names()
    blocks = unconditional_metrics(names)
    metrics = [m for m in metrics_for("multiple_choice") if m.name in names]
    d = _mc_layout(docs, rows, len(blocks), multiple_target)
    frames = [
        _mc_group_frame(rows, grp.sort("doc_id"), n, blocks, metrics)
        for (n,), grp in d.filter(pl.col("simple")).partition_by("n", as_dict=True).items()
    ]
    slow_ids = d.filter(~pl.col("simple"))["doc_id"].to_list()
    if slow_ids:
        frames.append(_mc_slow_frame(tm, td, rows, slow_ids, metrics, multiple_target))
    allf = pl.concat(frames, how="diagonal_relaxed").sort("doc_id")
    return FilterScores(filt, allf["doc_id"], _mc_values(allf, metrics))


def _mc_layout(docs: pl.DataFrame, rows: pl.DataFrame, n_blocks: int, multiple_target: bool) -> pl.DataFrame:
    """Per document: choices ``k``, its rows' count ``n`` and idx range, the gold index, and ``simple``
    (scored in numpy: an int target in range, exactly the expected requests, one target)."""
    # rows are sorted by (doc_id, idx) without duplicates (scorer.rows): per document, the count and the
    # first and last idx come from the run boundaries, no hashing needed
    start = pl.col("doc_id") != pl.col("doc_id").shift(1)
    end = pl.col("doc_id") != pl.col("doc_id").shift(-1)
    bounds = rows.select(
        "doc_id",
        "idx",
        pl.int_range(pl.len()).alias("_i"),
        start.fill_null(True).alias("_s"),
        end.fill_null(True).alias("_e"),
    )
    firsts = bounds.filter(pl.col("_s")).select("doc_id", lo="idx", _i0="_i")
    lasts = bounds.filter(pl.col("_e")).select(hi="idx", _i1="_i")
    per_doc = pl.concat([firsts, lasts], how="horizontal").select(
        "doc_id", "lo", "hi", n=pl.col("_i1") - pl.col("_i0") + 1
    )
    return (
        docs.with_columns(k=pl.col("choices").list.len().cast(pl.Int64))
        .join(per_doc, on="doc_id", how="left")
        .with_columns(
            gold=pl.when(pl.col("target_int") >= pl.col("k")).then(-100).otherwise(pl.col("target_int")),
            expect=pl.col("k") * (1 + n_blocks),  # conditional requests, then each unconditional block
        )
        .with_columns(
            simple=(
                pl.col("choices").is_not_null()
                & pl.col("target_int").is_not_null()
                & (pl.col("target_int") >= 0)
                & (pl.col("k") > 0)
                & (pl.col("n") == pl.col("expect"))
                & (pl.col("lo") == 0)
                & (pl.col("hi") == pl.col("n") - 1)
                & pl.lit(not multiple_target)
            ).fill_null(False)
        )
    )


def _mc_group_frame(
    rows: pl.DataFrame, grp: pl.DataFrame, n: int, blocks: list[str], metrics: list[Metric]
) -> pl.DataFrame:
    """The documents of ``grp`` (all with ``n`` requests) scored at once on (documents x choices) arrays, each
    metric by its ``choices_vector``; a metric whose values are items keeps them as JSON (``_item_NAME``)."""
    if grp.height * n == rows.height:  # every document is in this group: rows are already in order
        sub = rows
    else:
        sub = rows.join(grp.select("doc_id"), on="doc_id", how="semi").sort(["doc_id", "idx"])
    m = grp.height
    k = n // (1 + len(blocks))
    ll = sub["loglikelihood"].to_numpy().reshape(m, n).astype(np.float64)
    arrays = ChoiceArrays(
        cond=ll[:, :k],
        greedy=sub["is_greedy"].fill_null(False).to_numpy().reshape(m, n)[:, :k],
        choices=grp.select(pl.col("choices").explode())["choices"],
        gold=grp["gold"].to_numpy(),
        # log P(choice | prompt) - log P(choice | that context): each unconditional block after the choices
        uncond={metric: ll[:, j * k : (j + 1) * k] for j, metric in enumerate(blocks, start=1)},
        tokens=lambda: _token_counts(sub, m, n)[:, :k],
    )
    cols: dict[str, Any] = {"doc_id": grp["doc_id"]}
    for metric in metrics:
        assert metric.choices_vector is not None
        v = metric.choices_vector(arrays)
        if isinstance(v, list):
            cols["_item_" + metric.name] = [items_json(x) for x in v]
        else:
            cols[metric.name] = np.asarray(v, dtype=np.float64)
    return pl.DataFrame(cols)


def _token_counts(sub: pl.DataFrame, m: int, n: int) -> Any:
    """The (documents x requests) continuation token counts acc_per_token divides by (from the result rows)."""
    counts = sub["n_continuation_tokens"]
    if counts.null_count():
        raise ScoreError("acc_per_token needs each request's continuation token count (n_continuation_tokens)")
    return counts.cast(pl.Float64).to_numpy().reshape(m, n)


def _mc_slow_frame(
    tm: TaskMetrics,
    td: TaskDocs,
    rows: pl.DataFrame,
    slow_ids: list[int],
    metrics: list[Metric],
    multiple_target: bool,
) -> pl.DataFrame:
    """The documents numpy cannot score exactly, through lm-eval's process_results path (``doc_metrics``)."""
    sub = rows.filter(pl.col("doc_id").is_in(slow_ids))
    resps: dict[int, list[Any]] = {}
    ntoks: dict[int, list[int | None]] = {}
    for doc_id, ll_, g, nt in zip(
        sub["doc_id"].to_list(),
        sub["loglikelihood"].to_list(),
        sub["is_greedy"].to_list(),
        sub["n_continuation_tokens"].to_list(),
        strict=True,
    ):
        resps.setdefault(doc_id, []).append((ll_, bool(g)))
        ntoks.setdefault(doc_id, []).append(nt)
    slow_rows: list[dict[str, Any]] = []
    for rec in td.records(sorted(slow_ids)):
        if rec.choices is None:
            raise ScoreError(f"task {rec.task} doc {rec.doc_id}: multiple_choice document has no choices in the plan")
        try:
            out = doc_metrics.mc_doc(tm, rec.target, rec.choices, resps[rec.doc_id], multiple_target, ntoks[rec.doc_id])
        except (TypeError, ValueError, IndexError, KeyError) as e:
            raise ScoreError(f"task {rec.task} doc {rec.doc_id}: cannot score ({type(e).__name__}: {e})") from None
        row: dict[str, Any] = {"doc_id": rec.doc_id}
        for metric in metrics:
            v = out[metric.name]
            if metric.pairs:
                row["_item_" + metric.name] = items_json(v)
            else:
                row[metric.name] = float(v)
        slow_rows.append(row)
    return pl.DataFrame(slow_rows)


def _mc_values(allf: pl.DataFrame, metrics: list[Metric]) -> dict[str, Any]:
    """Metric name -> per-document values (Float64; the items, e.g. (gold, pred) pairs of f1 and mcc)."""
    values: dict[str, Any] = {}
    for metric in metrics:
        if metric.pairs:
            values[metric.name] = [tuple(json.loads(v)) for v in allf["_item_" + metric.name].to_list()]
        else:
            values[metric.name] = allf[metric.name].cast(pl.Float64)
    return values
