"""Opening plans for diff: raw header, byte layout checks, hash verification and per-task record streams.

Diff reads plans at the byte level so that identical tasks are skipped without decoding a record: the header's
``extra["spans"]`` locate each task's records, whose bytes can be compared or streamed on their own.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import IO, Any

import msgpack

from plans.canonical import canonical_bytes
from plans.errors import PlanError
from plans.io import expand_record
from plans.records import FORMAT, VERSION, PlanHeader

_CHUNK = 1 << 22


@dataclass
class PlanFile:
    path: str
    raw: dict[str, Any]  # the header exactly as stored
    header: PlanHeader
    records_start: int
    size: int
    spans: dict[str, tuple[int, int]]


def _raw_header(path: str) -> tuple[Any, int, int]:
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as e:
        raise PlanError(f"{path}: cannot open plan ({e.strerror})") from None
    with f:
        try:
            size = os.fstat(f.fileno()).st_size
            unpacker = msgpack.Unpacker(f, raw=False, read_size=1 << 20, strict_map_key=True)
            obj = unpacker.unpack()
        except msgpack.OutOfData:
            raise PlanError(f"{path}: empty or truncated plan (no complete header)") from None
        except OSError as e:
            raise PlanError(f"{path}: cannot read plan ({e.strerror})") from None
        except Exception:
            raise PlanError(f"{path}: not an lmeval plan (cannot decode a msgpack header)") from None
        return obj, unpacker.tell(), size


def _version_of(obj: Any, path: str) -> Any:
    if not isinstance(obj, dict) or obj.get("format") != FORMAT:
        raise PlanError(f"{path}: not an lmeval plan (no '{FORMAT}' header)")
    return obj.get("version")


def open_pair(old: str, new: str) -> tuple[PlanFile, PlanFile]:
    """Open both plans; plans of different format versions get an explanation, not a crash."""
    raw_old, start_old, size_old = _raw_header(old)
    raw_new, start_new, size_new = _raw_header(new)
    v_old, v_new = _version_of(raw_old, old), _version_of(raw_new, new)
    if v_old != v_new:
        stale = [p for p, v in ((old, v_old), (new, v_new)) if v != VERSION]
        lv_old, lv_new = raw_old.get("lmeval_version", "?"), raw_new.get("lmeval_version", "?")
        raise PlanError(
            f"cannot diff plans of different format versions: {old} is plan format version {v_old!r} "
            f"(lmeval {lv_old}) and {new} is version {v_new!r} (lmeval {lv_new}); records are laid out "
            f"differently, so prompts cannot be compared. This lmeval reads version {VERSION}: recompile "
            f"{' and '.join(stale)} with it (the config is in the plan header) and diff again"
        )
    return (
        _finish(old, raw_old, start_old, size_old),
        _finish(new, raw_new, start_new, size_new),
    )


def open_plan(path: str) -> PlanFile:
    raw, start, size = _raw_header(path)
    _version_of(raw, path)
    return _finish(path, raw, start, size)


def _finish(path: str, raw: dict[str, Any], start: int, size: int) -> PlanFile:
    version = raw.get("version")
    if version != VERSION:
        raise PlanError(
            f"{path}: plan format version {version!r}, but this lmeval reads version {VERSION}; "
            f"recompile the plan with this lmeval or use the lmeval that wrote it"
        )
    try:
        header = PlanHeader.from_dict(raw)
    except (KeyError, TypeError, AttributeError, ValueError) as e:
        raise PlanError(f"{path}: malformed plan header ({type(e).__name__}: {e})") from None
    spans_raw = header.extra.get("spans") if isinstance(header.extra, dict) else None
    if not isinstance(spans_raw, dict):
        raise PlanError(f"{path}: malformed plan header (no task spans in extra.spans)")
    spans: dict[str, tuple[int, int]] = {}
    for t in header.tasks:
        span = spans_raw.get(t.name)
        if not (isinstance(span, list) and len(span) == 2 and all(isinstance(x, int) and x >= 0 for x in span)):
            raise PlanError(f"{path}: malformed plan header (task {t.name!r} has no valid span)")
        spans[t.name] = (span[0], span[1])
    end = max((s + n for s, n in spans.values()), default=0)
    if size - start != end:
        what = "truncated" if size - start < end else "has trailing bytes after its records"
        raise PlanError(f"{path}: {what}: the header promises {end} bytes of records, the file holds {size - start}")
    return PlanFile(path=path, raw=raw, header=header, records_start=start, size=size, spans=spans)


def verify(plan: PlanFile) -> None:
    """Check ``plan_hash`` over the header and every record byte (one sequential read)."""
    h = hashlib.sha256(canonical_bytes({k: v for k, v in plan.raw.items() if k != "plan_hash"}))
    try:
        with open(plan.path, "rb") as f:
            f.seek(plan.records_start)
            while chunk := f.read(_CHUNK):
                h.update(chunk)
    except OSError as e:
        raise PlanError(f"{plan.path}: cannot read plan ({e.strerror})") from None
    if h.hexdigest() != plan.header.plan_hash:
        raise PlanError(f"{plan.path}: plan hash mismatch: the file was modified or truncated")


def verify_all(*plans: PlanFile) -> None:
    """Verify several plans at once (hashlib releases the GIL, so two files hash on two cores)."""
    unique: dict[tuple[int, int], PlanFile] = {}
    for p in plans:
        st = os.stat(p.path)
        unique.setdefault((st.st_dev, st.st_ino), p)
    with ThreadPoolExecutor(max_workers=max(1, min(len(unique), os.cpu_count() or 1))) as pool:
        for fut in [pool.submit(verify, p) for p in unique.values()]:
            fut.result()


class _Limited:
    def __init__(self, f: IO[bytes], n: int) -> None:
        self._f = f
        self._left = n

    def read(self, n: int = -1) -> bytes:
        if self._left <= 0:
            return b""
        n = self._left if n < 0 else min(n, self._left)
        b = self._f.read(n)
        self._left -= len(b)
        return b


def spans_equal(a: PlanFile, b: PlanFile, task: str) -> bool:
    """Whether a task's record bytes are identical in both plans (chunked compare, no decoding)."""
    sa, la = a.spans[task]
    sb, lb = b.spans[task]
    if la != lb:
        return False
    with open(a.path, "rb") as fa, open(b.path, "rb") as fb:
        fa.seek(a.records_start + sa)
        fb.seek(b.records_start + sb)
        left = la
        while left > 0:
            n = min(_CHUNK, left)
            if fa.read(n) != fb.read(n):
                return False
            left -= n
    return True


