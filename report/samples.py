"""The sample browser's data: per task, every document with its exact prompt, choices or continuations,
log-likelihoods, responses, filtered responses and per-metric scores, run by run.

One JSON object per task (columns rather than one object per document, to keep large tasks small). Prompts
are stored once per run as a prefix shared by every document of the task (e.g. MMLU's description and
first-n few-shot examples) plus each document's own part; a run whose prompts equal an earlier run's stores
``"same_as": i`` instead, and a document whose own part (or continuations) equals run ``i``'s stores the
number ``i`` there (0-shot and 5-shot MMLU share every question: only the prefixes differ). Documents are
the union of the runs' documents, in doc_id order; a run that lacks a document has ``null`` there.
"""

from __future__ import annotations

import math
import os
from typing import Any

import polars as pl

from lmeval.report.inputs import DocView, Run
from lmeval.report.thumbs import doc_thumbnails

LL_DIGITS = 6  # log-likelihoods as shown in the page (and stored): 6 decimals


_MIN_PREFIX = 80  # shorter shared beginnings ("Question: ") stay in each prompt


def common_text_prefix(strings: list[str]) -> str:
    """The beginning every string shares, cut after its last newline (whole lines: a description, few-shot
    examples); empty when that is shorter than ``MIN_PREFIX`` characters."""
    if len(strings) < 2:
        return ""
    p = os.path.commonprefix(strings)
    p = p[: p.rfind("\n") + 1]
    return p if len(p) >= _MIN_PREFIX else ""


def num(x: Any) -> Any:
    """A JSON-safe number: non-finite floats become the strings "nan", "inf", "-inf"."""
    if isinstance(x, float) and not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    return x


def _ll(x: Any) -> Any:
    if x is None:
        return None
    x = float(x)
    return round(x, LL_DIGITS) if math.isfinite(x) else num(x)


def task_order(runs: list[Run]) -> list[str]:
    """Tasks (not groups) with samples, in the order of the first run that has them."""
    seen: dict[str, None] = {}
    for r in runs:
        for t in r.samples["task"].unique(maintain_order=True).to_list():
            seen.setdefault(t, None)
    return list(seen)


def _metric_columns(df: pl.DataFrame) -> list[str]:
    skip = {"task", "doc_id", "filter", "target", "filtered", "items"}
    return [c for c, dt in df.schema.items() if c not in skip and dt.is_numeric() and df[c].null_count() < df.height]


def _prompts(docs: list[DocView | None]) -> tuple[str, list[Any], list[Any]]:
    """(shared prefix, per-doc context suffix (a string, or a list when the doc's Instances differ),
    per-doc continuations (list per Instance, None for generation/rolling))."""
    firsts = [i.context for d in docs if d is not None for i in d.instances]
    prefix = common_text_prefix(firsts)
    ctx: list[Any] = []
    cont: list[Any] = []
    for d in docs:
        if d is None or not d.instances:
            ctx.append(None)
            cont.append(None)
            continue
        insts = sorted(d.instances, key=lambda i: i.idx)
        cs = [i.context for i in insts]
        if all(c == cs[0] for c in cs):
            ctx.append(cs[0][len(prefix) :] if cs[0].startswith(prefix) else cs[0])
        else:
            ctx.append([c[len(prefix) :] if c.startswith(prefix) else c for c in cs])
        conts = [i.continuation for i in insts]
        cont.append(conts if any(c is not None for c in conts) else None)
    return prefix, ctx, cont


def _refer(values: list[Any], earlier: list[tuple[int, Any]], name: str) -> list[Any]:
    """``values`` with each entry that equals an earlier run's entry for the same document replaced by that
    run's index (entries are strings, lists or None, never numbers, so the reader can tell them apart)."""
    out = list(values)
    for k, v in enumerate(values):
        if v is None:
            continue
        for i, p in earlier:
            if p[name][k] == v:
                out[k] = i
                break
    return out


def task_payload(task: str, runs: list[Run], hib: dict[str, bool]) -> dict[str, Any]:
    """Everything the sample browser shows for ``task``."""
    present = [r for r in runs if task in set(r.samples["task"].unique().to_list())]
    frames = {r.index: r.samples.filter(pl.col("task") == task) for r in present}
    ids = sorted({int(i) for f in frames.values() for i in f["doc_id"].to_list()})
    pos = {d: k for k, d in enumerate(ids)}
    output_type = ""
    target: list[Any] = [None] * len(ids)
    choices: list[Any] = [None] * len(ids)
    filters: list[str] = []
    metrics: list[str] = []
    per_run: dict[str, Any] = {}
    seen_prompts: list[tuple[int, Any]] = []
    for r in present:
        f = frames[r.index]
        filters += [x for x in f["filter"].unique(maintain_order=True).to_list() if x not in filters]
        metrics += [m for m in _metric_columns(f) if m not in metrics]
        entry = _scores(f, pos, target)
        entry.update(_answers(r, task, pos))
        if r.plan is not None and task in r.plan.tasks:
            output_type = output_type or _plan_output_type(r, task)
            entry.update(_prompts_of(r, task, ids, choices, seen_prompts))
        per_run[str(r.index)] = entry
    if not output_type:
        for r in present:
            t = r.results.configs.get(task, {})
            if isinstance(t, dict) and isinstance(t.get("output_type"), str):
                output_type = t["output_type"]
                break
    return {
        "task": task,
        "output_type": output_type,
        "runs": [r.index for r in present],
        "ids": ids,
        "target": target,
        "choices": choices if any(c is not None for c in choices) else None,
        "filters": filters,
        "metrics": [{"key": m, "hib": hib.get(m, True)} for m in metrics],
        "per_run": per_run,
    }


