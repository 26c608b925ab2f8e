"""lm-eval 0.5's sample logs from a scored run (issue #55), beside 0.4.13's (``lm_eval_samples.py``): one
``samples_<task>_<date>.jsonl`` per task, one line per (scorer pipeline, document).

lm-eval 0.5 builds a line from the document's Instances and its scorer: ``target`` is the first Instance's
(a multiple-choice gold as its index, a generation's target as text), ``arguments`` each Instance's request
as a list, ``resps`` each Instance's responses, ``filtered_resps`` each Instance's responses through the
pipeline (a log-likelihood pipeline keeps them as they are), ``filter`` the pipeline's (the scorer's) name,
then ``metrics``, the three hashes and the per-document values, and ``scores_per_repeat`` (each metric's score
of every repeat) when a document was answered more than once and every repeat scored (``sample_scores``:
repeats.parquet). A repeated document's values are lm-eval 0.5's pass@K reductions, ``pass@K(METRIC)``
(lmeval's ``METRIC_pass@K``; score with ``run.sample_scores=[pass@1,pass@N]`` for lm-eval 0.5's defaults),
and its ``filtered_resps`` every repeat's answer. Values keep their JSON types (0.4.13's file makes every
response a string).

What differs from lm-eval 0.5's own file: the file name's date is the export's; ``doc`` (and so
``doc_hash``) has its keys sorted, as plans store maps.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import polars as pl

from lmeval.plans import DocRecord, InstanceRecord, TaskSummary, read_repeats, reraised_as
from lmeval.report.errors import ReportError
from lmeval.report.export.inputs import ExportRun
from lmeval.report.export.lm_eval_samples import (
    _SAMPLE_COLUMNS,
    _filtered_generation,
    _metric_values,
    _resps,
    doc_hash,
    dumps_line,
    sha256,
    write_task_files,
)

EXPORT_NAME = "lm-eval-0.5-samples"  # the `lmeval export --format` that writes these


def instance_target(ts: TaskSummary, rec: DocRecord) -> Any:
    """The first Instance's ``target`` in lm-eval 0.5: a multiple-choice gold as the index of its choice."""
    target = rec.target
    if ts.output_type == "multiple_choice" and isinstance(target, str) and rec.choices and target in rec.choices:
        return rec.choices.index(target)
    return target


def _repeats(run: ExportRun) -> pl.DataFrame | None:
    """Every repeat's scores (repeats.parquet, written for plans with ``sample_scores``), or None."""
    with reraised_as(ReportError):
        return read_repeats(run.path)


def _per_repeat(reps: pl.DataFrame | None, task: str, doc_id: int, filt: str) -> pl.DataFrame | None:
    """The document's repeats under the pipeline (by position), when it was answered more than once."""
    if reps is None:
        return None
    part = reps.filter((pl.col("task") == task) & (pl.col("doc_id") == doc_id) & (pl.col("filter") == filt))
    return part.sort("repeat") if part.height > 1 else None


_PASS_KEY = re.compile(r"^(?P<metric>.+)_pass@(?P<k>[1-9][0-9]*)$")


def as_repeated(values: dict[str, Any]) -> dict[str, Any]:
    """A repeated document's values as lm-eval 0.5 names them: its pass@K reductions, ``pass@K(METRIC)``
    (lmeval's ``METRIC_pass@K``, the same unbiased estimator), without the first repeat's own score."""
    out = {}
    for key, v in values.items():
        m = _PASS_KEY.match(key)
        if m:
            out[f"pass@{m['k']}({m['metric']})"] = v
    return out or values


def task_lines_05(run: ExportRun, ts: TaskSummary, reps: pl.DataFrame | None) -> list[str]:
    tp = run.tasks[ts.name]
    samples = run.samples.filter(pl.col("task") == ts.name)
    metric_cols = [c for c in samples.columns if c not in _SAMPLE_COLUMNS]
    lines: list[str] = []
    for filt in dict.fromkeys(samples["filter"].to_list()):
        for srow in samples.filter(pl.col("filter") == filt).sort("doc_id").iter_rows(named=True):
            doc_id = int(srow["doc_id"])
            rec, insts = tp.docs.get(doc_id), tp.instances.get(doc_id, [])
            rows = [run.rows.get(i.instance_id) for i in insts]
            if rec is None or not insts or any(r is None for r in rows):
                raise ReportError(f"{run.path}: task {ts.name} doc {doc_id}: scored but not all in the plan and run")
            resps = [_resps(i, r) for i, r in zip(insts, rows, strict=True) if r is not None]
            filtered = _filtered(ts, filt, srow, insts, resps)
            target = instance_target(ts, rec)
            values = _metric_values(ts, srow, metric_cols)
            repeated = _per_repeat(reps, ts.name, doc_id, filt)
            per_repeat: dict[str, Any] = {}
            if repeated is not None:
                per_repeat = {m: repeated[m].to_list() for m in values if m in repeated.columns}
                filtered = [repeated["filtered"].to_list()]
                values = as_repeated(values)
            line: dict[str, Any] = {
                "doc_id": doc_id,
                "doc": rec.doc,
                "target": target,
                "arguments": [list(i.arguments) for i in insts],
                "resps": [[list(x) if isinstance(x, tuple) else x for x in r] for r in resps],
                "filtered_resps": filtered,
                "filter": filt,
                "metrics": list(values),
                "doc_hash": doc_hash(rec.doc),
                "prompt_hash": sha256(insts[0].context),
                "target_hash": sha256(str(target)),
                **values,
            }
            if per_repeat:
                line["scores_per_repeat"] = per_repeat
            lines.append(dumps_line(line))
    return lines


def _filtered(
    ts: TaskSummary, filt: str, srow: dict[str, Any], insts: list[InstanceRecord], resps: list[list[Any]]
) -> list[Any]:
    """Each Instance's responses through the pipeline: a generation's filtered answer (every repeat's when
    they are kept), a log-likelihood's responses as they are."""
    if ts.output_type != "generate_until":
        return [[list(x) if isinstance(x, tuple) else x for x in r] for r in resps]
    first = _filtered_generation(ts, filt, srow.get("filtered"))
    out: list[Any] = [first if isinstance(first, list) else [first]]
    return out + [list(r) for r in resps[1 : len(insts)]]


def write_lm_eval_05_samples(run: ExportRun, out_dir: Path, date: str | None = None) -> list[Path]:
    """One ``samples_<task>_<date>.jsonl`` per task with scored samples, written into ``out_dir``."""
    reps = _repeats(run)
    return write_task_files(out_dir, date, ((ts.name, task_lines_05(run, ts, reps)) for ts in run.header.tasks))
