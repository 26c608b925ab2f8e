"""What the scorer needs from a plan: header, and per task its documents (gold, choices) and instances.

Reading a plan of millions of records costs seconds (msgpack decoding), so the first scoring of a
results directory writes a *scoring index* next to its results (``.score-index-<plan_hash>/``: two
Parquet files per plan, docs and instances) and later scorings read that instead. The index is keyed by
content, never by file size or modification time: it is used only when the plan file's content still hashes
to the ``plan_hash`` the index was built for (every scoring hashes the whole file, as ``plans.io.PlanReader``
verifies it; a same-size edit with its mtime restored is an error, not a stale index). The instances' key
columns (``plans.rowcheck.KEY_COLUMNS``) are indexed too: every result row is checked against them.
Documents themselves (``DocRecord.doc``) are not indexed: the few scoring paths that need them (user
``process_results``, custom filters, multi_choice_regex) read them from the plan's task span on demand.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from lmeval.common import file_sha256, os_error_of
from lmeval.plans import (
    DocRecord,
    PlanCheck,
    PlanError,
    PlanHeader,
    PlanReader,
    chunks,
    hashed,
    open_layout,
    plan_hasher,
    read_header,
    record_maps,
    reraised_as,
    span_order,
    unpack_stream,
    verify_plan,
)
from lmeval.scorer.errors import ScoreError

INDEX_VERSION = 4  # 4: built only from plans that passed plans/plan/validate.py
DOC_SCHEMA: dict[str, Any] = {
    "doc_id": pl.Int64,
    "target_str": pl.String,  # the target when it is a str
    "target_int": pl.Int64,  # the target when it is an int (not bool)
    "target_json": pl.String,  # JSON of the target otherwise (lists, floats, bools, None)
    "choices": pl.List(pl.String),
}
INST_SCHEMA: dict[str, Any] = {  # the key columns of plans.rowcheck (task: the TaskDocs's)
    "doc_id": pl.Int64,
    "idx": pl.Int64,
    "instance_id": pl.String,
    "request_type": pl.String,
    "request_hash": pl.String,
}


@dataclass
class TaskDocs:
    task: str
    plan_path: str
    docs: pl.DataFrame  # DOC_SCHEMA, sorted by doc_id
    instances: pl.DataFrame  # INST_SCHEMA
    _records: dict[int, DocRecord] | None = field(default=None, repr=False)
    _raw: dict[int, dict[str, Any]] | None = field(default=None, repr=False)  # decoded doc maps, if kept

    def records(self, doc_ids: list[int] | None = None) -> list[DocRecord]:
        """Full DocRecords (with ``doc``), in doc_id order; read from the plan when not in memory."""
        if self._records is None and self._raw is not None:
            self._records = {i: DocRecord.from_dict(o) for i, o in self._raw.items()}
            self._raw = None
        if self._records is None:
            recs: dict[int, DocRecord] = {}
            with PlanReader(self.plan_path, verify=False) as r:
                for rec in r.records(self.task):
                    if isinstance(rec, DocRecord):
                        recs[rec.doc_id] = rec
            self._records = recs
        ids = sorted(self._records) if doc_ids is None else doc_ids
        return [self._records[i] for i in ids]

    def first_target(self) -> Any:
        if self.docs.height == 0:
            return None
        return target_of(self.docs.row(0, named=True))


def target_of(row: dict[str, Any]) -> Any:
    if row["target_str"] is not None:
        return row["target_str"]
    if row["target_int"] is not None:
        return row["target_int"]
    return json.loads(row["target_json"]) if row["target_json"] is not None else None


@dataclass
class PlanData:
    path: str
    header: PlanHeader
    tasks: dict[str, TaskDocs]


_INDEX_FILES = ("docs.parquet", "instances.parquet")


def _stamp(plan_hash: str, idx: Path) -> dict[str, Any]:
    """What an index is valid for: the plan's content hash, and its own files' content hashes."""
    files = {name: file_sha256(idx / name) for name in _INDEX_FILES}
    return {"version": INDEX_VERSION, "plan_hash": plan_hash, "files": files}


def _check_content(path: str, header: PlanHeader) -> None:
    """The plan file's content hashes to its header's ``plan_hash`` (streamed, compressed or not: the hash is
    over the uncompressed records; no record is decoded)."""
    with reraised_as(ScoreError):
        f, layout = open_layout(path)
        f.close()
        if layout.raw.get("plan_hash") != header.plan_hash:
            raise PlanError(f"{path}: plan hash mismatch: the file was modified or truncated")
        verify_plan(layout)


def load(path: str, index_dir: str | None = None) -> PlanData:
    """The plan's scoring data; ``index_dir`` (a results directory) holds the scoring index, if given."""
    with reraised_as(ScoreError):
        header = read_header(path)
    idx = Path(index_dir) / f".score-index-{header.plan_hash[:16]}" if index_dir else None
    if idx is not None:
        cached = _read_index(idx, path, header)
        if cached is not None:
            return cached
    data = _read_plan(path, header)
    if idx is not None:
        _write_index(idx, path, data)
    return data


