"""Write and read plan files: a canonical msgpack header map, then one map per record, stored per task as a
zstd frame by default (``plans/plan/storage.py``; FORMAT.md has the layout; records and their bytes:
``plans/plan/recordcodec.py``; hashes: ``plans/plan/integrity.py``).

Writing is atomic (temporary file, fsync, rename): a failed compile leaves nothing behind. Reading streams
records with bounded memory and, by default, verifies ``plan_hash`` and the record counts when the stream
ends, so a truncated or modified plan is an error, never silently shorter. ``PlanReader`` is the one plan
reader: the executor, the scorer's loaders and ``lmeval diff`` all open plans through it.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import IO, Any

import msgpack

from lmeval.common import write_atomic
from lmeval.plans.errors import PlanError
from lmeval.plans.limits import InputError, open_regular
from lmeval.plans.plan.canonical import canonical_bytes
from lmeval.plans.plan.identity import locations_in
from lmeval.plans.plan.integrity import check_plan_hash, header_hash_bytes, plan_hasher, task_hash
from lmeval.plans.plan.media import media_hashes
from lmeval.plans.plan.recordcodec import Record, decode_record, encode_records, record_maps
from lmeval.plans.plan.records import FORMAT, DocRecord, InstanceRecord, Plan, PlanHeader, request_hash_of
from lmeval.plans.plan.storage import (
    DEFAULT_CODEC,
    Layout,
    chunks,
    encode_body,
    hashed,
    open_layout,
    read_raw_header,
    task_chunks,
)
from lmeval.plans.plan.validate import checked, validate_header
from lmeval.plans.plan.verified import PlanCheck


def seal(
    header: PlanHeader, records: Iterable[Record], blobs: list[bytes] | None = None
) -> tuple[PlanHeader, list[bytes]]:
    """Encode records, fill in per-task byte spans, counts and ``plan_hash``; return header and record bytes.
    ``blobs``: the records' bytes when the producer has encoded them already (``encode_doc`` /
    ``encode_instance`` in stream order; the compiler does, to overlap encoding with tokenizing); they must
    equal what ``encode_records`` gives (tests check the compiler's)."""
    placed = locations_in(header.config)
    if placed:
        raise ValueError(f"a plan holds no locations (plans/plan/identity.py), but its config has {', '.join(placed)}")
    if blobs is None:
        blobs, recs = encode_records(map(with_derived, records))
    else:
        recs = list(records)
        if len(recs) != len(blobs):
            raise ValueError(f"{len(recs)} records but {len(blobs)} encoded records")
    blobs_joined = b"".join(blobs)
    spans: dict[str, list[int]] = {}
    pos = 0
    n_docs = n_inst = 0
    last_task: str | None = None
    for blob, rec in zip(blobs, recs, strict=True):
        if rec.task != last_task and rec.task in spans:
            raise ValueError(f"plan records of task {rec.task!r} are not contiguous")
        last_task = rec.task
        span = spans.setdefault(rec.task, [pos, 0])
        span[1] = pos + len(blob) - span[0]
        pos += len(blob)
        if isinstance(rec, DocRecord):
            n_docs += 1
        else:
            n_inst += 1
    unknown = set(spans) - {t.name for t in header.tasks}
    if unknown:
        raise ValueError(f"plan records name tasks missing from the header: {sorted(unknown)}")
    extra = dict(header.extra)
    extra["spans"] = {t.name: spans.get(t.name, [pos, 0]) for t in header.tasks}
    tasks = [replace(t, task_hash=task_hash(t, spans.get(t.name), blobs_joined)) for t in header.tasks]
    sealed = replace(header, tasks=tasks, n_docs=n_docs, n_instances=n_inst, extra=extra, plan_hash="")
    h = hashlib.sha256(header_hash_bytes(sealed.to_dict()))
    for b in blobs:
        h.update(b)
    return replace(sealed, plan_hash=h.hexdigest()), blobs


def with_derived(rec: Record) -> Record:
    """``rec`` with the fields derived from its content filled in where a producer left them empty
    (``doc_hash``, ``request_hash``: what ``plans/plan/validate.py`` recomputes on every read)."""
    if isinstance(rec, DocRecord):
        if rec.doc_hash:
            return rec
        return replace(rec, doc_hash=hashlib.sha256(canonical_bytes(rec.doc)).hexdigest())
    if rec.request_hash:
        return rec
    h = request_hash_of(
        rec.request_type,
        rec.context,
        rec.continuation,
        rec.generation_kwargs,
        rec.context_ids,
        rec.continuation_ids,
        media_hashes(rec.media),
    )
    return replace(rec, request_hash=h)


def write_plan(
    path: str | os.PathLike[str], header: PlanHeader, records: Iterable[Record], codec: str = DEFAULT_CODEC
) -> PlanHeader:
    """Write a plan atomically to ``path`` and return its sealed header (with ``plan_hash``). ``codec``:
    ``"zstd"`` (default) or ``"none"``; the header and every hash are the same either way."""
    sealed, blobs = seal(header, records)
    write_sealed(path, sealed, blobs, codec)
    return sealed


def write_sealed(
    path: str | os.PathLike[str], sealed: PlanHeader, blobs: list[bytes], codec: str = DEFAULT_CODEC
) -> Path:
    """Write what ``seal`` returned, atomically (temporary file, fsync, rename); nothing is left on failure."""
    head = canonical_bytes(sealed.to_dict())
    storage, frames = encode_body(sealed.to_dict(), blobs, codec)

    def write(f: IO[bytes]) -> None:
        f.write(head)
        f.write(storage)
        for b in frames:
            f.write(b)

    return write_atomic(path, write)


def plan_bytes(header: PlanHeader, records: Iterable[Record], codec: str = DEFAULT_CODEC) -> tuple[PlanHeader, bytes]:
    """The exact bytes ``write_plan`` would write (for tests and in-memory use)."""
    sealed, blobs = seal(header, records)
    storage, frames = encode_body(sealed.to_dict(), blobs, codec)
    return sealed, canonical_bytes(sealed.to_dict()) + storage + b"".join(frames)


def _parse_header(raw: dict[str, Any], path: str) -> PlanHeader:
    """The typed header, its invariants checked (``plans/plan/validate.py``)."""
    try:
        header = PlanHeader.from_dict(raw)
    except (KeyError, TypeError, AttributeError, ValueError) as e:
        raise PlanError(f"{path}: malformed plan header ({type(e).__name__}: {e})") from None
    validate_header(header, path)
    return header


def span_order(layout: Layout) -> list[str]:
    """The header's tasks in the order of their spans in the record stream (the order records come in)."""
    return [name for name, _ in sorted(layout.spans.items(), key=lambda kv: (kv[1][0], kv[1][1] > 0))]


def unpack_stream(src: Iterable[bytes], path: str, what: str = "plan") -> Iterator[Any]:
    """The msgpack objects of a record byte stream given in chunks (bounded memory: one chunk and one
    record at a time). A record cut short at the end is an error, never silently dropped."""
    unpacker = msgpack.Unpacker(raw=False, strict_map_key=True)
    fed = 0
    try:
        for chunk in src:
            unpacker.feed(chunk)
            fed += len(chunk)
            yield from unpacker
    except PlanError:
        raise
    except Exception as e:
        raise PlanError(f"{path}: corrupt {what} record stream ({type(e).__name__})") from None
    if unpacker.tell() != fed:
        raise PlanError(f"{path}: truncated or corrupt {what} record stream (its last record is cut short)")


class PlanReader:
    """Stream a plan: ``header`` at once, records on iteration, hash checked at the end of the stream.
    Compressed and uncompressed plans read the same (``plans/plan/storage.py``). ``layout`` says where each task's
    frames lie (for per-task reading, ``plans.integrity``'s checks and comparisons)."""

    def __init__(self, path: str | os.PathLike[str], verify: bool = True) -> None:
        self.path = str(path)
        self.verify = verify
        self._f, self.layout = open_layout(self.path)
        try:
            self.header = _parse_header(self.layout.raw, self.path)
        except BaseException:
            self._f.close()
            raise

    @property
    def codec(self) -> str:
        """How the records are stored: ``"zstd"`` or ``"none"``."""
        return self.layout.codec

    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> PlanReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __iter__(self) -> Iterator[Record]:
        return self.records()

    def records(self, task: str | None = None) -> Iterator[Record]:
        """All records in file order, or only those of ``task`` (its frames alone; no hash check then)."""
        where = self.path if task is None else _where(self.path, task)
        for obj in self.record_maps(task):
            yield decode_record(obj, where)

    def record_maps(self, task: str | None = None) -> Iterator[dict[str, Any]]:
        """``records`` as the stored maps (shared contexts restored, kinds checked, not decoded into records):
        all, with the hash and counts checked at the end when ``verify``, or only those of ``task``, each checked
        to belong to it."""
        if task is not None:
            where = _where(self.path, task)
            objs = record_maps(unpack_stream(task_chunks(self._f, self.layout, task), where), where, task)
            yield from checked(objs, self.header, self.path, None, only=task)
            return
        src: Iterable[bytes] = chunks(self._f, self.layout)
        h = plan_hasher(self.layout) if self.verify else None
        if h is not None:
            src = hashed(src, h)
        n_docs = n_inst = 0
        check = PlanCheck(self._f, self.path)  # the contract check, once per plan content (plans/plan/verified.py)
        try:
            objs = record_maps(unpack_stream(src, self.path), self.path)
            for obj in check.records(objs, self.header, span_order(self.layout)):
                if obj["kind"] == "doc":
                    n_docs += 1
                else:
                    n_inst += 1
                yield obj
        except BaseException:
            if h is not None:
                h.close()
            raise
        if h is None:
            return
        digest = h.hexdigest()
        if (n_docs, n_inst) != (self.header.n_docs, self.header.n_instances):
            raise PlanError(
                f"{self.path}: truncated or modified plan: {n_docs} docs and {n_inst} instances, "
                f"header says {self.header.n_docs} and {self.header.n_instances}"
            )
        check_plan_hash(self.layout, digest)
        check.passed()


def _where(path: str, task: str) -> str:
    return f"{path}: task {task!r}"


def peek_header(path: str) -> dict[str, Any]:
    """A plan file's header map as stored, checked only to be an lmeval plan, of any format version: to explain
    a version mismatch before ``PlanReader`` refuses the file."""
    try:
        f = open_regular(path, what="plan")
    except InputError as e:
        raise PlanError(str(e)) from None
    except OSError as e:
        raise PlanError(f"{path}: cannot open plan ({e.strerror})") from None
    with f:
        raw, _ = read_raw_header(f, path)
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise PlanError(f"{path}: not an lmeval plan (no '{FORMAT}' header)")
    return raw


def recode_plan(src: str | os.PathLike[str], dst: str | os.PathLike[str], codec: str) -> PlanHeader:
    """Rewrite a plan with another codec (``"zstd"`` or ``"none"``): same header, same hashes, hash-verified."""
    with PlanReader(src) as r:
        header, records = r.header, list(r)
    sealed, blobs = seal(header, records)
    if sealed.plan_hash != header.plan_hash:  # pragma: no cover - seal is deterministic
        raise PlanError(f"{src}: re-sealing the plan gives another plan_hash")
    write_sealed(dst, sealed, blobs, codec)
    return sealed


def read_header(path: str | os.PathLike[str]) -> PlanHeader:
    """Only the header (bounded memory, no hash check)."""
    with PlanReader(path, verify=False) as r:
        return r.header


def read_plan(path: str | os.PathLike[str], verify: bool = True) -> Plan:
    """A whole plan in memory, hash verified."""
    with PlanReader(path, verify=verify) as r:
        docs: list[DocRecord] = []
        instances: list[InstanceRecord] = []
        for rec in r:
            if isinstance(rec, DocRecord):
                docs.append(rec)
            else:
                instances.append(rec)
        return Plan(header=r.header, docs=docs, instances=instances)
