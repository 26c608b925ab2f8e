"""lm-eval 0.4.13 ``--log_samples`` files from a scored run: ``samples_<task>_<date>.jsonl``, one line per
(filter, document), in lm-eval's order (filters as the task lists them, documents by ``doc_id``).

Each line holds lm-eval's fields in its order: ``doc_id``, ``doc``, ``target`` (``str`` of lm-eval's
``doc_to_target``), ``arguments`` (``{"gen_args_<i>": {"arg_<j>": ...}}`` per request), ``resps`` and
``filtered_resps`` (every leaf made a string, as lm-eval's tracker does), ``filter``, ``metrics``, the three
hashes (sha256 of the document as ``json.dumps(doc, indent=2, ensure_ascii=False)``, of the first request's
context, of the target string), then the per-sample metric values; written as ``json.dumps(line,
ensure_ascii=False)`` plus a newline.

What differs from lm-eval's own file for the same run, and why:
- the file name's date is the export's time (lm-eval's is its run's);
- keys inside ``doc`` and inside generation kwargs come in sorted order, so ``doc_hash`` is the hash of the
  sorted document: plans store maps canonically (keys sorted) and keep no other order;
- a request that shows images logs them (lm-eval's ``{"visual": [...]}`` argument) as
  ``<image sha256=... size=WxH mime=...>`` strings (the plan's media hashes), where lm-eval writes each image
  object's ``str()`` (its Python class and memory address);
- a per-sample value a user's ``process_results`` returned as a ``bool`` reads as ``1.0``/``0.0`` (the
  scorer keeps numbers as floats); lm-eval's own metrics keep their types (``exact_match`` of a multiple-choice
  task and ``acc`` of a loglikelihood task are ints, as lm-eval writes them).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl

from lmeval.common import json_text, text_sha256
from lmeval.plans import DocRecord, InstanceRecord, TaskSummary
from lmeval.report.errors import ReportError
from lmeval.report.export.inputs import ExportRun
from lmeval.scorer import METRICS, metrics_for

# the output types whose process_results builds its dict in one fixed order (the scorer registry's, lm-eval's)
FIXED_ORDER = ("multiple_choice", "loglikelihood", "loglikelihood_rolling")
_SAMPLE_COLUMNS = ("task", "doc_id", "filter", "target", "filtered", "items", "reasoning", "reasoning_chars", "answer")


def _default(o: Any) -> Any:
    """Objects json cannot write, as lm-eval's ``handle_non_serializable`` writes them."""
    if isinstance(o, set):
        return list(o)
    if hasattr(o, "item") and callable(o.item):
        return o.item()
    return str(o)


def dumps_line(obj: Any) -> str:
    return json_text(obj, default=_default) + "\n"


def sha256(text: str) -> str:
    return text_sha256(text)


def doc_hash(doc: Any) -> str:
    return sha256(json.dumps(doc, indent=2, default=_default, ensure_ascii=False))


def stringify(x: Any) -> Any:
    """lm-eval's ``sanitize_list``: every leaf of nested lists/tuples made a ``str``."""
    if isinstance(x, list | tuple):
        return [stringify(v) for v in x]
    return str(x)


def _resps(inst: InstanceRecord, row: dict[str, Any]) -> list[Any]:
    """The Instance's ``resps`` as lm-eval holds them: one entry per repeat."""
    if inst.request_type == "loglikelihood":
        return [(row["loglikelihood"], bool(row["is_greedy"]))]
    if inst.request_type == "loglikelihood_rolling":
        return [row["loglikelihood"]]
    if row.get("responses") is not None:
        return list(row["responses"])
    return [row["response"]]


def _arguments(inst: InstanceRecord) -> dict[str, Any]:
    args = {f"arg_{j}": a for j, a in enumerate(inst.arguments)}
    if inst.media:  # lm-eval appends {"visual": [images]} and logs each image's str(); here its content identity
        args[f"arg_{len(args)}"] = {"visual": [image_label(m) for m in inst.media]}
    return args


def image_label(m: dict[str, Any]) -> str:
    """One image of a logged request: its sha256 (of the original bytes), size and MIME type."""
    return f"<image sha256={m['sha256']} size={m['width']}x{m['height']} mime={m['mime']}>"


def _multiple_input(insts: list[InstanceRecord]) -> bool:
    """A multiple-choice document whose choices are in the contexts: one continuation, several contexts."""
    ll = [i for i in insts if i.request_type == "loglikelihood" and i.context]
    return len(ll) > 1 and len({i.continuation for i in ll}) == 1 and len({i.context for i in ll}) > 1


def lm_eval_target(ts: TaskSummary, rec: DocRecord, insts: list[InstanceRecord]) -> str:
    """``str(task.doc_to_target(doc))``: the plan's target, except where the plan keeps the gold index in its
    place (multiple-input tasks: the continuation after the target delimiter) or lm-eval's target is the
    request itself (loglikelihood_rolling)."""
    if ts.output_type == "loglikelihood_rolling" and insts:
        return insts[0].context
    if ts.output_type == "multiple_choice" and _multiple_input(insts):
        cont = str(insts[0].continuation)
        delim = str(ts.config.get("target_delimiter", " ")) if isinstance(ts.config, dict) else " "
        return cont[len(delim) :] if delim and cont.startswith(delim) else cont
    return str(rec.target)


