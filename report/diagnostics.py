"""What may be wrong with a run, task by task: contexts the executor had to cut, generations that stopped at
``max_gen_toks``, empty responses, answers no filter could parse, missing or non-finite results.

Truncation follows the executor's rules (``executor/requests.py``): a scoring request keeps the last
``max_model_len - 1`` tokens of context + continuation; a generation keeps ``max_model_len - max_gen_toks``
tokens of context. Token counts come from the plan (its ``context_ids``/``continuation_ids``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import polars as pl

from lmeval.plans import parse_reasoning, split_response
from lmeval.report.html import mapping
from lmeval.report.inputs import Run

EXAMPLES = 8
_MODEL_DEFAULT_MAX_GEN_TOKS = 256  # the model config's default (conf/model/*.yaml, executor/modelconf.py)
INVALID = "[invalid]"  # lm-eval's regex filter fallback: no answer found


@dataclass
class Finding:
    run: int
    task: str
    kind: str  # truncated | max_gen_toks | empty | no_answer | missing | nonfinite | unanswered | note
    count: int
    total: int
    doc_ids: list[int] = field(default_factory=list)  # the first EXAMPLES documents
    detail: str = ""


LABELS = {
    "truncated": "contexts truncated to fit max_model_len",
    "max_gen_toks": "generations that hit max_gen_toks",
    "thinking_forced": "thinking budget ran out (end marker forced, then answered)",
    "empty": "empty responses",
    "no_answer": "filtered responses with no answer ([invalid])",
    "missing": "instances missing from the results",
    "nonfinite": "non-finite log-likelihoods",
    "unanswered": "result rows without a value",
    "note": "report",
}


def _model_limits(run: Run) -> tuple[int | None, int]:
    model = mapping(run.manifest, "model")
    engine = mapping(run.manifest, "engine_args")
    cfg_model = mapping(run.plan.header.config, "model") if run.plan is not None else {}
    mml = engine.get("max_model_len") or model.get("max_model_len") or cfg_model.get("max_model_len")
    mgt = model.get("max_gen_toks") or cfg_model.get("max_gen_toks") or _MODEL_DEFAULT_MAX_GEN_TOKS
    try:
        return (int(mml) if mml else None), int(mgt)
    except (TypeError, ValueError):
        return None, _MODEL_DEFAULT_MAX_GEN_TOKS


def _ids(xs: list[int]) -> list[int]:
    return sorted(set(xs))[:EXAMPLES]


def run_findings(run: Run) -> list[Finding]:
    """What may be wrong with one run: notes, missing Instances, odd answers, truncated prompts, no answer."""
    out: list[Finding] = [Finding(run.index, "", "note", 0, 0, detail=n) for n in run.notes]
    if not run.manifest.get("finished"):
        out.append(Finding(run.index, "", "note", 0, 0, detail="the manifest records no finish time (unfinished run?)"))
    for task, p in sorted(run.results.partial.items()):
        out.append(
            Finding(
                run.index,
                task,
                "missing",
                p.missing_instances,
                p.expected_instances,
                _ids([m.doc_id for m in p.first_missing]),
                detail=f"{p.incomplete_docs} documents left out of the scores",
            )
        )
    max_len, max_gen = _model_limits(run)
    for task in run.rows["task"].unique(maintain_order=True).to_list():
        out += _answer_findings(run, task)
        if run.plan is not None and max_len is not None and task in run.plan.tasks:
            out += _truncated(run, task, max_len, max_gen)
    out += _no_answer(run)
    order = list(LABELS)
    return sorted(out, key=lambda f: (f.run, f.task, order.index(f.kind), f.detail))


def _answer_findings(run: Run, task: str) -> list[Finding]:
    """Unanswered, non-finite, empty and cut-off (finish_reason length) answers of one task."""
    out: list[Finding] = []
    t = run.rows.filter(pl.col("task") == task)
    scoring = t.filter(pl.col("request_type") != "generate_until")
    gen = t.filter(pl.col("request_type") == "generate_until")
    if scoring.height:
        ll = scoring["loglikelihood"].to_list()
        docs = scoring["doc_id"].to_list()
        none = [d for d, x in zip(docs, ll, strict=True) if x is None]
        bad = [d for d, x in zip(docs, ll, strict=True) if x is not None and not math.isfinite(x)]
        if none:
            out.append(Finding(run.index, task, "unanswered", len(none), scoring.height, _ids(none)))
        if bad:
            out.append(Finding(run.index, task, "nonfinite", len(bad), scoring.height, _ids(bad)))
    if gen.height:
        docs = gen["doc_id"].to_list()
        resp = gen["response"].to_list()
        fin = gen["finish_reason"].to_list()
        none = [d for d, x in zip(docs, resp, strict=True) if x is None]
        empty = [d for d, x in zip(docs, resp, strict=True) if x is not None and not x.strip()]
        length = [d for d, x in zip(docs, fin, strict=True) if x == "length"]
        if none:
            out.append(Finding(run.index, task, "unanswered", len(none), gen.height, _ids(none)))
        if empty:
            out.append(Finding(run.index, task, "empty", len(empty), gen.height, _ids(empty)))
        if length:
            detail = "finish_reason = length" + _cut_parts(run, resp, fin)
            out.append(Finding(run.index, task, "max_gen_toks", len(length), gen.height, _ids(length), detail=detail))
        flags = gen["thinking_forced"].to_list() if "thinking_forced" in gen.columns else []
        forced = [d for d, x in zip(docs, flags, strict=False) if x]
        if forced:  # run.thinking_budget (plans/vocab/budgets.py)
            out.append(
                Finding(
                    run.index,
                    task,
                    "thinking_forced",
                    len(forced),
                    gen.height,
                    _ids(forced),
                    detail="thinking_forced = true",
                )
            )
    return out


def _cut_parts(run: Run, resp: list[str | None], fin: list[str | None]) -> str:
    """With the plan's ``run.reasoning`` (plans/vocab/reasoning.py): how many cut responses ended while thinking."""
    cfg = (run.plan.header.config.get("run") or {}) if run.plan is not None else {}
    try:
        fmt = parse_reasoning(cfg.get("reasoning") if isinstance(cfg, dict) else None)
    except ValueError:
        return ""
    if fmt is None:
        return ""
    cut = [r for r, f in zip(resp, fin, strict=True) if f == "length" and r is not None]
    thinking = sum(1 for r in cut if not split_response(r, fmt).closed)
    return f"; {thinking} inside the reasoning block, {len(cut) - thinking} in the answer"