def _scores(f: pl.DataFrame, pos: dict[int, int], target: list[Any]) -> dict[str, Any]:
    """One run's filtered responses and per-document scores by filter (``target`` filled in on the way)."""
    n = len(pos)
    mcols = _metric_columns(f)
    entry: dict[str, Any] = {"filtered": {}, "score": {}}
    for filt in f["filter"].unique(maintain_order=True).to_list():
        ff = f.filter(pl.col("filter") == filt).sort("doc_id")
        doc_pos = [pos[int(d)] for d in ff["doc_id"].to_list()]
        if "target" in ff.columns:
            for p, t in zip(doc_pos, ff["target"].to_list(), strict=True):
                if target[p] is None and t is not None:
                    target[p] = str(t)
        if "filtered" in ff.columns and ff["filtered"].null_count() < ff.height:
            col: list[Any] = [None] * n
            for p, v in zip(doc_pos, ff["filtered"].to_list(), strict=True):
                col[p] = v
            entry["filtered"][filt] = col
        for c in ("reasoning", "reasoning_chars", "reasoning_tokens", "answer"):  # run.reasoning
            if c in ff.columns and ff[c].null_count() < ff.height and c not in entry:
                part: list[Any] = [None] * n
                for p, v in zip(doc_pos, ff[c].to_list(), strict=True):
                    part[p] = v
                entry[c] = part
        scores: dict[str, list[Any]] = {}
        for m in mcols:
            if ff[m].null_count() == ff.height:
                continue
            col = [None] * n
            for p, v in zip(doc_pos, ff[m].to_list(), strict=True):
                col[p] = num(v)
            scores[m] = col
        entry["score"][filt] = scores
    return entry


def _answers(r: Run, task: str, pos: dict[int, int]) -> dict[str, Any]:
    """What the model answered: the result rows by document, ordered by idx."""
    n = len(pos)
    rows = r.rows.filter(pl.col("task") == task).sort(["doc_id", "idx"])
    by_doc: dict[int, list[dict[str, Any]]] = {}
    for row in rows.iter_rows(named=True):
        by_doc.setdefault(int(row["doc_id"]), []).append(row)
    kinds = {row["request_type"] for rs in by_doc.values() for row in rs}
    entry: dict[str, Any] = {}
    if "generate_until" in kinds:
        entry.update(resp=[None] * n, finish=[None] * n, repeats=[None] * n)
    if kinds & {"loglikelihood", "loglikelihood_rolling"}:
        entry.update(ll=[None] * n, greedy=[None] * n)
    for d, rs in by_doc.items():
        if d not in pos:
            continue
        p = pos[d]
        if "ll" in entry:
            entry["ll"][p] = [_ll(x["loglikelihood"]) for x in rs]
            entry["greedy"][p] = [None if x["is_greedy"] is None else int(x["is_greedy"]) for x in rs]
        if "resp" in entry:
            g = rs[0]
            entry["resp"][p] = g["response"]
            entry["finish"][p] = g["finish_reason"]
            reps = g["responses"]
            if reps is not None and len(reps) > 1:
                entry["repeats"][p] = list(reps)
    if "repeats" in entry and all(v is None for v in entry["repeats"]):
        del entry["repeats"]
    return entry


def _plan_output_type(r: Run, task: str) -> str:
    assert r.plan is not None
    ts = next((t for t in r.plan.header.tasks if t.name == task), None)
    return ts.output_type if ts is not None else ""


def _prompts_of(
    r: Run, task: str, ids: list[int], choices: list[Any], seen_prompts: list[tuple[int, Any]]
) -> dict[str, Any]:
    """The prompts from the run's plan (``choices`` filled in on the way); a run whose prompts equal an
    earlier run's says ``same_as``, and prompt texts equal to an earlier run's are referred to."""
    assert r.plan is not None
    views = [r.plan.tasks[task].get(d) for d in ids]
    for k, v in enumerate(views):
        if v is not None and choices[k] is None and v.choices is not None:
            choices[k] = v.choices
    prefix, ctx, cont = _prompts(views)
    prompt: dict[str, Any] = {"prefix": prefix, "ctx": ctx, "cont": cont}
    images = doc_thumbnails(r.plan.path, views)
    if images is not None:
        prompt["images"] = images
    fewshot = [None if v is None or not v.fewshot_ids else v.fewshot_ids for v in views]
    if any(f is not None for f in fewshot):
        prompt["fewshot"] = fewshot
    same = next((i for i, p in seen_prompts if p == prompt), None)
    if same is not None:
        return {"same_as": same}
    seen_prompts.append((r.index, dict(prompt)))
    for name in ("ctx", "cont"):
        prompt[name] = _refer(prompt[name], seen_prompts[:-1], name)
    return prompt
