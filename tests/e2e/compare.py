"""Compare an ``lmeval run`` results directory with lm-eval's output for the same tasks (``lmeval_ref``).

Three levels, from what users publish down to what explains a difference:

- aggregates: every ``metric,filter`` value and stderr in lm-eval's results next to ours;
- per document: each doc's metric values (acc, acc_norm, exact_match per filter) and filtered responses;
- per request: the prompts (our plan's Instance arguments vs lm-eval's logged ``arguments``), log-likelihoods
  (largest absolute and relative difference) and raw generations.

A multiple-choice doc whose acc/acc_norm differs is a "flip"; it is reported with the log-likelihood gap
between the two choices involved on both sides, so a near-tie (a gap within float noise) is told apart from a
real error, and carries the largest gap the stated per-request bound allows there (``tests/bounds.py``:
``tie_gap``). ``derived_tolerance`` gives each of lm-eval's metrics the tolerance its formula carries from that
bound (``SCORES`` for a score of equal per-document values).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from tests.bounds import (
    SCORES,
    VS_LM_EVAL,
    Tolerance,
    bits_per_byte_tolerance,
    bootstrap_stderr_tolerance,
    perplexity_tolerance,
    tie_gap,
)

SKIP_KEYS = ("alias", "name", "sample_len", " ")


@dataclass
class AggRow:
    task: str
    key: str  # lm-eval's "metric,filter" (or "metric_stderr,filter")
    ours: float | None
    ref: float | None

    @property
    def diff(self) -> float:
        if self.ours is None or self.ref is None:
            return math.inf
        return abs(self.ours - self.ref)


@dataclass
class Flip:
    task: str
    doc_id: int
    metric: str
    ours_pred: int
    ref_pred: int
    ours_gap: float  # ours: score(ours_pred) - score(ref_pred)  (>= 0)
    ref_gap: float  # lm-eval: score(ref_pred) - score(ours_pred)  (>= 0)
    bound: float  # the largest gap the per-request bound (VS_LM_EVAL) lets the two sides order differently

    @property
    def tie(self) -> bool:
        return self.ours_gap <= self.bound and self.ref_gap <= self.bound


@dataclass
class TaskReport:
    task: str
    n_docs: int
    prompt_mismatches: list[str] = field(default_factory=list)
    max_abs_ll_diff: float = 0.0
    max_rel_ll_diff: float = 0.0
    ll_pairs: list[tuple[float, float]] = field(default_factory=list)  # (ours, lm-eval) per request
    flips: list[Flip] = field(default_factory=list)
    doc_metric_mismatches: list[str] = field(default_factory=list)  # non-MC per-doc metric differences
    generation_mismatches: list[str] = field(default_factory=list)
    filtered_mismatches: list[str] = field(default_factory=list)
    # docs where lm-eval's HF generation ran past a special stop token (see ``batch_quirk``): their raw text,
    # filtered responses and metrics are listed here instead of counting as mismatches
    quirk_docs: list[str] = field(default_factory=list)
    # generations equal to lm-eval's once the special tokens our text keeps are removed (lm-eval decodes
    # with skip_special_tokens=True); still a difference
    special_token_docs: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (
            self.prompt_mismatches
            or self.doc_metric_mismatches
            or self.generation_mismatches
            or self.filtered_mismatches
            or self.special_token_docs
        )


@dataclass
class Comparison:
    rows: list[AggRow]
    tasks: dict[str, TaskReport]
    n_shot_ours: dict[str, int]
    n_shot_ref: dict[str, int]


def _num(x: Any) -> float | None:
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return float(x)
    return None  # lm-eval writes "N/A" for a missing stderr


def aggregate_rows(ours: dict[str, Any], ref: dict[str, Any]) -> list[AggRow]:
    rows = []
    for task in sorted(ref):
        for key in sorted(ref[task]):
            if key in SKIP_KEYS:
                continue
            rows.append(AggRow(task, key, _num(ours.get(task, {}).get(key)), _num(ref[task][key])))
    return rows


def _our_instances(results_dir: Path, task: str) -> pl.DataFrame:
    from lmeval.plans.results import read_results

    return read_results(results_dir).filter(pl.col("task") == task).sort(["doc_id", "idx"])


def _plan_instances(plan: Path, task: str) -> dict[tuple[int, int], Any]:
    from lmeval.plans.plan import InstanceRecord, PlanReader

    out = {}
    with PlanReader(plan) as r:
        for rec in r.records(task):
            if isinstance(rec, InstanceRecord):
                out[(rec.doc_id, rec.idx)] = rec
    return out


def _plan_choices(plan: Path, task: str) -> dict[int, list[str]]:
    from lmeval.plans.plan import DocRecord, PlanReader

    out = {}
    with PlanReader(plan) as r:
        for rec in r.records(task):
            if isinstance(rec, DocRecord):
                out[rec.doc_id] = list(rec.choices or [])
    return out


def _norm_args(args: Any) -> Any:
    """lm-eval logs tuples as lists; generation kwargs as a dict."""
    return json.loads(json.dumps(args))


def _argmax(xs: list[float]) -> int:
    return max(range(len(xs)), key=lambda i: (xs[i], -i))


def compare_task(task: str, results_dir: Path, plan: Path, ref_samples: list[dict[str, Any]]) -> TaskReport:
    ours_inst = _our_instances(results_dir, task)
    plan_inst = _plan_instances(plan, task)
    samples = pl.read_parquet(results_dir / "samples.parquet").filter(pl.col("task") == task)
    rep = TaskReport(task, n_docs=len({s["doc_id"] for s in ref_samples}))

    by_doc_filter = {(s["doc_id"], s["filter"]): s for s in ref_samples}
    ref_docs = sorted({s["doc_id"] for s in ref_samples})
    our_docs = sorted(set(samples["doc_id"].to_list()))
    if our_docs != ref_docs:
        rep.prompt_mismatches.append(f"doc ids differ: ours {our_docs[:10]}... lm-eval {ref_docs[:10]}...")

    # prompts: every request's arguments as lm-eval logged them
    for (doc_id, _flt), s in sorted(by_doc_filter.items()):
        for idx, args in enumerate(s["arguments"]):
            rec = plan_inst.get((doc_id, idx))
            if rec is None:
                rep.prompt_mismatches.append(f"doc {doc_id} idx {idx}: not in our plan")
            elif _norm_args(list(rec.arguments)) != _norm_args(args):
                rep.prompt_mismatches.append(f"doc {doc_id} idx {idx}: arguments differ")

    lls = {
        (d, i): (ll, resp, fin)
        for d, i, ll, resp, fin in ours_inst.select(
            ["doc_id", "idx", "loglikelihood", "response", "finish_reason"]
        ).iter_rows()
    }
    choices = _plan_choices(plan, task)
    metric_cols = [c for c in ("acc", "acc_norm", "exact_match") if c in samples.columns]
    ours_rows = {(r["doc_id"], r["filter"]): r for r in samples.iter_rows(named=True)}
    gen_checked: set[int] = set()

    for (doc_id, flt), s in sorted(by_doc_filter.items()):
        mine = ours_rows.get((doc_id, flt))
        if mine is None:
            rep.doc_metric_mismatches.append(f"doc {doc_id} filter {flt}: missing in our samples.parquet")
            continue
        resps = s["resps"]
        if resps and isinstance(resps[0][0], list):  # loglikelihood: [[ [ll, greedy] ], ...] per choice
            ref_ll = [float(r[0][0]) for r in resps]
            our_ll = [float(lls[(doc_id, i)][0]) for i in range(len(ref_ll))]
            rep.ll_pairs += zip(our_ll, ref_ll, strict=True)
            for a, b in zip(our_ll, ref_ll, strict=True):
                rep.max_abs_ll_diff = max(rep.max_abs_ll_diff, abs(a - b))
                rep.max_rel_ll_diff = max(rep.max_rel_ll_diff, abs(a - b) / max(abs(b), 1e-12))
            lens = [float(len(c)) for c in choices.get(doc_id, [])]
            for m in ("acc", "acc_norm"):
                if m not in s or m not in metric_cols:
                    continue
                if mine[m] == s[m]:
                    continue
                norm = lens if m == "acc_norm" else [1.0] * len(ref_ll)
                ours_s = [x / n for x, n in zip(our_ll, norm, strict=True)]
                ref_s = [x / n for x, n in zip(ref_ll, norm, strict=True)]
                po, pr = _argmax(ours_s), _argmax(ref_s)
                bound = tie_gap(VS_LM_EVAL, ref_ll[po], ref_ll[pr], norm[po], norm[pr])
                rep.flips.append(Flip(task, doc_id, m, po, pr, ours_s[po] - ours_s[pr], ref_s[pr] - ref_s[po], bound))
        elif resps and isinstance(resps[0][0], (int, float)):  # loglikelihood_rolling: [[ll]] (one request)
            a, b = float(lls[(doc_id, 0)][0]), float(resps[0][0])
            rep.ll_pairs.append((a, b))
            rep.max_abs_ll_diff = max(rep.max_abs_ll_diff, abs(a - b))
            rep.max_rel_ll_diff = max(rep.max_rel_ll_diff, abs(a - b) / max(abs(b), 1e-12))
        else:  # generate_until: resps [[text]], filtered_resps [text]
            ref_gen = resps[0][0] if resps and resps[0] else None
            _, our_gen, finish = lls.get((doc_id, 0), (None, None, None))
            if our_gen != ref_gen:
                if batch_quirk(our_gen, finish, ref_gen):
                    if doc_id not in gen_checked:
                        rep.quirk_docs.append(f"doc {doc_id}: ours {our_gen!r} lm-eval {ref_gen!r}")
                    gen_checked.add(doc_id)
                    continue
                if doc_id not in gen_checked:
                    bucket = (
                        rep.special_token_docs
                        if our_gen is not None and strip_special(our_gen) == ref_gen
                        else rep.generation_mismatches
                    )
                    bucket.append(f"doc {doc_id}: ours {our_gen!r} lm-eval {ref_gen!r}")
            gen_checked.add(doc_id)
            for m in metric_cols:
                if m in s and mine[m] != s[m]:
                    rep.doc_metric_mismatches.append(f"doc {doc_id} filter {flt} {m}: ours {mine[m]} lm-eval {s[m]}")
            ref_f = s["filtered_resps"][0] if isinstance(s["filtered_resps"], list) else s["filtered_resps"]
            if mine["filtered"] != ref_f:
                rep.filtered_mismatches.append(
                    f"doc {doc_id} filter {flt}: ours {mine['filtered']!r} lm-eval {ref_f!r}"
                )
    return rep


def strip_special(text: str) -> str:
    from lmeval.common.tinymodel import SPECIAL_TOKENS

    for t in SPECIAL_TOKENS:
        text = text.replace(t, "")
    return text


def batch_quirk(ours: str | None, finish: str | None, ref: str | None) -> bool:
    """lm-eval's HF generation at batch size > 1 ran on past a special stop token where we stopped.

    lm-eval 0.4.13 (``HFLM``) stops a batch only when every sequence in it has hit a stop sequence, then
    decodes with ``skip_special_tokens=True`` and cuts at the ``until`` strings: a sequence that emitted a
    special stop token (e.g. ``<|im_end|>``, which is in gsm8k's ``until``) early loses that token and keeps
    the text generated after it. Ours stops there (as lm-eval at batch size 1, and vLLM). Recognised as: we
    stopped ("stop"), and our text is a strict prefix of lm-eval's.
    """
    return finish == "stop" and ours is not None and ref is not None and len(ref) > len(ours) and ref.startswith(ours)


def compare(results_dir: str | Path, ref: dict[str, Any], plan: str | Path | None = None) -> Comparison:
    """Our scored results directory against ``lmeval_ref.reference`` output for the tasks it ran.

    Every task of our run must be in ``ref``; tasks only in ``ref`` are left out.
    """
    rdir = Path(results_dir)
    ours = json.loads((rdir / "results.json").read_text())
    plan_path = Path(plan or ours["plan_path"])
    names = sorted(ours["results"])
    missing = [t for t in names if t not in ref["samples"]]
    if missing:
        raise KeyError(f"lm-eval reference has no task(s) {missing}")
    tasks = {t: compare_task(t, rdir, plan_path, ref["samples"][t]) for t in names}
    return Comparison(
        rows=aggregate_rows(ours["results"], {t: ref["results"][t] for t in names}),
        tasks=tasks,
        n_shot_ours={t: int(v) for t, v in ours["n-shot"].items()},
        n_shot_ref={t: int(v) for t, v in ref["n-shot"].items() if t in names},
    )


def merge(parts: list[Comparison]) -> Comparison:
    """One comparison out of several runs over disjoint tasks."""
    out = Comparison(rows=[], tasks={}, n_shot_ours={}, n_shot_ref={})
    for c in parts:
        out.rows += c.rows
        out.tasks.update(c.tasks)
        out.n_shot_ours.update(c.n_shot_ours)
        out.n_shot_ref.update(c.n_shot_ref)
    return out


def flips_explained(c: Comparison, max_gap: float | None = None) -> bool:
    """Every flip is a near-tie: both sides' gaps between the two choices are within ``max_gap`` (None: the
    gap the per-request bound allows, ``Flip.tie``)."""
    flips = [f for t in c.tasks.values() for f in t.flips]
    if max_gap is None:
        return all(f.tie for f in flips)
    return all(f.ours_gap <= max_gap and f.ref_gap <= max_gap for f in flips)


PPL_METRICS = ("perplexity", "word_perplexity", "byte_perplexity", "bits_per_byte")


def ref_lls(sample: dict[str, Any]) -> list[float]:
    """lm-eval's logged per-request results of one doc as log-likelihoods (``[[ll, greedy]]`` or ``[[ll]]``)."""
    out = []
    for r in sample["resps"]:
        x = r[0]
        out.append(float(x[0] if isinstance(x, list) else x))
    return out


