"""Opening plans for diff: raw header, layout checks, hash verification and per-task record streams.

Diff works per task so that identical tasks are skipped without decoding a record: the header's
``extra["spans"]`` and the storage map (``plans/storage.py``) locate each task's frame, whose bytes can be
compared or streamed on their own, compressed or not.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from lmeval.plans.canonical import canonical_bytes
from lmeval.plans.errors import PlanError
from lmeval.plans.io import expand_record, unpack_stream
from lmeval.plans.records import FORMAT, VERSION, PlanHeader
from lmeval.plans.storage import (
    BackgroundHash,
    Layout,
    chunks,
    decompress_frame,
    frame_chunks,
    open_layout,
    read_raw_header,
    stored_bytes,
)

_CHUNK = 1 << 22


@dataclass
class PlanFile:
    path: str
    raw: dict[str, Any]  # the header exactly as stored
    header: PlanHeader
    layout: Layout
    spans: dict[str, tuple[int, int]]  # task → (start, length) in the uncompressed record stream


def _peek_version(path: str) -> tuple[Any, dict[str, Any]]:
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as e:
        raise PlanError(f"{path}: cannot open plan ({e.strerror})") from None
    with f:
        raw, _ = read_raw_header(f, path)
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise PlanError(f"{path}: not an lmeval plan (no '{FORMAT}' header)")
    return raw.get("version"), raw


def open_pair(old: str, new: str) -> tuple[PlanFile, PlanFile]:
    """Open both plans; plans of different format versions get an explanation, not a crash."""
    v_old, raw_old = _peek_version(old)
    v_new, raw_new = _peek_version(new)
    if v_old != v_new:
        stale = [p for p, v in ((old, v_old), (new, v_new)) if v != VERSION]
        lv_old, lv_new = raw_old.get("lmeval_version", "?"), raw_new.get("lmeval_version", "?")
        raise PlanError(
            f"cannot diff plans of different format versions: {old} is plan format version {v_old!r} "
            f"(lmeval {lv_old}) and {new} is version {v_new!r} (lmeval {lv_new}); records are laid out "
            f"differently, so prompts cannot be compared. This lmeval reads version {VERSION}: recompile "
            f"{' and '.join(stale)} with it (the config is in the plan header) and diff again"
        )
    return open_plan(old), open_plan(new)


def open_plan(path: str) -> PlanFile:
    f, layout = open_layout(path)
    f.close()
    raw = layout.raw
    try:
        header = PlanHeader.from_dict(raw)
    except (KeyError, TypeError, AttributeError, ValueError) as e:
        raise PlanError(f"{path}: malformed plan header ({type(e).__name__}: {e})") from None
    return PlanFile(path=path, raw=raw, header=header, layout=layout, spans=layout.spans)


def _open(plan: PlanFile) -> Any:
    try:
        return open(plan.path, "rb")
    except OSError as e:
        raise PlanError(f"{plan.path}: cannot open plan ({e.strerror})") from None


def _header_hash(plan: PlanFile) -> BackgroundHash:
    return BackgroundHash(canonical_bytes({k: v for k, v in plan.raw.items() if k != "plan_hash"}))


def _check(plan: PlanFile, h: BackgroundHash) -> None:
    if h.hexdigest() != plan.header.plan_hash:
        raise PlanError(f"{plan.path}: plan hash mismatch: the file was modified or truncated")


def verify(plan: PlanFile) -> None:
    """Check ``plan_hash`` over the header and every (uncompressed) record byte, in one pass over the file."""
    h = _header_hash(plan)
    try:
        with _open(plan) as f:
            for chunk in chunks(f, plan.layout):
                h.update(chunk)
        _check(plan, h)
    finally:
        h.close()


def _verify_pair(a: PlanFile, b: PlanFile) -> None:
    """Check both plan hashes in one pass over both files. A frame stored identically in both plans (an
    unchanged task, the common case in a diff) is decompressed once and its bytes hashed for both; the two
    hashes run on worker threads while this thread reads and decompresses."""
    fa, fb = a.layout.frames, b.layout.frames
    tasks_a, tasks_b = {f.task for f in fa}, {f.task for f in fb}
    ha, hb = _header_hash(a), _header_hash(b)
    try:
        with _open(a) as f1, _open(b) as f2:
            i = j = 0
            while i < len(fa) or j < len(fb):
                x = fa[i] if i < len(fa) else None
                y = fb[j] if j < len(fb) else None
                if x is not None and y is not None and x.task == y.task:
                    sx, sy = stored_bytes(f1, a.path, x), stored_bytes(f2, b.path, y)
                    if a.layout.codec == b.layout.codec and sx == sy:
                        data = sx if a.layout.codec == "none" else decompress_frame(sx, a.layout, x)
                        ha.update(data)
                        hb.update(data)
                    else:
                        ha.update(sx if a.layout.codec == "none" else decompress_frame(sx, a.layout, x))
                        hb.update(sy if b.layout.codec == "none" else decompress_frame(sy, b.layout, y))
                    i, j = i + 1, j + 1
                elif x is not None and (y is None or x.task not in tasks_b or y.task in tasks_a):
                    for chunk in frame_chunks(f1, a.layout, x):
                        ha.update(chunk)
                    i += 1
                else:
                    assert y is not None
                    for chunk in frame_chunks(f2, b.layout, y):
                        hb.update(chunk)
                    j += 1
        _check(a, ha)
        _check(b, hb)
    finally:
        ha.close()
        hb.close()


def verify_all(*plans: PlanFile) -> None:
    """Verify several plans (two plans together, see ``_verify_pair``; more, one thread each)."""
    unique: dict[tuple[int, int], PlanFile] = {}
    for p in plans:
        st = os.stat(p.path)
        unique.setdefault((st.st_dev, st.st_ino), p)
    if len(unique) == 2:
        _verify_pair(*unique.values())
        return
    with ThreadPoolExecutor(max_workers=max(1, min(len(unique), os.cpu_count() or 1))) as pool:
        for fut in [pool.submit(verify, p) for p in unique.values()]:
            fut.result()


def _same_stream(a: Iterator[bytes], b: Iterator[bytes]) -> bool:
    """Whether two chunked byte streams are equal (chunk boundaries may differ); stops at the first difference."""
    ba = bb = memoryview(b"")
    while True:
        if not ba:
            ba = memoryview(next(a, b""))
        if not bb:
            bb = memoryview(next(b, b""))
        if not ba or not bb:
            return not ba and not bb
        n = min(len(ba), len(bb))
        if ba[:n] != bb[:n]:
            return False
        ba, bb = ba[n:], bb[n:]


def spans_equal(a: PlanFile, b: PlanFile, task: str) -> bool:
    """Whether a task's record bytes are identical in both plans: equal stored frames prove it without
    decompressing; otherwise (different codecs, levels or content) the uncompressed streams are compared."""
    fa, fb = a.layout.task_frames(task), b.layout.task_frames(task)
    if sum(f.length for f in fa) != sum(f.length for f in fb):
        return False
    with _open(a) as f1, _open(b) as f2:
        same_shape = [(f.length, f.stored) for f in fa] == [(f.length, f.stored) for f in fb]
        if a.layout.codec == b.layout.codec and same_shape:
            if all(stored_bytes(f1, a.path, x) == stored_bytes(f2, b.path, y) for x, y in zip(fa, fb, strict=True)):
                return True
            if a.layout.codec == "none":
                return False
        return _same_stream(chunks(f1, a.layout, fa), chunks(f2, b.layout, fb))


def task_records(plan: PlanFile, task: str) -> Iterator[dict[str, Any]]:
    """The raw record maps of one task, streamed frame by frame (bounded memory)."""
    frames = plan.layout.task_frames(task)
    with _open(plan) as f:
        prev: dict[str, Any] | None = None
        where = f"{plan.path}: task {task!r}"
        try:
            for obj in unpack_stream(chunks(f, plan.layout, frames), where):
                if not isinstance(obj, dict) or obj.get("kind") not in ("doc", "instance"):
                    raise PlanError(f"{where}: malformed plan record")
                if obj["kind"] == "instance":
                    obj = prev = expand_record(obj, prev)
                else:
                    prev = None
                if obj.get("task") != task:
                    raise PlanError(f"{where}: a record of task {obj.get('task')!r} lies in its span")
                yield obj
        except PlanError:
            raise
        except Exception as e:
            raise PlanError(f"{where}: corrupt plan record stream ({type(e).__name__})") from None


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
