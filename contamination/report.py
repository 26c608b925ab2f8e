"""The contamination report: ``REPORT_DIR/summary.json``, ``documents.parquet`` and ``locations.parquet``.

- ``documents.parquet``: one row per plan document: task, doc_id, n_ngrams (distinct n-grams of its checked
  fields), n_matched (of those, found in the corpus), fraction, contaminated.
- ``locations.parquet``: task, doc_id, file, offset (byte offset of the unit; -1 for Parquet), row (line or
  row number), at most ``check.MAX_LOCATIONS`` per document.
- ``summary.json``: format, plan_hash, ngram, fields, min_fraction, the corpus (files, bytes, units, skipped
  files and units with reasons) and per task: checked, contaminated, contaminated doc ids.

``excluded(REPORT_DIR, plan_hash)`` is what ``lmeval score --exclude`` reads: task -> contaminated doc ids.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from lmeval.common import json_text, write_atomic
from lmeval.contamination.check import Matches
from lmeval.contamination.corpus import CorpusStats
from lmeval.contamination.errors import ContaminationError
from lmeval.contamination.plantext import PlanIndex

REPORT_FORMAT = "lmeval-contamination"
SUMMARY = "summary.json"
DOCUMENTS = "documents.parquet"
LOCATIONS = "locations.parquet"
REPORT_FILES = (DOCUMENTS, LOCATIONS, SUMMARY)  # what ``write_contamination_report`` writes into its folder


@dataclass
class TaskCount:
    task: str
    checked: int
    contaminated: list[int]


@dataclass
class Report:
    summary: dict[str, Any]
    documents: pl.DataFrame
    locations: pl.DataFrame

    @property
    def tasks(self) -> list[TaskCount]:
        return [TaskCount(t, v["checked"], v["contaminated_ids"]) for t, v in self.summary["tasks"].items()]


def build_contamination_report(
    index: PlanIndex, matches: Matches, stats: CorpusStats, n: int, fields: tuple[str, ...], min_fraction: float
) -> Report:
    tasks, ids, totals, matched, fracs, flags = [], [], [], [], [], []
    per_task: dict[str, dict[str, Any]] = {t.name: {"checked": 0, "contaminated_ids": []} for t in index.header.tasks}
    for i, (task, doc_id) in enumerate(index.docs):
        total = index.n_grams[i]
        hit = len(matches.grams.get(i, ()))
        frac = hit / total if total else 0.0
        bad = hit > 0 and frac >= min_fraction
        tasks.append(task)
        ids.append(doc_id)
        totals.append(total)
        matched.append(hit)
        fracs.append(frac)
        flags.append(bad)
        per_task[task]["checked"] += 1
        if bad:
            per_task[task]["contaminated_ids"].append(doc_id)
    for v in per_task.values():
        v["contaminated"] = len(v["contaminated_ids"])
    documents = pl.DataFrame(
        {"task": tasks, "doc_id": ids, "n_ngrams": totals, "n_matched": matched, "fraction": fracs,
         "contaminated": flags},
        schema={"task": pl.String, "doc_id": pl.Int64, "n_ngrams": pl.Int64, "n_matched": pl.Int64,
                "fraction": pl.Float64, "contaminated": pl.Boolean},
    )  # fmt: skip
    locs = [loc for d in sorted(matches.locations) for loc in matches.locations[d]]
    locations = pl.DataFrame(
        {"task": [index.docs[x.doc][0] for x in locs], "doc_id": [index.docs[x.doc][1] for x in locs],
         "file": [x.file for x in locs], "offset": [x.offset for x in locs], "row": [x.row for x in locs]},
        schema={"task": pl.String, "doc_id": pl.Int64, "file": pl.String, "offset": pl.Int64, "row": pl.Int64},
    )  # fmt: skip
    summary = {
        "format": REPORT_FORMAT,
        "version": 1,
        "plan_hash": index.header.plan_hash,
        "ngram": n,
        "fields": list(fields),
        "min_fraction": min_fraction,
        "corpus": {
            "files": stats.files,
            "bytes": stats.bytes,
            "units": stats.units,
            "skipped_files": dict(sorted(stats.skipped_files.items())),
            "skipped_units": dict(sorted(stats.skipped_units.items())),
        },
        "tasks": per_task,
    }
    return Report(summary, documents, locations)


def write_contamination_report(report: Report, out_dir: str | Path) -> Path:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / DOCUMENTS, lambda f: report.documents.write_parquet(f))
    write_atomic(out / LOCATIONS, lambda f: report.locations.write_parquet(f))
    text = json_text(report.summary, indent=1, sort_keys=True, ensure_ascii=True).encode()
    write_atomic(out / SUMMARY, lambda f: f.write(text))
    return out


def excluded(report_dir: str | Path, plan_hash: str) -> dict[str, list[int]]:
    """Task -> contaminated doc ids of a report made from plan ``plan_hash``; one-line errors otherwise."""
    path = Path(report_dir) / SUMMARY
    try:
        with open(path, "rb") as f:
            raw = f.read(64 << 20)
        summary = json.loads(raw)
    except OSError as e:
        raise ContaminationError(f"{path}: cannot read contamination report ({e.strerror or e})") from None
    except ValueError:
        raise ContaminationError(f"{path}: not a contamination report (malformed JSON)") from None
    if (
        not isinstance(summary, dict)
        or summary.get("format") != REPORT_FORMAT
        or not isinstance(summary.get("tasks"), dict)
    ):
        raise ContaminationError(f"{path}: not a contamination report (no '{REPORT_FORMAT}' format)")
    if summary.get("plan_hash") != plan_hash:
        raise ContaminationError(
            f"{path}: report of plan {str(summary.get('plan_hash'))[:12]}, but the results are of plan {plan_hash[:12]}"
        )
    out: dict[str, list[int]] = {}
    for task, v in summary["tasks"].items():
        ids = v.get("contaminated_ids") if isinstance(v, dict) else None
        if not isinstance(ids, list) or not all(type(i) is int for i in ids):
            raise ContaminationError(f"{path}: task {task}: field contaminated_ids is not a list of doc ids")
        out[task] = ids
    return out
