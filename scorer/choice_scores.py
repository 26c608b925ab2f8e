"""multiple_choice scoring in numpy over (documents x choices) arrays, for the default take_first filter.

Documents the arrays cannot score exactly go through lm-eval's process_results path (``scorer.doc_metrics``)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import polars as pl

from lmeval.plans import unconditional_metrics
from lmeval.scorer import doc_metrics
from lmeval.scorer.errors import ScoreError
from lmeval.scorer.filterscores import FilterScores, items_json
from lmeval.scorer.metrics import TaskMetrics
from lmeval.scorer.planload import TaskDocs

FAST_MC = {"acc", "acc_norm", "acc_bytes", "exact_match", "acc_mutual_info", "acc_per_token", "acc_pmi", "f1", "mcc"}
_MC_KEYS = ("acc", "f1", "mcc", "acc_norm", "acc_bytes", "exact_match", "acc_mutual_info", "acc_per_token", "acc_pmi")


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
    keys = [k for k in _MC_KEYS if k in names]
    d = _mc_layout(docs, rows, len(blocks), multiple_target)
    frames = [
        _mc_group_frame(rows, grp.sort("doc_id"), n, blocks, keys)
        for (n,), grp in d.filter(pl.col("simple")).partition_by("n", as_dict=True).items()
    ]
    slow_ids = d.filter(~pl.col("simple"))["doc_id"].to_list()
    if slow_ids:
        frames.append(_mc_slow_frame(tm, td, rows, slow_ids, keys, multiple_target))
    allf = pl.concat(frames, how="diagonal_relaxed").sort("doc_id")
    return FilterScores(filt, allf["doc_id"], _mc_values(allf, keys))


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


def _mc_group_frame(rows: pl.DataFrame, grp: pl.DataFrame, n: int, blocks: list[str], keys: list[str]) -> pl.DataFrame:
    """The documents of ``grp`` (all with ``n`` requests) scored at once on (documents x choices) arrays."""
    if grp.height * n == rows.height:  # every document is in this group: rows are already in order
        sub = rows
    else:
        sub = rows.join(grp.select("doc_id"), on="doc_id", how="semi").sort(["doc_id", "idx"])
    m = grp.height
    k = n // (1 + len(blocks))
    ll = sub["loglikelihood"].to_numpy().reshape(m, n).astype(np.float64)
    greedy = sub["is_greedy"].fill_null(False).to_numpy().reshape(m, n)
    ch = grp.select(pl.col("choices").explode())["choices"]
    clen = ch.str.len_chars().cast(pl.Float64).to_numpy().reshape(m, k)
    blen = ch.str.len_bytes().cast(pl.Float64).to_numpy().reshape(m, k)
    cond = ll[:, :k]
    gold = grp["gold"].to_numpy()
    cols: dict[str, Any] = {"doc_id": grp["doc_id"], "_gold": gold}
    with np.errstate(divide="ignore", invalid="ignore"):
        pred = np.argmax(cond, axis=1)
        cols["_pred"] = pred
        preds = {
            "acc": pred,
            "acc_norm": np.argmax(cond / clen, axis=1),
            "acc_bytes": np.argmax(cond / blen, axis=1),
        }
        for j, metric in enumerate(blocks, start=1):  # log P(choice | prompt) - log P(choice | that context)
            preds[metric] = np.argmax(cond - ll[:, j * k : (j + 1) * k], axis=1)
        if "acc_per_token" in keys:
            preds["acc_per_token"] = np.argmax(cond / _token_counts(sub, m, n)[:, :k], axis=1)
    for key, pr in preds.items():
        if key in keys:
            cols[key] = (pr == gold).astype(np.float64)
    if "exact_match" in keys:
        safe = np.where(gold == -100, 0, gold)
        cols["exact_match"] = np.where(gold == -100, 0, greedy[np.arange(m), safe].astype(np.int64)).astype(np.float64)
    return pl.DataFrame(cols)


def _token_counts(sub: pl.DataFrame, m: int, n: int) -> Any:
    """The (documents x requests) continuation token counts acc_per_token divides by (from the result rows)."""
    counts = sub["n_continuation_tokens"]
    if counts.null_count():
        raise ScoreError("acc_per_token needs each request's continuation token count (n_continuation_tokens)")
    return counts.cast(pl.Float64).to_numpy().reshape(m, n)


def _mc_slow_frame(
    tm: TaskMetrics, td: TaskDocs, rows: pl.DataFrame, slow_ids: list[int], keys: list[str], multiple_target: bool
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
        for key in keys:
            v = out[key]
            if key in ("f1", "mcc"):
                row["_item_" + key] = items_json(v)
            else:
                row[key] = float(v)
        slow_rows.append(row)
    return pl.DataFrame(slow_rows)


def _mc_values(allf: pl.DataFrame, keys: list[str]) -> dict[str, Any]:
    """Metric key -> per-document values (Float64; (gold, pred) pairs for the corpus metrics f1, mcc)."""
    values: dict[str, Any] = {}
    for key in keys:
        if key in ("f1", "mcc"):
            items: list[Any] = []
            fast_pairs: list[Any] = (
                list(zip(allf["_gold"].to_list(), allf["_pred"].to_list(), strict=True))
                if "_gold" in allf.columns
                else [None] * allf.height
            )
            slow_items = allf["_item_" + key].to_list() if "_item_" + key in allf.columns else [None] * allf.height
            for fp, si in zip(fast_pairs, slow_items, strict=True):
                items.append(tuple(json.loads(si)) if si is not None else (int(fp[0]), int(fp[1])))
            values[key] = items
        else:
            values[key] = allf[key].cast(pl.Float64)
    return values
