"""Score one task: run each filter pipeline over its responses and compute per-document metric values.

The output per (task, filter) is a ``FilterScores``: document ids in order, and for every metric key
lm-eval would produce, the per-document values in the same order (floats in a polars Series where the
metric is a number, Python objects otherwise, e.g. f1's ``(gold, pred)`` or bleu's ``[ref, pred]``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from lmeval.plans.reasoning import Reasoning
from lmeval.plans.records import OUTPUT_TYPES, DocRecord, TaskSummary, instance_id_for
from lmeval.scorer import doc_metrics
from lmeval.scorer.errors import ScoreError
from lmeval.scorer.filters import FilterOutput, Pipeline, apply_pipeline
from lmeval.scorer.metrics import METRICS, TaskMetrics
from lmeval.scorer.planload import TaskDocs
from lmeval.scorer.reasoning import generation_responses
from lmeval.scorer.usercode import Trust

_FAST_MC = {"acc", "acc_norm", "acc_bytes", "exact_match", "acc_mutual_info", "f1", "mcc"}
_MC_KEYS = ("acc", "f1", "mcc", "acc_norm", "acc_bytes", "exact_match", "acc_mutual_info")


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


def _as_series_or_list(col: list[Any]) -> Any:
    if col and all(type(v) in (int, float) for v in col):
        return pl.Series(col, dtype=pl.Float64)
    return col


def score_task(
    ts: TaskSummary, td: TaskDocs, rows: pl.DataFrame, tm: TaskMetrics, pipelines: list[Pipeline],
    trust: Trust | None, reasoning: Reasoning | None = None,
) -> list[FilterScores]:  # fmt: skip
    """``rows``: the task's result rows of complete documents only, sorted by doc_id, idx. ``reasoning``
    (``run.reasoning``): a generation task's filters see each response's answer part only."""
    doc_ids = rows["doc_id"].unique().sort()
    docs = td.docs.join(pl.DataFrame({"doc_id": doc_ids}), on="doc_id", how="semi").sort("doc_id")
    first = td.first_target()
    multiple_target = isinstance(first, list)
    ot = ts.output_type
    out: list[FilterScores] = []
    if docs.height == 0:
        return [FilterScores(p.name, pl.Series("doc_id", [], dtype=pl.Int64)) for p in pipelines]

    def inst_docs() -> list[dict[str, Any]]:
        recs = {r.doc_id: r for r in td.records(doc_ids.to_list())}
        return [recs[d].doc for d in rows["doc_id"].to_list()]

    gen_cache: dict[Any, Any] = {}
    resps, split = generation_responses(rows, docs["doc_id"], reasoning) if ot == "generate_until" else (None, None)
    for pipe in pipelines:
        if resps is not None:  # generate_until
            fo = apply_pipeline(pipe, resps, inst_docs, ts.name, trust)
            fs = _score_generate(ts, tm, td, docs, rows, fo, pipe.name, multiple_target, gen_cache)
            fs.reasoning = split
            out.append(fs)
        elif ot in OUTPUT_TYPES:  # the log-likelihood ones
            simple = [s.get("function") for s in pipe.steps] == ["take_first"]
            if ot == "multiple_choice" and simple and tm.process_results is None and set(tm.names()) <= _FAST_MC:
                out.append(_score_mc_fast(tm, td, docs, rows, pipe.name, multiple_target))
                continue
            if ot == "loglikelihood_rolling":
                resps_py: list[Any] = [[ll] for ll in rows["loglikelihood"].to_list()]
            else:
                resps_py = [
                    [(ll, bool(g))]
                    for ll, g in zip(rows["loglikelihood"].to_list(), rows["is_greedy"].to_list(), strict=True)
                ]
            fo = apply_pipeline(pipe, resps_py, inst_docs, ts.name, trust)
            out.append(_score_python(ts, tm, td, docs, rows, fo, pipe.name, multiple_target))
        else:
            raise ScoreError(f"task {ts.name}: unknown output_type {ot!r}")
    return out


def _score_python(
    ts: TaskSummary,
    tm: TaskMetrics,
    td: TaskDocs,
    docs: pl.DataFrame,
    rows: pl.DataFrame,
    fo: FilterOutput,
    filt: str,
    multiple_target: bool,
) -> FilterScores:
    vals = fo.to_py()
    per_doc: dict[int, list[Any]] = {}
    for d, v in zip(rows["doc_id"].to_list(), vals, strict=True):
        per_doc.setdefault(d, []).append(v)
    ids = docs["doc_id"].to_list()
    recs = list(td.records(ids))
    firsts = [per_doc[rec.doc_id][0] for rec in recs]
    if _runs_programs(tm):
        # each document's programs run in sandboxed child processes: score documents side by side (the
        # results, in document order, do not depend on the timing)
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
            dicts = list(pool.map(lambda r: _doc_metrics(ts, tm, r, per_doc[r.doc_id], multiple_target), recs))
    else:
        dicts = [_doc_metrics(ts, tm, rec, per_doc[rec.doc_id], multiple_target) for rec in recs]
    keys: list[str] = []
    for dct in dicts:
        for k in dct:
            if k not in keys:
                keys.append(k)
    values = {k: _as_series_or_list([dct.get(k, MISSING) for dct in dicts]) for k in keys}
    filtered = pl.Series("filtered", [v if isinstance(v, str) else items_json(v) for v in firsts], dtype=pl.String)
    return FilterScores(filt, docs["doc_id"], values, filtered)


def _runs_programs(tm: TaskMetrics) -> bool:
    """Whether the task's metrics execute generated code (lmeval's sandboxed pass@k built-ins)."""
    from lmeval.scorer.usercode import builtin_hooks

    hooks = set(builtin_hooks().values())
    return tm.process_results is None and any(
        (m.builtin is not None and METRICS[m.builtin].runs_code) or m.fn in hooks for m in tm.metrics
    )


def _doc_metrics(
    ts: TaskSummary, tm: TaskMetrics, d: DocRecord, results: list[Any], multiple_target: bool
) -> dict[str, Any]:
    where = f"task {ts.name} doc {d.doc_id}"
    try:
        if tm.process_results is not None:
            return dict(tm.process_results(d.doc, results))
        ot = ts.output_type
        if ot == "multiple_choice":
            if d.choices is None:
                raise ScoreError(f"{where}: multiple_choice document has no choices in the plan")
            return doc_metrics.mc_doc(tm, d.target, d.choices, results, multiple_target)
        if ot == "loglikelihood":
            return doc_metrics.loglikelihood_doc(tm, results)
        if ot == "loglikelihood_rolling":
            return doc_metrics.rolling_doc(tm, d.target, results)
        return doc_metrics.generate_doc(tm, d.doc, d.target, d.choices, results[0], multiple_target)
    except ScoreError as e:
        if str(e).startswith("task "):
            raise
        raise ScoreError(f"{where}: {e}") from None
    except (TypeError, ValueError, IndexError, KeyError, AttributeError) as e:
        raise ScoreError(f"{where}: cannot score ({type(e).__name__}: {e})") from None


doc_values = _doc_metrics  # one document's metric values for ``results`` (scorer/samplescore.py scores each repeat)


def _score_generate(
    ts: TaskSummary,
    tm: TaskMetrics,
    td: TaskDocs,
    docs: pl.DataFrame,
    rows: pl.DataFrame,
    fo: FilterOutput,
    filt: str,
    multiple_target: bool,
    cache: dict[Any, Any],
) -> FilterScores:
    names = tm.names()
    fast_ok = (
        fo.kind == "scalar"
        and tm.process_results is None
        and not multiple_target
        and all(s.builtin is not None and METRICS[s.builtin].vector is not None for s in tm.metrics)
        and "bypass" not in names
    )
    if not fast_ok:
        return _score_python(ts, tm, td, docs, rows, fo, filt, multiple_target)
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
        return _score_python(ts, tm, td, docs, rows, fo, filt, multiple_target)
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


def _score_mc_fast(
    tm: TaskMetrics, td: TaskDocs, docs: pl.DataFrame, rows: pl.DataFrame, filt: str, multiple_target: bool
) -> FilterScores:
    """multiple_choice with the default take_first filter, in numpy over (documents x choices) arrays.

    lm-eval's process_results takes ``np.argmax`` of the log-likelihoods (divided by choice lengths for
    acc_norm/acc_bytes) per document; here the same numpy operations run on a 2-D array of all documents
    with the same number of requests at once, so ties and NaNs resolve exactly as in lm-eval. Documents
    that do not fit (list or text targets, negative targets, unexpected request counts) go to Python.
    """
    names = tm.names()
    mi = "acc_mutual_info" in names
    keys = [k for k in _MC_KEYS if k in names]
    d = _mc_layout(docs, rows, mi, multiple_target)
    frames = [
        _mc_group_frame(rows, grp.sort("doc_id"), n, mi, keys)
        for (n,), grp in d.filter(pl.col("simple")).partition_by("n", as_dict=True).items()
    ]
    slow_ids = d.filter(~pl.col("simple"))["doc_id"].to_list()
    if slow_ids:
        frames.append(_mc_slow_frame(tm, td, rows, slow_ids, keys, multiple_target))
    allf = pl.concat(frames, how="diagonal_relaxed").sort("doc_id")
    return FilterScores(filt, allf["doc_id"], _mc_values(allf, keys))


def _mc_layout(docs: pl.DataFrame, rows: pl.DataFrame, mi: bool, multiple_target: bool) -> pl.DataFrame:
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
            expect=pl.col("k") * (2 if mi else 1),
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


def _mc_group_frame(rows: pl.DataFrame, grp: pl.DataFrame, n: int, mi: bool, keys: list[str]) -> pl.DataFrame:
    """The documents of ``grp`` (all with ``n`` requests) scored at once on (documents x choices) arrays."""
    if grp.height * n == rows.height:  # every document is in this group: rows are already in order
        sub = rows
    else:
        sub = rows.join(grp.select("doc_id"), on="doc_id", how="semi").sort(["doc_id", "idx"])
    m = grp.height
    k = n // 2 if mi else n
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
        if mi:
            preds["acc_mutual_info"] = np.argmax(cond - ll[:, k:], axis=1)
    for key, pr in preds.items():
        if key in keys:
            cols[key] = (pr == gold).astype(np.float64)
    if "exact_match" in keys:
        safe = np.where(gold == -100, 0, gold)
        cols["exact_match"] = np.where(gold == -100, 0, greedy[np.arange(m), safe].astype(np.int64)).astype(np.float64)
    return pl.DataFrame(cols)


def _mc_slow_frame(
    tm: TaskMetrics, td: TaskDocs, rows: pl.DataFrame, slow_ids: list[int], keys: list[str], multiple_target: bool
) -> pl.DataFrame:
    """The documents numpy cannot score exactly, through lm-eval's process_results path (``doc_metrics``)."""
    sub = rows.filter(pl.col("doc_id").is_in(slow_ids))
    resps: dict[int, list[Any]] = {}
    for doc_id, ll_, g in zip(
        sub["doc_id"].to_list(), sub["loglikelihood"].to_list(), sub["is_greedy"].to_list(), strict=True
    ):
        resps.setdefault(doc_id, []).append((ll_, bool(g)))
    slow_rows: list[dict[str, Any]] = []
    for rec in td.records(sorted(slow_ids)):
        if rec.choices is None:
            raise ScoreError(f"task {rec.task} doc {rec.doc_id}: multiple_choice document has no choices in the plan")
        try:
            out = doc_metrics.mc_doc(tm, rec.target, rec.choices, resps[rec.doc_id], multiple_target)
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


def describe_missing(task: str, missing: pl.DataFrame, limit: int = 5) -> str:
    first = missing.sort(["doc_id", "idx"]).head(limit)
    ids = ", ".join(
        f"doc {d} idx {i} ({instance_id_for(task, d, i)})" for d, i in first.select("doc_id", "idx").iter_rows()
    )
    return f"{task}: {missing.height} instances missing (first: {ids})"
