"""``sample_scores`` (plans/vocab/samplescores.py): every repeat of a generation task scored, and reduced per document.

For each of the task's filters, every response of a document's first Instance goes through the filter's steps
before its reducer (``take_first``, ``majority_vote``, ``take_first_k``: what turns N answers into one), is
scored by the task's metrics as lm-eval scores a single answer, and the N scores are reduced per document:
``mean`` (avg@N), ``majority`` (the score of the most common filtered answer, ties to the first seen: lm-eval's
``majority_vote``, maj@N) and ``pass@K`` (the unbiased estimator of ``scorer.metrics.pass_at_k``; the metric must be
0/1).
The reductions join the filter's per-document values (aggregated by mean, with its stderr); every repeat's
answer and scores form repeats.parquet's rows (plans/scored/repeats.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from lmeval.plans import MAJORITY, MEAN, DocRecord, TaskSummary, parse_sample_scores, pass_k, reduced_key
from lmeval.plans import SAMPLE_SCORES_KEY as KEY
from lmeval.scorer.errors import ScoreError
from lmeval.scorer.filters import Pipeline, apply_pipeline
from lmeval.scorer.filterscores import FilterScores, items_json
from lmeval.scorer.metrics import TaskMetrics, estimate_pass_at_k
from lmeval.scorer.planload import TaskDocs
from lmeval.scorer.taskscore import doc_values
from lmeval.scorer.usercode import Trust

REDUCERS = ("take_first", "majority_vote", "take_first_k")


@dataclass
class RepeatScores:
    """A task's reductions per filter (metric key -> per-document Float64, documents in ``doc_ids`` order)
    and every repeat's row (repeats.parquet)."""

    doc_ids: list[int]
    values: dict[str, dict[str, pl.Series]] = field(default_factory=dict)  # filter -> key -> values
    frame: pl.DataFrame | None = None
    base: dict[str, str] = field(default_factory=dict)  # reduced key -> its metric


def task_reductions(ts: TaskSummary) -> list[str] | None:
    """The plan's ``sample_scores`` of the task (None: none asked)."""
    try:
        return parse_sample_scores(ts.config.get(KEY), KEY)
    except ValueError as e:
        raise ScoreError(f"task {ts.name}: {e}") from None


def per_sample_steps(pipe: Pipeline, task: str) -> Pipeline:
    """The filter's steps before its reducers (``majority_vote`` then ``take_first``, as lm-eval's
    self-consistency tasks, is one reduction): each response's own answer."""
    steps = pipe.steps
    cut = next((i for i, s in enumerate(steps) if s.get("function") in REDUCERS), len(steps))
    if any(s.get("function") not in REDUCERS for s in steps[cut:]):
        raise ScoreError(f"task {task}: filter {pipe.name!r}: sample_scores needs the reducer "
                         f"({steps[cut].get('function')}) to come after every other step")  # fmt: skip
    return Pipeline(pipe.name, steps[:cut])


def score_repeats(
    ts: TaskSummary, td: TaskDocs, rows: pl.DataFrame, tm: TaskMetrics, pipelines: list[Pipeline],
    trust: Trust | None, resps: pl.Series, reductions: list[str], multiple_target: bool,
) -> RepeatScores:  # fmt: skip
    """``rows``: the task's complete documents' rows sorted by (doc_id, idx); ``resps``: their responses as the
    filters see them (``scorer.reasoning.generation_responses``)."""
    first = (rows["idx"] == 0).to_list()
    doc_ids = [d for d, f in zip(rows["doc_id"].to_list(), first, strict=True) if f]
    lists = [r for r, f in zip(resps.to_list(), first, strict=True) if f]
    out = RepeatScores(doc_ids)
    if not doc_ids:
        return out
    recs = {r.doc_id: r for r in td.records(doc_ids)}
    frames: list[pl.DataFrame] = []
    for pipe in pipelines:
        answers = _answers(per_sample_steps(pipe, ts.name), lists, [recs[d] for d in doc_ids], ts.name, trust)
        scored = [
            [doc_values(ts, tm, recs[d], [a], multiple_target) for a in per_doc]
            for d, per_doc in zip(doc_ids, answers, strict=True)
        ]
        metrics = _numeric_keys(scored)
        out.values[pipe.name] = {}
        for m in metrics:
            for red in reductions:
                key = reduced_key(m, red, ts.config.get("repeats", 1))
                out.base[key] = m
                vals = [_reduce(red, [s[m] for s in sc], ans, ts.name, d, m) for d, sc, ans in
                        zip(doc_ids, scored, answers, strict=True)]  # fmt: skip
                out.values[pipe.name][key] = pl.Series(key, vals, dtype=pl.Float64)
        frames.append(_rows(ts.name, pipe.name, doc_ids, answers, scored, metrics))
    out.frame = pl.concat(frames, how="diagonal_relaxed")
    return out


