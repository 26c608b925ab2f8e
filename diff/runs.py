"""Comparing two scored runs (``compare``, ``lmeval compare``): per-task metric deltas, with significance
from paired per-document differences, and the documents whose correctness flipped.

Significance: for each (task, filter, metric) with per-document numbers in both runs, the documents both
runs scored are paired; d_i = b_i - a_i; the standard error is sd(d) / sqrt(n) (sample sd); z = mean(d) / se
and the two-sided p-value uses the normal approximation (p = erfc(|z| / sqrt(2))). With identical
per-document values (sd = 0) p is 1 when the mean difference is 0. A document whose value is NaN or infinite
on either side (or whose difference overflows) is left out of the pairs; a non-finite aggregate delta is no
delta (never "significant"). Metrics without per-document numbers
(bleu, perplexity, f1, ...) get the delta of the aggregate and no p-value.

Groups (mmlu, mmlu_stem, ...): a group's delta is a weighted mean of its subtasks' deltas, and the subtasks'
documents are disjoint, so its standard error is sqrt(sum of w_t^2 se_t^2) over the subtasks' paired
standard errors. The weights are the group's own: by size (paired documents) or equal, whichever reproduces
the group's delta to 1e-9; when neither does (different documents on the two sides, another aggregation),
the group gets its delta and no p-value.

Beside that normal test (kept as it was), every paired metric gets the scorer's power statistics: McNemar's exact test
for binary metrics and a paired bootstrap otherwise, a 95% interval of the difference, and the minimum
detectable effect at 80% power for that many documents (groups: the normal interval and MDE of their se).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from lmeval.plans import ScoredRun, read_scored, reraised_as
from lmeval.scorer import Z_ALPHA, ScoreError, mde, paired_test

_KEYS = ("task", "filter", "doc_id")


@dataclass
class MetricDelta:
    task: str
    filter: str
    metric: str
    a: Any
    b: Any
    delta: float | None
    n_paired: int = 0
    se: float | None = None
    z: float | None = None
    p: float | None = None
    # scorer.statistics.power: the test for this metric ("mcnemar", "bootstrap"; "normal" for groups), its p-value, the
    # 95% interval of the difference, the minimum detectable effect at 80% power, McNemar's flip counts
    test: str | None = None
    p_test: float | None = None
    low: float | None = None
    high: float | None = None
    mde: float | None = None
    n01: int | None = None
    n10: int | None = None


@dataclass
class Flip:
    task: str
    filter: str
    metric: str
    doc_id: int
    a: float
    b: float
    # run.reasoning (plans/vocab/reasoning.py): each side's answer part and reasoning length, where it has them
    a_answer: str | None = None
    b_answer: str | None = None
    a_reasoning_chars: int | None = None
    b_reasoning_chars: int | None = None
    a_reasoning_tokens: int | None = None  # the executor's count (plans/results/manifest.py); None where it has none
    b_reasoning_tokens: int | None = None


@dataclass
class Comparison:
    a: str
    b: str
    deltas: list[MetricDelta] = field(default_factory=list)
    flips: list[Flip] = field(default_factory=list)
    plan_hash_a: str = ""
    plan_hash_b: str = ""


def _load(d: str) -> tuple[ScoredRun, pl.DataFrame]:
    with reraised_as(ScoreError):
        scored = read_scored(d)
    return scored.results, scored.samples


def compare(a: str, b: str) -> Comparison:
    ra, sa = _load(a)
    rb, sb = _load(b)
    out = Comparison(a, b, plan_hash_a=ra.plan_hash, plan_hash_b=rb.plan_hash)
    for t in [t for t in ra.results if t in rb.results]:
        ma, mb = ra.results[t], rb.results[t]
        for key in sorted(ma):
            if "," not in key or "_stderr," in key or key not in mb:
                continue
            metric, _, filt = key.partition(",")
            va, vb = ma[key], mb[key]
            delta = vb - va if isinstance(va, (int, float)) and isinstance(vb, (int, float)) else None
            delta = delta if delta is None or math.isfinite(delta) else None
            md = MetricDelta(t, filt, metric, va, vb, delta)
            _paired(md, sa, sb, out.flips)
            out.deltas.append(md)
    _group_paired(out, ra.group_subtasks)
    return out


def _group_paired(c: Comparison, subtasks: dict[str, list[str]]) -> None:
    by = {(d.task, d.filter, d.metric): d for d in c.deltas}

    def resolve(name: str, filt: str, metric: str, seen: frozenset[str]) -> MetricDelta | None:
        d = by.get((name, filt, metric))
        if d is None or d.se is not None or d.delta is None or name not in subtasks or name in seen:
            return d
        parts = [resolve(t, filt, metric, seen | {name}) for t in subtasks[name]]
        known = [p for p in parts if p is not None and p.se is not None and p.delta is not None and p.n_paired]
        if not parts or len(known) != len(parts):
            return d
        n = sum(p.n_paired for p in known)
        deltas = [float(p.delta or 0.0) for p in known]
        ses = [float(p.se or 0.0) for p in known]
        for weights in ([p.n_paired / n for p in known], [1 / len(known)] * len(known)):
            if abs(sum(w * x for w, x in zip(weights, deltas, strict=True)) - d.delta) <= 1e-9:
                se = math.sqrt(sum((w * x) ** 2 for w, x in zip(weights, ses, strict=True)))
                d.n_paired, d.se = n, se
                if se == 0:
                    d.z, d.p = None, (1.0 if d.delta == 0 else 0.0)
                else:
                    d.z = d.delta / se
                    d.p = math.erfc(abs(d.z) / math.sqrt(2))
                d.test, d.p_test = "normal", d.p
                d.low, d.high = d.delta - Z_ALPHA * se, d.delta + Z_ALPHA * se
                d.mde = mde(se) if se > 0 else None
                break
        return d

    for d in c.deltas:
        if d.task in subtasks:
            resolve(d.task, d.filter, d.metric, frozenset())


def _numeric_cols(df: pl.DataFrame) -> set[str]:
    return {c for c, dt in df.schema.items() if dt == pl.Float64}


def _paired(md: MetricDelta, sa: pl.DataFrame, sb: pl.DataFrame, flips: list[Flip]) -> None:
    col = md.metric
    if col not in _numeric_cols(sa) or col not in _numeric_cols(sb):
        return
    fa = sa.filter((pl.col("task") == md.task) & (pl.col("filter") == md.filter)).select(*_KEYS, pl.col(col).alias("a"))
    fb = sb.filter((pl.col("task") == md.task) & (pl.col("filter") == md.filter)).select(*_KEYS, pl.col(col).alias("b"))
    j = fa.join(fb, on=list(_KEYS), how="inner").drop_nulls(["a", "b"]).sort("doc_id")
    # a NaN or infinite value (or a difference that overflows) is no evidence: such documents are left out
    j = j.filter((pl.col("b") - pl.col("a")).is_finite())
    n = j.height
    md.n_paired = n
    if n < 2:
        return
    d = (j["b"] - j["a"]).to_list()
    mean = sum(d) / n
    var = sum((x - mean) ** 2 for x in d) / (n - 1)
    se = math.sqrt(var / n)
    if not (math.isfinite(mean) and math.isfinite(se)):  # overflowed sums of huge finite values: no test
        return
    md.se = se
    if se == 0:
        md.z = None
        md.p = 1.0 if mean == 0 else 0.0
    else:
        md.z = mean / se
        md.p = math.erfc(abs(md.z) / math.sqrt(2))
    pt = paired_test(j["a"].to_list(), j["b"].to_list())
    if pt is not None:
        md.test, md.p_test, md.low, md.high, md.mde = pt.test, pt.p, pt.low, pt.high, pt.mde
        md.n01, md.n10 = pt.n01, pt.n10
    binary = j.filter(~pl.col("a").is_in([0.0, 1.0]) | ~pl.col("b").is_in([0.0, 1.0])).height == 0
    if binary:
        flipped = j.filter(pl.col("a") != pl.col("b")).select("doc_id", "a", "b")
        parts = {"a": _reasoning_parts(sa, md), "b": _reasoning_parts(sb, md)}
        for doc_id, x, y in flipped.iter_rows():
            (aa, ac, at), (ba, bc, bt) = (parts[k].get(doc_id, (None, None, None)) for k in ("a", "b"))
            flips.append(Flip(md.task, md.filter, md.metric, doc_id, x, y, aa, ba, ac, bc, at, bt))


def _reasoning_parts(s: pl.DataFrame, md: MetricDelta) -> dict[int, tuple[str | None, int | None, int | None]]:
    """doc_id -> (answer, reasoning chars, reasoning tokens) of a run scored with ``run.reasoning`` (empty
    without; tokens None in files without them)."""
    if "answer" not in s.columns or "reasoning_chars" not in s.columns:
        return {}
    f = s.filter((pl.col("task") == md.task) & (pl.col("filter") == md.filter))
    if "reasoning_tokens" not in f.columns:
        f = f.with_columns(reasoning_tokens=pl.lit(None, dtype=pl.Int64))
    cols = f.select("doc_id", "answer", "reasoning_chars", "reasoning_tokens")
    return {d: (a, c, t) for d, a, c, t in cols.iter_rows()}


def print_comparison(c: Comparison, max_flips: int = 20) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False)
    if not console.is_terminal:
        console = Console(highlight=False, width=200)  # piped: never truncate names
    if c.plan_hash_a and c.plan_hash_b and c.plan_hash_a != c.plan_hash_b:
        console.print(
            f"note: different plans ({c.plan_hash_a[:12]} vs {c.plan_hash_b[:12]}); "
            f"documents are paired by task and doc_id"
        )
    t = Table(title=f"A = {c.a}   B = {c.b}", header_style="bold")
    heads = ("Task", "Filter", "Metric", "A", "B", "Δ (B-A)", "95% CI", "± SE", "n", "p (paired, normal)", "p (test)",
             "MDE 80%")  # fmt: skip
    for h in heads:
        t.add_column(h, justify="right" if h not in ("Task", "Filter", "Metric") else "left", no_wrap=True)

    def f(x: Any) -> str:
        return f"{x:.4f}" if isinstance(x, float) else ("" if x is None else str(x))

    for d in c.deltas:
        p = "" if d.p is None else (f"{d.p:.3g}" + (" *" if d.p < 0.05 else ""))
        ci = "" if d.low is None or d.high is None else f"[{d.low:+.4f}, {d.high:+.4f}]"
        pt = "" if d.p_test is None else f"{d.p_test:.3g} {_TEST_NAME.get(d.test or '', d.test)}"
        pt += " *" if d.p_test is not None and d.p_test < 0.05 else ""
        t.add_row(
            d.task,
            d.filter,
            d.metric,
            f(d.a),
            f(d.b),
            f(d.delta) if d.delta is not None else "",
            ci,
            f(d.se),
            str(d.n_paired or ""),
            p,
            pt,
            f(d.mde),
        )
    console.print(t)
    console.print(
        "p (test): McNemar's exact test on the flips (binary metrics), a paired bootstrap (others), normal "
        "(groups); MDE 80%: the smallest true Δ this many documents detect with 80% power (two-sided 5%)"
    )
    if not c.flips:
        console.print("no per-document flips")
        return
    by: dict[tuple[str, str, str], list[Flip]] = {}
    for fl in c.flips:
        by.setdefault((fl.task, fl.filter, fl.metric), []).append(fl)
    for (task, filt, metric), fls in by.items():
        up = sum(1 for x in fls if x.b > x.a)
        down = len(fls) - up
        ids = ", ".join(f"{x.doc_id}{'+' if x.b > x.a else '-'}" for x in fls[:max_flips])
        more = f" … {len(fls) - max_flips} more" if len(fls) > max_flips else ""
        console.print(
            f"flipped {task} {metric},{filt}: {len(fls)} docs ({up} now right, {down} now wrong): {ids}{more}"
        )
        for x in [x for x in fls if x.a_answer is not None or x.b_answer is not None][:3]:
            pad = " " * len(str(x.doc_id))
            a_line = _split_line(x.a_answer, x.a_reasoning_chars, x.a_reasoning_tokens)
            b_line = _split_line(x.b_answer, x.b_reasoning_chars, x.b_reasoning_tokens)
            console.print(f"  doc {x.doc_id}: A {a_line}", markup=False)
            console.print(f"  {pad}    B {b_line}", markup=False)


_TEST_NAME = {"mcnemar": "McNemar", "bootstrap": "bootstrap", "normal": "normal"}


def _split_line(answer: str | None, chars: int | None, tokens: int | None = None) -> str:
    """One side of a flipped document of a reasoning model: its reasoning length (chars, and tokens where the
    results have them) and its answer, shortened."""
    if answer is None:
        return "(whole response scored: no run.reasoning)"
    a = " ".join(answer.split())
    a = a if len(a) <= 80 else a[:79] + "…"
    length = "none" if chars is None else f"{chars} chars" + ("" if tokens is None else f", {tokens} tokens")
    return f"reasoning {length}; answer {a!r}"