def _read_plan(path: str, header: PlanHeader) -> PlanData:
    cols: dict[str, dict[str, list[Any]]] = {
        t.name: {
            "doc_id": [],
            "target": [],
            "choices": [],
            "rec": [],
            "i_doc": [],
            "i_idx": [],
            "i_id": [],
            "i_rt": [],
            "i_rh": [],
        }
        for t in header.tasks
    }
    n_docs = n_inst = 0
    try:
        f, layout = open_layout(path)
        with f:
            h = plan_hasher(layout)
            check = PlanCheck(f, path)  # the contract check, once per plan content (plans/plan/verified.py)
            try:
                # one streamed pass (compressed or not): hash every record byte, collect what scoring needs
                objs = record_maps(unpack_stream(hashed(chunks(f, layout), h), path), path)
                for obj in check.records(objs, header, span_order(layout)):  # the plan's invariants
                    c = cols.get(obj["task"])
                    if c is None:
                        raise ScoreError(f"{path}: record of task {obj['task']!r} not in the plan header")
                    kind = obj["kind"]
                    if kind == "doc":
                        n_docs += 1
                        c["doc_id"].append(obj["doc_id"])
                        c["target"].append(obj["target"])
                        c["choices"].append(obj.get("choices"))
                        c["rec"].append(obj)
                    elif kind == "instance":
                        n_inst += 1
                        c["i_doc"].append(obj["doc_id"])
                        c["i_idx"].append(obj["idx"])
                        c["i_id"].append(obj["instance_id"])
                        c["i_rt"].append(obj["request_type"])
                        c["i_rh"].append(obj["request_hash"])
                    else:
                        raise ScoreError(f"{path}: unknown plan record kind {kind!r}")
                digest = h.hexdigest()
            finally:
                h.close()
    except PlanError as e:
        raise ScoreError(str(e)) from None
    except (KeyError, TypeError, ValueError) as e:
        raise ScoreError(f"{path}: corrupt plan record stream ({type(e).__name__})") from None
    if digest != header.plan_hash:
        raise ScoreError(f"{path}: plan hash mismatch: the file was modified or truncated")
    if (n_docs, n_inst) != (header.n_docs, header.n_instances):
        raise ScoreError(
            f"{path}: truncated or modified plan: {n_docs} docs and {n_inst} instances, "
            f"header says {header.n_docs} and {header.n_instances}"
        )
    check.passed()
    tasks = {name: _task_docs(path, name, c) for name, c in cols.items()}
    return PlanData(path=path, header=header, tasks=tasks)


def _task_docs(path: str, name: str, c: dict[str, list[Any]]) -> TaskDocs:
    """One task's documents and Instances as the scorer's frames (``DOC_SCHEMA``, ``INST_SCHEMA``)."""
    targets = c["target"]
    t_str = [t if type(t) is str else None for t in targets]
    t_int = [t if type(t) is int else None for t in targets]
    t_json = [None if type(t) in (str, int) else json.dumps(t) for t in targets]
    choices = c["choices"]
    if not all(ch is None or all(type(x) is str for x in ch) for ch in choices):
        raise ScoreError(f"{path}: task {name}: choices must be lists of strings")
    docs = pl.DataFrame(
        {
            "doc_id": c["doc_id"],
            "target_str": t_str,
            "target_int": t_int,
            "target_json": t_json,
            "choices": choices,
        },
        schema=DOC_SCHEMA,
    )
    if not docs["doc_id"].is_sorted():
        docs = docs.sort("doc_id")
    inst = pl.DataFrame(
        {
            "doc_id": c["i_doc"],
            "idx": c["i_idx"],
            "instance_id": c["i_id"],
            "request_type": c["i_rt"],
            "request_hash": c["i_rh"],
        },
        schema=INST_SCHEMA,
    ).sort(["doc_id", "idx"])
    return TaskDocs(name, path, docs, inst, _raw={o["doc_id"]: o for o in c["rec"]})


def _read_index(idx: Path, path: str, header: PlanHeader) -> PlanData | None:
    try:
        stamp = json.loads((idx / "stamp.json").read_text(encoding="utf-8"))
        if stamp != _stamp(header.plan_hash, idx):
            return None
        docs = pl.read_parquet(idx / "docs.parquet")
        inst = pl.read_parquet(idx / "instances.parquet")
    except (OSError, ValueError, pl.exceptions.PolarsError):
        return None
    _check_content(path, header)
    tasks = {}
    for t in header.tasks:
        tasks[t.name] = TaskDocs(
            t.name,
            path,
            docs.filter(pl.col("task") == t.name).drop("task").cast(DOC_SCHEMA),  # type: ignore[arg-type]
            inst.filter(pl.col("task") == t.name).drop("task").cast(INST_SCHEMA),  # type: ignore[arg-type]
        )
    return PlanData(path=path, header=header, tasks=tasks)


def _write_index(idx: Path, path: str, data: PlanData) -> None:
    tmp: Path | None = None
    try:
        idx.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".score-index-", dir=idx.parent))
        docs = [td.docs.with_columns(task=pl.lit(n)) for n, td in data.tasks.items()]
        inst = [td.instances.with_columns(task=pl.lit(n)) for n, td in data.tasks.items()]
        pl.concat(docs).write_parquet(tmp / "docs.parquet")
        pl.concat(inst).write_parquet(tmp / "instances.parquet")
        (tmp / "stamp.json").write_text(json.dumps(_stamp(data.header.plan_hash, tmp)), encoding="utf-8")
        if idx.exists():
            shutil.rmtree(idx, ignore_errors=True)
        os.replace(tmp, idx)
    except Exception as e:  # noqa: BLE001 - the index only saves time; a read-only or full directory still scores
        if os_error_of(e) is None:
            raise
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