def _answers(
    pipe: Pipeline, lists: list[list[str]], recs: list[DocRecord], task: str, trust: Trust | None
) -> list[list[Any]]:
    """Each document's responses through ``pipe`` (no reducer: still one answer per response)."""
    fo = apply_pipeline(pipe, pl.Series(lists, dtype=pl.List(pl.String)), lambda: [r.doc for r in recs], task, trust)
    got = fo.to_py()
    out: list[list[Any]] = []
    for d, (before, after) in enumerate(zip(lists, got, strict=True)):
        if not isinstance(after, list) or len(after) != len(before):
            raise ScoreError(f"task {task} doc {recs[d].doc_id}: filter {pipe.name!r}: sample_scores needs one "
                             f"answer per response before the reducer")  # fmt: skip
        out.append(after)
    return out


def _numeric_keys(scored: list[list[dict[str, Any]]]) -> list[str]:
    """The metric keys every repeat scored with a number (corpus metrics' items are not reduced)."""
    keys: list[str] = []
    for per_doc in scored:
        for s in per_doc:
            for k in s:
                if k not in keys:
                    keys.append(k)
    return [k for k in keys if all(_number(s.get(k)) for per_doc in scored for s in per_doc)]


def _number(v: Any) -> bool:
    return type(v) in (int, float, bool) or (hasattr(v, "item") and type(getattr(v, "item", lambda: None)()) in
                                             (int, float, bool))  # fmt: skip


def _reduce(red: str, vals: list[Any], answers: list[Any], task: str, doc_id: int, metric: str) -> float:
    xs = [float(v) for v in vals]
    if red == MEAN:
        return sum(xs) / len(xs)
    if red == MAJORITY:
        return xs[majority_index(answers)]
    k = pass_k(red)
    assert k is not None
    if any(x not in (0.0, 1.0) for x in xs):
        raise ScoreError(f"task {task} doc {doc_id}: {red} needs {metric} to be 0 or 1 per repeat, got {xs}")
    if k > len(xs):
        raise ScoreError(f"task {task} doc {doc_id}: {red} needs {k} repeats, the document has {len(xs)}")
    return estimate_pass_at_k(len(xs), int(sum(xs)), k)


def majority_index(answers: list[Any]) -> int:
    """The position of the first answer of the most common value (``Counter.most_common(1)``: ties go to
    the value seen first), as lm-eval's ``majority_vote``."""
    key: Callable[[Any], Any] = lambda a: a if isinstance(a, str) else items_json(a)  # noqa: E731
    counts: dict[Any, int] = {}
    first: dict[Any, int] = {}
    for i, a in enumerate(answers):
        k = key(a)
        counts[k] = counts.get(k, 0) + 1
        first.setdefault(k, i)
    best = max(counts, key=lambda k: (counts[k], -first[k]))
    return first[best]


def _rows(
    task: str, filt: str, doc_ids: list[int], answers: list[list[Any]], scored: list[list[dict[str, Any]]],
    metrics: list[str],
) -> pl.DataFrame:  # fmt: skip
    d, r, a = [], [], []
    cols: dict[str, list[float]] = {m: [] for m in metrics}
    for doc_id, ans, sc in zip(doc_ids, answers, scored, strict=True):
        for j, (x, s) in enumerate(zip(ans, sc, strict=True)):
            d.append(doc_id)
            r.append(j)
            a.append(x if isinstance(x, str) or x is None else json.dumps(x, ensure_ascii=False, default=str))
            for m in metrics:
                cols[m].append(float(s[m]))
    n = len(d)
    return pl.DataFrame(
        {
            "task": pl.Series([task] * n, dtype=pl.String),
            "doc_id": pl.Series(d, dtype=pl.Int64),
            "filter": pl.Series([filt] * n, dtype=pl.String),
            "repeat": pl.Series(r, dtype=pl.Int64),
            "filtered": pl.Series(a, dtype=pl.String),
            **{m: pl.Series(m, v, dtype=pl.Float64) for m, v in cols.items()},
        }
    )


def with_repeats(
    ts: TaskSummary, td: TaskDocs, rows: pl.DataFrame, tm: TaskMetrics, pipelines: list[Pipeline],
    trust: Trust | None, reasoning: Any, every: list[FilterScores],
) -> pl.DataFrame | None:  # fmt: skip
    """With the task's ``sample_scores``: each filter's reductions added to ``every``'s per-document values
    (aggregated by mean; ``higher_is_better`` that of their metric, in ``tm``) and every repeat's rows
    returned (None without ``sample_scores``)."""
    reductions = task_reductions(ts)
    if reductions is None or ts.output_type != "generate_until" or rows.height == 0:
        return None
    from lmeval.scorer.reasoning import generation_responses

    resps, _ = generation_responses(rows, rows["doc_id"].unique().sort(), reasoning)
    rs = score_repeats(ts, td, rows, tm, pipelines, trust, resps, reductions, isinstance(td.first_target(), list))
    ids = pl.Series("doc_id", rs.doc_ids, dtype=pl.Int64)
    for fs in every:
        for key, vals in rs.values.get(fs.filter, {}).items():
            if not fs.doc_ids.equals(ids):
                raise ScoreError(f"task {ts.name}: filter {fs.filter!r}: sample_scores scored other documents")
            fs.values[key] = vals
            tm.aggregation[key] = "mean"
            tm.higher_is_better[key] = tm.higher_is_better.get(rs.base[key], True)
    return rs.frame
