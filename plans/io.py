"""Write and read plan files: a canonical msgpack header map, then one map per record, stored per task as a
zstd frame by default (``plans/storage.py``; FORMAT.md has the layout).

Writing is atomic (temporary file, fsync, rename): a failed compile leaves nothing behind. Reading streams
records with bounded memory and, by default, verifies ``plan_hash`` and the record counts when the stream
ends, so a truncated or modified plan is an error, never silently shorter.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator
from dataclasses import fields, replace
from pathlib import Path
from typing import IO, Any

import msgpack

from lmeval.common.atomic import write_atomic
from lmeval.plans.canonical import canonical_bytes, normalize, pack_normalized
from lmeval.plans.errors import PlanError
from lmeval.plans.identity import locations_in
from lmeval.plans.records import DocRecord, InstanceRecord, Plan, PlanHeader, TaskSummary
from lmeval.plans.storage import DEFAULT_CODEC, BackgroundHash, chunks, encode_body, hashed, open_layout, task_chunks

Record = DocRecord | InstanceRecord


def _header_hash_bytes(header: dict[str, Any]) -> bytes:
    body = {k: v for k, v in header.items() if k != "plan_hash"}
    return canonical_bytes(body)


SHARED_CONTEXT = "shared_context"


def record_map(rec: Record, prev: InstanceRecord | None) -> dict[str, Any]:
    """The map stored for a record. An Instance whose context and context ids equal those of the Instance
    just before it (same task and doc: the choices of a multiple-choice doc) stores neither and carries
    ``shared_context: true`` instead; readers restore them (``expand_record``)."""
    d = rec.to_dict()
    if (
        isinstance(rec, InstanceRecord)
        and prev is not None
        and prev.doc_id == rec.doc_id
        and prev.task == rec.task
        and prev.context == rec.context
        and prev.context_ids == rec.context_ids
    ):
        del d["context"], d["context_ids"]
        d[SHARED_CONTEXT] = True
    return d


def expand_record(obj: dict[str, Any], prev_instance: dict[str, Any] | None) -> dict[str, Any]:
    """Undo ``record_map``'s context sharing on a raw record map (``prev_instance``: the previous raw
    instance map of the stream, already expanded). Raises PlanError-worthy ValueError when it cannot."""
    if obj.get(SHARED_CONTEXT) is True:
        if (
            prev_instance is None
            or prev_instance.get("doc_id") != obj.get("doc_id")
            or prev_instance.get("task") != obj.get("task")
        ):
            raise ValueError("shared-context instance without a preceding instance of the same doc")
        obj = dict(obj)
        del obj[SHARED_CONTEXT]
        obj["context"] = prev_instance["context"]
        obj["context_ids"] = prev_instance["context_ids"]
    return obj


def _ints(ids: list[int] | None) -> list[int] | None:
    if ids is None or set(map(type, ids)) <= {int}:
        return ids
    return normalize(ids)  # type: ignore[no-any-return]


def encode_instance(rec: InstanceRecord, prev: InstanceRecord | None) -> bytes:
    """``canonical_bytes(record_map(rec, prev))`` without the generic walk: the keys in sorted order."""
    shared = (
        prev is not None
        and prev.doc_id == rec.doc_id
        and prev.task == rec.task
        and prev.context == rec.context
        and prev.context_ids == rec.context_ids
    )
    if not (
        type(rec.context) is str
        and (rec.continuation is None or type(rec.continuation) is str)
        and type(rec.doc_id) is int
        and type(rec.idx) is int
        and type(rec.repeats) is int
        and type(rec.instance_id) is str
        and type(rec.request_hash) is str
        and type(rec.request_type) is str
        and type(rec.task) is str
        and type(rec.kind) is str
    ):
        return canonical_bytes(record_map(rec, prev))
    d: dict[str, Any] = {}
    if not shared:
        d["context"] = rec.context
        d["context_ids"] = _ints(rec.context_ids)
    d["continuation"] = rec.continuation
    d["continuation_ids"] = _ints(rec.continuation_ids)
    d["doc_id"] = rec.doc_id
    d["generation_kwargs"] = None if rec.generation_kwargs is None else normalize(rec.generation_kwargs)
    d["idx"] = rec.idx
    d["instance_id"] = rec.instance_id
    d["kind"] = rec.kind
    d["repeats"] = rec.repeats
    d["request_hash"] = rec.request_hash
    d["request_type"] = rec.request_type
    if shared:
        d[SHARED_CONTEXT] = True
    d["task"] = rec.task
    return pack_normalized(d)


_DOC_FIELDS = sorted(f.name for f in fields(DocRecord))
_DOC_KEY = pack_normalized("doc")
_SPLICE = _DOC_FIELDS[:2] == ["choices", "doc"] and len(_DOC_FIELDS) <= 15  # one-byte fixmap header


def encode_doc(rec: DocRecord, doc_bytes: bytes | None = None) -> bytes:
    """``canonical_bytes(rec.to_dict())``. ``doc_bytes``: ``canonical_bytes(rec.doc)`` when the caller
    already has them; they are spliced in (a msgpack map is its header followed by its key/value packs in key
    order, and "doc" sorts second, after "choices") instead of normalizing the document again."""
    if doc_bytes is None or not _SPLICE:  # (not _SPLICE: a DocRecord schema change; stay correct, go slower)
        return canonical_bytes(rec.to_dict())
    d = rec.to_dict()
    del d["doc"]
    rest = normalize(d)
    head = pack_normalized({"choices": rest.pop("choices")})  # fixmap header + the "choices" pair
    tail = pack_normalized(rest)  # the pairs after "doc", in sorted order
    return bytes([0x80 | len(_DOC_FIELDS)]) + head[1:] + _DOC_KEY + doc_bytes + tail[1:]


def encode_records(records: Iterable[Record]) -> tuple[list[bytes], list[Record]]:
    """Each record's canonical bytes, as stored (choices of a doc share their context, see ``record_map``)."""
    out: list[bytes] = []
    recs: list[Record] = []
    prev: InstanceRecord | None = None
    for r in records:
        if isinstance(r, InstanceRecord):
            out.append(encode_instance(r, prev))
            prev = r
        else:
            out.append(encode_doc(r))
            prev = None
        recs.append(r)
    return out, recs


