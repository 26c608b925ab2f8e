"""One document in every prompt format (issue #38): for a task compiled in several formats (``X@cf``,
``X@mcf``, ``X@gen`` and ``X`` as written; names split by ``split_name``), the smallest doc id they all hold,
each format's requests as the plan renders them and, when the run has results, what the model answered and
which choice won under the format's comparison metric (``config["format"]["metric"]``).

Data in, data out: the records below are what the Formats section (``report/formatsection.py``) renders.
The winning choice follows the scorer's rule for each metric (its ``Metric.compared`` in the scorer's registry:
``np.argmax`` of the log-likelihoods, per character for ``acc_norm``, per byte for ``acc_bytes``, per
continuation token for ``acc_per_token``, minus the unconditional block for ``acc_pmi``/``acc_mutual_info``);
whether the document counted as right is the scorer's own per-document value from samples.parquet.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import polars as pl

from lmeval.plans import PROMPT_FORMATS, split_name, unconditional_metrics
from lmeval.report.inputs import DocView, PlanView, Run
from lmeval.scorer import METRICS

CHOICE, UNCONDITIONAL, GENERATION, OTHER = "choice", "unconditional", "generation", "other"
_ORDER = (None, *PROMPT_FORMATS)  # the task as written first, then cf, mcf, gen


@dataclass(frozen=True)
class FormatRequest:
    """One request of the document, as the plan has it, with the model's answer when there are results."""

    idx: int
    kind: str  # CHOICE | UNCONDITIONAL (a block of acc_pmi's "Answer:" requests) | GENERATION | OTHER
    context: str
    continuation: str | None = None
    choice: int | None = None  # the choice this request scores (CHOICE and UNCONDITIONAL)
    block: str | None = None  # UNCONDITIONAL: the metric the block is for (acc_pmi)
    until: list[str] | None = None  # GENERATION: the stop sequences
    loglikelihood: float | None = None
    is_greedy: bool | None = None
    n_tokens: int | None = None  # the continuation's tokens scored (the result row's n_continuation_tokens)
    response: str | None = None  # GENERATION: the generated text
    compared: float | None = None  # CHOICE: the value the comparison metric takes the argmax of


@dataclass(frozen=True)
class Outcome:
    """What the model chose under the format's comparison metric, and whether it was the gold."""

    predicted: int | None  # the winning choice (None: no argmax, e.g. nothing extracted)
    answer: str | None  # GENERATION: the filtered (extracted) answer
    score: float | None  # the scorer's per-document value of the metric (samples.parquet)


@dataclass(frozen=True)
class FormatBlock:
    task: str  # arc_easy@mcf
    fmt: str | None  # mcf; None for the task as written
    output_type: str
    metric: str  # "acc_norm,none": format.metric, or the task's first metric and filter
    choices: list[str] | None
    gold: int | None  # the gold choice's index
    requests: list[FormatRequest]
    outcome: Outcome | None  # None: the plan only, or no result rows for this document

    @property
    def correct(self) -> bool | None:
        if self.outcome is None:
            return None
        if self.outcome.score is not None and math.isfinite(self.outcome.score):
            return self.outcome.score > 0
        if self.outcome.predicted is None or self.gold is None:
            return None
        return self.outcome.predicted == self.gold


@dataclass(frozen=True)
class FormatView:
    base: str  # arc_easy
    doc_id: int
    source: str  # the run label, or the plan's path
    blocks: list[FormatBlock]


def format_families(names: Iterable[str]) -> dict[str, list[str]]:
    """Base task -> its names in 2+ formats, the task as written first, then ``PROMPT_FORMATS`` order."""
    fams: dict[str, list[str]] = {}
    for n in names:
        base, fmt = split_name(n)
        if fmt in _ORDER:
            fams.setdefault(base, []).append(n)
    return {
        b: sorted(ns, key=lambda n: _ORDER.index(split_name(n)[1])) for b, ns in sorted(fams.items()) if len(ns) > 1
    }


def common_doc(plan: PlanView, tasks: list[str]) -> int | None:
    """The smallest doc id every task of ``tasks`` holds in the plan."""
    ids = set.intersection(*(set(plan.tasks.get(t, {})) for t in tasks))
    return min(ids) if ids else None


def comparison_metric(config: dict[str, Any]) -> str:
    """``format.metric`` ("acc_norm,none"); a task without a format record: its first metric, first filter."""
    fmt = config.get("format")
    if isinstance(fmt, dict) and isinstance(fmt.get("metric"), str):
        return str(fmt["metric"])
    metrics = [m.get("metric") for m in config.get("metric_list") or [] if isinstance(m, dict)]
    filters = [f.get("name") for f in config.get("filter_list") or [] if isinstance(f, dict)]
    return f"{metrics[0] if metrics else 'acc'},{filters[0] if filters else 'none'}"


def format_views(
    plan: PlanView, source: str, rows: pl.DataFrame | None = None, samples: pl.DataFrame | None = None
) -> list[FormatView]:
    """Every task of ``plan`` in 2+ formats: one document in each format (``rows``/``samples``: the run's)."""
    views = []
    for base, tasks in format_families(plan.tasks).items():
        doc_id = common_doc(plan, tasks)
        if doc_id is not None:
            blocks = [_block(plan, t, doc_id, rows, samples) for t in tasks]
            views.append(FormatView(base, doc_id, source, blocks))
    return views


def run_format_views(runs: list[Run]) -> list[FormatView]:
    """The report's: each task family from the first run whose plan holds it, with that run's results."""
    seen: set[str] = set()
    out: list[FormatView] = []
    for r in runs:
        if r.plan is None:
            continue
        for v in format_views(r.plan, r.label, r.rows, r.samples):
            if v.base not in seen:
                seen.add(v.base)
                out.append(v)
    return sorted(out, key=lambda v: v.base)