def _units(sample: dict[str, Any], metric: str) -> float:
    """The word or byte count lm-eval logged beside a rolling log-likelihood (``[ll, units]``)."""
    value = sample[metric]
    assert isinstance(value, list) and len(value) == 2, (metric, value)
    return float(value[1])


def derived_tolerance(key: str, samples: list[dict[str, Any]], tol: Tolerance = VS_LM_EVAL) -> Tolerance:
    """How far our value of lm-eval's metric ``key`` ("metric,filter") may lie from lm-eval's: ``SCORES`` for a
    score of equal per-document values; for a function of log-likelihoods, what its formula carries from the
    per-request bound ``tol``, computed from lm-eval's logged log-likelihoods (``samples``, one task's)."""
    metric = key.split(",")[0]
    if metric.removesuffix("_stderr") not in PPL_METRICS:
        return SCORES
    docs = list({s["doc_id"]: s for s in samples}.values())  # one logged sample per filter
    lls = [ll for s in docs for ll in ref_lls(s)]
    if metric == "perplexity":
        return perplexity_tolerance(tol, lls)
    if metric == "perplexity_stderr":
        return bootstrap_stderr_tolerance(tol, lls)
    if metric in ("word_perplexity", "byte_perplexity"):
        return perplexity_tolerance(tol, lls, units=sum(_units(s, metric) for s in docs))
    if metric == "bits_per_byte":
        return bits_per_byte_tolerance(tol, lls, sum(_units(s, metric) for s in docs))
    raise AssertionError(f"no derived tolerance for {key} (lm-eval gives no number for it)")


def table(comparisons: dict[str, Comparison]) -> list[list[str]]:
    """Rows (task, metric, backend..., lm-eval, |diff| per backend) for printing; ``comparisons`` by backend."""
    names = list(comparisons)
    first = comparisons[names[0]]
    out = [["task", "metric,filter", *[f"ours ({n})" for n in names], "lm-eval hf", *[f"abs diff {n}" for n in names]]]
    for i, row in enumerate(first.rows):
        vals = [comparisons[n].rows[i] for n in names]
        out.append(
            [
                row.task,
                row.key,
                *[_fmt(v.ours) for v in vals],
                _fmt(row.ref),
                *[f"{v.diff:.2e}" if math.isfinite(v.diff) else "missing" for v in vals],
            ]
        )
    return out


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.6f}"


def render_markdown(rows: list[list[str]]) -> str:
    head, *body = rows
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in body]
    return "\n".join(lines)