def _truncated(run: Run, task: str, max_len: int, max_gen: int) -> list[Finding]:
    """Instances whose prompt (plus continuation or generation budget) exceeds the model's length."""
    assert run.plan is not None
    cut: list[int] = []
    n = 0
    for doc in run.plan.tasks[task].values():
        for inst in doc.instances:
            n += 1
            if inst.n_context_ids is None:
                continue
            if inst.request_type == "loglikelihood":
                over = inst.n_context_ids + (inst.n_continuation_ids or 0) > max_len - 1
            elif inst.request_type == "generate_until":
                over = inst.n_context_ids + (inst.max_gen_toks or max_gen) > max_len
            else:
                over = False  # rolling windows cover every token
            if over:
                cut.append(doc.doc_id)
    if not cut:
        return []
    return [
        Finding(
            run.index,
            task,
            "truncated",
            len(cut),
            n,
            _ids(cut),
            detail=f"max_model_len {max_len}, left side cut",
        )
    ]


def _no_answer(run: Run) -> list[Finding]:
    """Documents whose filtered answer is lm-eval's ``[invalid]`` (the filter found no answer)."""
    out: list[Finding] = []
    s = run.samples
    if "filtered" in s.columns:
        inv = s.filter(pl.col("filtered") == INVALID)
        for (task, filt), g in sorted(inv.group_by(["task", "filter"]), key=lambda x: (str(x[0][0]), str(x[0][1]))):
            total = s.filter((pl.col("task") == task) & (pl.col("filter") == filt)).height
            out.append(
                Finding(
                    run.index,
                    str(task),
                    "no_answer",
                    g.height,
                    total,
                    _ids(g["doc_id"].to_list()),
                    detail=f"filter {filt}",
                )
            )
    return out