def _config(plan: PlanView, task: str) -> dict[str, Any]:
    ts = next((t for t in plan.header.tasks if t.name == task), None)
    return ts.config if ts is not None and isinstance(ts.config, dict) else {}


def _gold(doc: DocView) -> int | None:
    t, ch = doc.target, doc.choices or []
    if isinstance(t, bool):
        return None
    if isinstance(t, int):
        return t if 0 <= t < len(ch) else None
    if isinstance(t, str):
        if t in ch:
            return ch.index(t)
        if t.strip().isdigit() and int(t) < len(ch):
            return int(t)
    return None


def _block(
    plan: PlanView, task: str, doc_id: int, rows: pl.DataFrame | None, samples: pl.DataFrame | None
) -> FormatBlock:
    cfg = _config(plan, task)
    doc = plan.tasks[task][doc_id]
    metric = comparison_metric(cfg)
    ts = next(t for t in plan.header.tasks if t.name == task)
    names = [str(m.get("metric")) for m in cfg.get("metric_list") or [] if isinstance(m, dict)]
    got = _rows_of(rows, task, doc_id)
    reqs = _requests(doc, unconditional_metrics(names), got)
    outcome = None
    if got:
        name, _, filt = metric.partition(",")
        sample = _sample(samples, task, doc_id, filt or "none")
        score = _num(sample.get(name)) if sample else None
        if ts.output_type == "generate_until":
            answer = sample.get("filtered") if sample else None
            ch = doc.choices or []
            predicted = ch.index(answer) if isinstance(answer, str) and answer in ch else None
            outcome = Outcome(predicted, answer if isinstance(answer, str) else None, score)
        else:
            reqs = _compared(reqs, name, doc.choices or [])
            outcome = Outcome(_argmax(reqs), None, score)
    fmt = split_name(task)[1]
    return FormatBlock(task, fmt, ts.output_type, metric, doc.choices, _gold(doc), reqs, outcome)


def _rows_of(rows: pl.DataFrame | None, task: str, doc_id: int) -> dict[int, dict[str, Any]]:
    if rows is None or rows.is_empty():
        return {}
    sub = rows.filter((pl.col("task") == task) & (pl.col("doc_id") == doc_id))
    return {int(r["idx"]): r for r in sub.iter_rows(named=True)}


def _sample(samples: pl.DataFrame | None, task: str, doc_id: int, filt: str) -> dict[str, Any] | None:
    if samples is None or samples.is_empty():
        return None
    sub = samples.filter((pl.col("task") == task) & (pl.col("doc_id") == doc_id) & (pl.col("filter") == filt))
    return sub.row(0, named=True) if sub.height else None


def _num(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def _requests(doc: DocView, blocks: list[str], got: dict[int, dict[str, Any]]) -> list[FormatRequest]:
    """The document's requests labelled: the choices, then each unconditional block (plans/vocab/scoring.py)."""
    insts = sorted(doc.instances, key=lambda i: i.idx)
    k = len(doc.choices or [])
    ll_only = insts and all(i.request_type == "loglikelihood" for i in insts)
    laid_out = bool(ll_only and k and len(insts) == k * (1 + len(blocks)))
    out = []
    for pos, inst in enumerate(insts):
        row = got.get(inst.idx, {})
        common: dict[str, Any] = {"idx": inst.idx, "context": inst.context, "continuation": inst.continuation}
        if row:
            common.update(
                loglikelihood=_num(row.get("loglikelihood")),
                is_greedy=row.get("is_greedy"),
                n_tokens=row.get("n_continuation_tokens"),
            )
        if inst.request_type == "generate_until":
            out.append(FormatRequest(kind=GENERATION, until=inst.until, response=row.get("response"), **common))
        elif laid_out and pos >= k:
            out.append(FormatRequest(kind=UNCONDITIONAL, choice=pos % k, block=blocks[pos // k - 1], **common))
        elif inst.request_type == "loglikelihood" and (laid_out or pos < k):
            out.append(FormatRequest(kind=CHOICE, choice=pos, **common))
        else:
            out.append(FormatRequest(kind=OTHER, **common))
    return out


def _compared(reqs: list[FormatRequest], metric: str, choices: list[str]) -> list[FormatRequest]:
    """The CHOICE requests with the value ``metric`` compares (None where the metric is not an argmax rule)."""
    uncond = {(r.block, r.choice): r.loglikelihood for r in reqs if r.kind == UNCONDITIONAL}
    out = []
    for r in reqs:
        v = None
        if r.kind == CHOICE and r.loglikelihood is not None and r.choice is not None and r.choice < len(choices):
            v = _value(metric, r.loglikelihood, choices[r.choice], uncond.get((metric, r.choice)), r)
        out.append(r if v is None else replace(r, compared=v))
    return out


def _value(metric: str, ll: float, choice: str, uncond: float | None, r: FormatRequest) -> float | None:
    m = METRICS.get(metric)  # the scorer's registry: each argmax metric's value per choice
    return None if m is None or m.compared is None else m.compared(ll, choice, uncond, r.n_tokens)


def _argmax(reqs: list[FormatRequest]) -> int | None:
    """The winning choice: ``np.argmax`` of the compared values, as the scorer (the first of equal ones)."""
    cs = [r for r in reqs if r.kind == CHOICE]
    if not cs or any(r.compared is None for r in cs):
        return None
    return cs[int(np.argmax(np.array([r.compared for r in cs], dtype=np.float64)))].choice