def _last_filter_function(ts: TaskSummary, filt: str) -> str:
    for entry in ts.filter_list or []:
        if isinstance(entry, dict) and entry.get("name") == filt:
            chain = entry.get("filter") or []
            if chain and isinstance(chain[-1], dict):
                return str(chain[-1].get("function", ""))
    return "take_first"


def _filtered_generation(ts: TaskSummary, filt: str, stored: Any) -> Any:
    """samples.parquet keeps a filtered response that is not a string as JSON; one that ends in take_first is
    a string."""
    if stored is None or _last_filter_function(ts, filt) == "take_first":
        return stored
    try:
        return json.loads(stored)
    except (TypeError, ValueError):
        return stored


def _metric_values(ts: TaskSummary, row: dict[str, Any], metric_cols: list[str]) -> dict[str, Any]:
    vals: dict[str, Any] = {k: row[k] for k in metric_cols if row.get(k) is not None}
    if row.get("items"):
        vals.update(json.loads(row["items"]))
    fixed = ts.output_type in FIXED_ORDER and not ts.config.get("process_results")
    order = [m.name for m in metrics_for(ts.output_type)] if fixed else []
    order += [str(m.get("metric")) for m in ts.metric_list or [] if isinstance(m, dict)]
    ordered = {k: vals[k] for k in order if k in vals}
    ordered.update((k, v) for k, v in vals.items() if k not in ordered)
    for k, v in ordered.items():
        m = METRICS.get(k)
        if m is not None and ts.output_type in m.int_in and isinstance(v, float) and v.is_integer():
            ordered[k] = int(v)
        elif (ts.output_type, k) == ("multiple_choice", "brier_score") and isinstance(v, list) and len(v) == 2:
            ordered[k] = [v[0], _ndarray_str(v[1])]
    return ordered


def _ndarray_str(values: Any) -> str:
    """lm-eval keeps brier_score's probabilities as a numpy array, which its JSON writer turns into ``str``."""
    import numpy as np

    return str(np.array(values))


def task_lines(run: ExportRun, ts: TaskSummary) -> list[str]:
    """The task's sample-log lines (empty when the run scored no document of it)."""
    tp = run.tasks[ts.name]
    samples = run.samples.filter(pl.col("task") == ts.name)
    metric_cols = [c for c in samples.columns if c not in _SAMPLE_COLUMNS]
    filters: list[str] = list(dict.fromkeys(samples["filter"].to_list()))
    lines: list[str] = []
    for filt in filters:
        part = samples.filter(pl.col("filter") == filt).sort("doc_id")
        for srow in part.iter_rows(named=True):
            doc_id = int(srow["doc_id"])
            rec = tp.docs.get(doc_id)
            insts = tp.instances.get(doc_id, [])
            if rec is None or not insts:
                raise ReportError(f"{run.path}: task {ts.name} doc {doc_id}: scored but not in the plan")
            rows = [run.rows.get(i.instance_id) for i in insts]
            if any(r is None for r in rows):
                raise ReportError(f"{run.path}: task {ts.name} doc {doc_id}: scored but a result row is missing")
            resps = [_resps(i, r) for i, r in zip(insts, rows, strict=True) if r is not None]
            if ts.output_type == "generate_until":
                filtered: list[Any] = [_filtered_generation(ts, filt, srow.get("filtered"))]
                filtered += [r[0] for r in resps[1:]]
            else:
                filtered = [r[0] for r in resps]  # take_first: the only filter of a loglikelihood task
            target = lm_eval_target(ts, rec, insts)
            values = _metric_values(ts, srow, metric_cols)
            line: dict[str, Any] = {
                "doc_id": doc_id,
                "doc": rec.doc,
                "target": target,
                "arguments": {f"gen_args_{i}": _arguments(inst) for i, inst in enumerate(insts)},
                "resps": stringify(resps),
                "filtered_resps": stringify(filtered),
                "filter": filt,
                "metrics": list(values),
                "doc_hash": doc_hash(rec.doc),
                "prompt_hash": sha256(insts[0].context),
                "target_hash": sha256(target),
                **values,
            }
            lines.append(dumps_line(line))
    return lines


def date_id(now: datetime | None = None) -> str:
    """lm-eval's file-name date: local ISO time with ``:`` made ``-``."""
    return (now or datetime.now()).isoformat().replace(":", "-")


def write_lm_eval_samples(run: ExportRun, out_dir: Path, date: str | None = None) -> list[Path]:
    """One ``samples_<task>_<date>.jsonl`` per task with scored samples, written into ``out_dir``."""
    return write_task_files(out_dir, date, ((ts.name, task_lines(run, ts)) for ts in run.header.tasks))


def write_task_files(out_dir: Path, date: str | None, per_task: Iterable[tuple[str, list[str]]]) -> list[Path]:
    """``samples_<task>_<date>.jsonl`` for each (task, lines) with lines, each written whole then renamed (one
    task's lines in memory at a time)."""
    stamp = date or date_id()
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, lines in per_task:
        if not lines:
            continue
        path = out_dir / f"samples_{name}_{stamp}.jsonl"
        tmp = path.with_suffix(".jsonl.tmp")
        tmp.write_text("".join(lines), encoding="utf-8")
        tmp.replace(path)
        written.append(path)
    return written
