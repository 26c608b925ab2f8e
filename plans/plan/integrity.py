"""A plan's identity and its checks: how ``plan_hash`` and ``task_hash`` are defined, checking ``plan_hash`` over
a file (one plan, or several in one pass), and whether two plans hold the same bytes for a task.

``plan_hash`` is sha256 over the canonical header without ``plan_hash``, then every uncompressed record byte in
file order; the storage (codec, frames) is not part of it (``plans/plan/storage.py``). Every check here streams the
stored frames and decodes no record.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import IO, Any

from lmeval.plans.errors import PlanError
from lmeval.plans.plan.canonical import canonical_bytes
from lmeval.plans.plan.records import TaskSummary
from lmeval.plans.plan.storage import (
    BackgroundHash,
    Frame,
    Layout,
    chunks,
    decompress_frame,
    frame_chunks,
    stored_bytes,
)


def header_hash_bytes(header: dict[str, Any]) -> bytes:
    """What ``plan_hash`` starts from: the canonical header map without ``plan_hash``."""
    return canonical_bytes({k: v for k, v in header.items() if k != "plan_hash"})


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


def plan_hasher(layout: Layout) -> BackgroundHash:
    """A hash to feed the plan's uncompressed record bytes, in file order, then give to ``check_plan_hash``."""
    return BackgroundHash(header_hash_bytes(layout.raw))


def check_plan_hash(layout: Layout, digest: str) -> None:
    if digest != layout.raw.get("plan_hash"):
        raise PlanError(f"{layout.path}: plan hash mismatch: the file was modified or truncated")


def _open(layout: Layout) -> IO[bytes]:
    try:
        return open(layout.path, "rb")
    except OSError as e:
        raise PlanError(f"{layout.path}: cannot open plan ({e.strerror})") from None


def verify_plan(layout: Layout) -> None:
    """Check ``plan_hash`` over the header and every (uncompressed) record byte, in one pass over the file."""
    h = plan_hasher(layout)
    try:
        with _open(layout) as f:
            for chunk in chunks(f, layout):
                h.update(chunk)
        check_plan_hash(layout, h.hexdigest())
    finally:
        h.close()


def _frame_data(layout: Layout, data: bytes, frame: Frame) -> bytes:
    return data if layout.codec == "none" else decompress_frame(data, layout, frame)


def _verify_pair(a: Layout, b: Layout) -> None:
    """Check both plan hashes in one pass over both files. A frame stored identically in both plans (an
    unchanged task, the common case when comparing plans) is decompressed once and its bytes hashed for both;
    the two hashes run on worker threads while this thread reads and decompresses."""
    fa, fb = a.frames, b.frames
    tasks_a, tasks_b = {f.task for f in fa}, {f.task for f in fb}
    ha, hb = plan_hasher(a), plan_hasher(b)
    try:
        with _open(a) as f1, _open(b) as f2:
            i = j = 0
            while i < len(fa) or j < len(fb):
                x = fa[i] if i < len(fa) else None
                y = fb[j] if j < len(fb) else None
                if x is not None and y is not None and x.task == y.task:
                    sx, sy = stored_bytes(f1, a.path, x), stored_bytes(f2, b.path, y)
                    if a.codec == b.codec and sx == sy:
                        data = _frame_data(a, sx, x)
                        ha.update(data)
                        hb.update(data)
                    else:
                        ha.update(_frame_data(a, sx, x))
                        hb.update(_frame_data(b, sy, y))
                    i, j = i + 1, j + 1
                elif x is not None and (y is None or x.task not in tasks_b or y.task in tasks_a):
                    for chunk in frame_chunks(f1, a, x):
                        ha.update(chunk)
                    i += 1
                else:
                    assert y is not None
                    for chunk in frame_chunks(f2, b, y):
                        hb.update(chunk)
                    j += 1
        check_plan_hash(a, ha.hexdigest())
        check_plan_hash(b, hb.hexdigest())
    finally:
        ha.close()
        hb.close()


def verify_plans(*layouts: Layout) -> None:
    """Check several plans' hashes: the same file once, two files together in one pass (see ``_verify_pair``),
    more on a thread each."""
    unique: dict[tuple[int, int], Layout] = {}
    for lay in layouts:
        try:
            st = os.stat(lay.path)
        except OSError as e:
            raise PlanError(f"{lay.path}: cannot open plan ({e.strerror})") from None
        unique.setdefault((st.st_dev, st.st_ino), lay)
    if len(unique) == 2:
        _verify_pair(*unique.values())
        return
    with ThreadPoolExecutor(max_workers=max(1, min(len(unique), os.cpu_count() or 1))) as pool:
        for fut in [pool.submit(verify_plan, lay) for lay in unique.values()]:
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


def same_task_records(a: Layout, b: Layout, task: str) -> bool:
    """Whether a task's record bytes are identical in both plans: equal stored frames prove it without
    decompressing; otherwise (different codecs, levels or content) the uncompressed streams are compared."""
    fa, fb = a.task_frames(task), b.task_frames(task)
    if sum(f.length for f in fa) != sum(f.length for f in fb):
        return False
    with _open(a) as f1, _open(b) as f2:
        same_shape = [(f.length, f.stored) for f in fa] == [(f.length, f.stored) for f in fb]
        if a.codec == b.codec and same_shape:
            if all(stored_bytes(f1, a.path, x) == stored_bytes(f2, b.path, y) for x, y in zip(fa, fb, strict=True)):
                return True
            if a.codec == "none":
                return False
        return _same_stream(chunks(f1, a, fa), chunks(f2, b, fb))