def task_records(plan: PlanFile, task: str) -> Iterator[dict[str, Any]]:
    """The raw record maps of one task, streamed from its span (bounded memory)."""
    start, length = plan.spans[task]
    with open(plan.path, "rb") as f:
        f.seek(plan.records_start + start)
        unpacker = msgpack.Unpacker(_Limited(f, length), raw=False, read_size=1 << 20, strict_map_key=True)
        prev: dict[str, Any] | None = None
        try:
            for obj in unpacker:
                if not isinstance(obj, dict) or obj.get("kind") not in ("doc", "instance"):
                    raise PlanError(f"{plan.path}: task {task!r}: malformed plan record")
                if obj["kind"] == "instance":
                    obj = prev = expand_record(obj, prev)
                else:
                    prev = None
                if obj.get("task") != task:
                    raise PlanError(
                        f"{plan.path}: task {task!r}: a record of task {obj.get('task')!r} lies in its span"
                    )
                yield obj
        except PlanError:
            raise
        except Exception as e:
            raise PlanError(f"{plan.path}: task {task!r}: corrupt plan record stream ({type(e).__name__})") from None


def doc_groups(plan: PlanFile, task: str) -> Iterator[tuple[int, dict[str, Any], dict[int, dict[str, Any]]]]:
    """``(doc_id, doc record, {idx: instance record})`` per document, in plan order."""
    doc: dict[str, Any] | None = None
    insts: dict[int, dict[str, Any]] = {}
    for rec in task_records(plan, task):
        if rec["kind"] == "doc":
            if doc is not None:
                yield doc["doc_id"], doc, insts
            doc, insts = rec, {}
            if not isinstance(doc.get("doc_id"), int):
                raise PlanError(f"{plan.path}: task {task!r}: doc record without an integer doc_id")
        else:
            if doc is None or rec.get("doc_id") != doc["doc_id"]:
                raise PlanError(
                    f"{plan.path}: task {task!r}: instance {rec.get('instance_id')!r} (doc {rec.get('doc_id')!r}) "
                    f"does not follow its doc record"
                )
            idx = rec.get("idx")
            if not isinstance(idx, int) or idx in insts:
                raise PlanError(
                    f"{plan.path}: task {task!r} doc {doc['doc_id']}: missing or repeated instance idx {idx!r}"
                )
            insts[idx] = rec
    if doc is not None:
        yield doc["doc_id"], doc, insts