def seal(
    header: PlanHeader, records: Iterable[Record], blobs: list[bytes] | None = None
) -> tuple[PlanHeader, list[bytes]]:
    """Encode records, fill in per-task byte spans, counts and ``plan_hash``; return header and record bytes.
    ``blobs``: the records' bytes when the producer has encoded them already (``encode_doc`` /
    ``encode_instance`` in stream order; the compiler does, to overlap encoding with tokenizing); they must
    equal what ``encode_records`` gives (tests check the compiler's)."""
    placed = locations_in(header.config)
    if placed:
        raise ValueError(f"a plan holds no locations (plans/identity.py), but its config has {', '.join(placed)}")
    if blobs is None:
        blobs, recs = encode_records(records)
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
    h = hashlib.sha256(_header_hash_bytes(sealed.to_dict()))
    for b in blobs:
        h.update(b)
    return replace(sealed, plan_hash=h.hexdigest()), blobs


def task_hash(task: TaskSummary, span: list[int] | None, records: bytes) -> str:
    """sha256 over what defines a task's part of the plan: its scoring config and its records."""
    h = hashlib.sha256(
        canonical_bytes(
            {
                "name": task.name,
                "output_type": task.output_type,
                "num_fewshot": task.num_fewshot,
                "version": task.version,
                "metric_list": task.metric_list,
                "filter_list": task.filter_list,
                "config": task.config,
            }
        )
    )
    if span is not None:
        h.update(records[span[0] : span[0] + span[1]])
    return h.hexdigest()


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


class _Expander:
    """Restores shared contexts while records stream past."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.prev: dict[str, Any] | None = None

    def __call__(self, obj: Any) -> Any:
        if not isinstance(obj, dict):
            return obj
        if obj.get("kind") != "instance":
            self.prev = None
            return obj
        try:
            obj = expand_record(obj, self.prev)
        except ValueError as e:
            raise PlanError(f"{self.path}: corrupt plan record stream ({e})") from None
        self.prev = obj
        return obj


def _decode_record(obj: Any, path: str) -> Record:
    if not isinstance(obj, dict):
        raise PlanError(f"{path}: malformed plan record (not a map)")
    kind = obj.get("kind")
    try:
        if kind == "doc":
            return DocRecord.from_dict(obj)
        if kind == "instance":
            return InstanceRecord.from_dict(obj)
    except TypeError as e:
        raise PlanError(f"{path}: malformed {kind} record: {e}") from None
    raise PlanError(f"{path}: unknown plan record kind {kind!r}")


def _parse_header(raw: dict[str, Any], path: str) -> PlanHeader:
    try:
        return PlanHeader.from_dict(raw)
    except (KeyError, TypeError, AttributeError, ValueError) as e:
        raise PlanError(f"{path}: malformed plan header ({type(e).__name__}: {e})") from None


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
    Compressed and uncompressed plans read the same (``plans/storage.py``)."""

    def __init__(self, path: str | os.PathLike[str], verify: bool = True) -> None:
        self.path = str(path)
        self.verify = verify
        self._f, self._layout = open_layout(self.path)
        self._raw_header: dict[str, Any] = self._layout.raw
        try:
            self.header = _parse_header(self._raw_header, self.path)
        except BaseException:
            self._f.close()
            raise

    @property
    def codec(self) -> str:
        """How the records are stored: ``"zstd"`` or ``"none"``."""
        return self._layout.codec

    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> PlanReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __iter__(self) -> Iterator[Record]:
        return self.records()

    def records(self, task: str | None = None) -> Iterator[Record]:
        """All records in file order, or only those of ``task`` (its frame alone; no hash check then)."""
        if task is not None:
            yield from self._task_records(task)
            return
        h = BackgroundHash(_header_hash_bytes(self._raw_header))
        src: Iterable[bytes] = chunks(self._f, self._layout)
        if self.verify:
            src = hashed(src, h)
        n_docs = n_inst = 0
        expand = _Expander(self.path)
        done = False
        try:
            for obj in unpack_stream(src, self.path):
                rec = _decode_record(expand(obj), self.path)
                if isinstance(rec, DocRecord):
                    n_docs += 1
                else:
                    n_inst += 1
                yield rec
            done = True
        finally:
            if not done:
                h.close()
        digest = h.hexdigest()
        if self.verify:
            if (n_docs, n_inst) != (self.header.n_docs, self.header.n_instances):
                raise PlanError(
                    f"{self.path}: truncated or modified plan: {n_docs} docs and {n_inst} instances, "
                    f"header says {self.header.n_docs} and {self.header.n_instances}"
                )
            if digest != self.header.plan_hash:
                raise PlanError(f"{self.path}: plan hash mismatch: the file was modified or truncated")

    def _task_records(self, task: str) -> Iterator[Record]:
        expand = _Expander(self.path)
        for obj in unpack_stream(task_chunks(self._f, self._layout, task), self.path):
            yield _decode_record(expand(obj), self.path)

    def task_bytes(self, task: str) -> bytes:
        """The raw canonical (uncompressed) bytes of one task's records."""
        return b"".join(task_chunks(self._f, self._layout, task))


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


def task_summary(header: PlanHeader, name: str) -> TaskSummary:
    return header.task(name)
