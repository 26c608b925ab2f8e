"""Score one task: run each filter pipeline over its responses and compute per-document metric values.

The output per (task, filter) is a ``FilterScores``: document ids in order, and for every metric key
lm-eval would produce, the per-document values in the same order (floats in a polars Series where the
metric is a number, Python objects otherwise, e.g. f1's ``(gold, pred)`` or bleu's ``[ref, pred]``).
"""

from __future__ import annotations

import os
from typing import Any

import polars as pl

from lmeval.plans import OUTPUT_TYPES, DocRecord, Reasoning, TaskSummary, instance_id_for
from lmeval.scorer.errors import ScoreError
from lmeval.scorer.filters import FilterOutput, Pipeline, apply_pipeline
from lmeval.scorer.filterscores import MISSING, FilterScores, as_series_or_list, items_json
from lmeval.scorer.metrics import (
    METRICS,
    TaskMetrics,
    fast_mc,
    generate_doc,
    loglikelihood_doc,
    mc_doc,
    rolling_doc,
    score_generate_fast,
    score_mc_fast,
)
from lmeval.scorer.planload import TaskDocs
from lmeval.scorer.reasoning import generation_responses
from lmeval.scorer.usercode import Trust


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
            fast = score_generate_fast(ts, tm, docs, rows, fo, pipe.name, multiple_target, gen_cache)
            fs = fast if fast is not None else _score_python(ts, tm, td, docs, rows, fo, pipe.name, multiple_target)
            fs.reasoning = split
            out.append(fs)
        elif ot in OUTPUT_TYPES:  # the log-likelihood ones
            simple = [s.get("function") for s in pipe.steps] == ["take_first"]
            if ot == "multiple_choice" and simple and tm.process_results is None and fast_mc(tm.names()):
                out.append(score_mc_fast(tm, td, docs, rows, pipe.name, multiple_target))
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
    values = {k: as_series_or_list([dct.get(k, MISSING) for dct in dicts]) for k in keys}
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
            return mc_doc(tm, d.target, d.choices, results, multiple_target)
        if ot == "loglikelihood":
            return loglikelihood_doc(tm, results)
        if ot == "loglikelihood_rolling":
            return rolling_doc(tm, d.target, results)
        return generate_doc(tm, d.doc, d.target, d.choices, results[0], multiple_target)
    except ScoreError as e:
        if str(e).startswith("task "):
            raise
        raise ScoreError(f"{where}: {e}") from None
    except (TypeError, ValueError, IndexError, KeyError, AttributeError) as e:
        raise ScoreError(f"{where}: cannot score ({type(e).__name__}: {e})") from None


doc_values = _doc_metrics  # one document's metric values for ``results`` (scorer/samplescore.py scores each repeat)


def describe_missing(task: str, missing: pl.DataFrame, limit: int = 5) -> str:
    first = missing.sort(["doc_id", "idx"]).head(limit)
    ids = ", ".join(
        f"doc {d} idx {i} ({instance_id_for(task, d, i)})" for d, i in first.select("doc_id", "idx").iter_rows()
    )
    return f"{task}: {missing.height} instances missing (first: {ids})"
