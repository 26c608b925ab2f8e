"""Forged-but-consistent plans: what a forger who knows the format can write. ``forge`` reads a plan's raw
header and record maps, lets an edit change anything (types included), then recomputes everything a reader
could check by hashing: task spans, task hashes, ``plan_hash``, the storage map and frames, and (unless
told not to) each Instance's ``request_hash`` and each doc's ``doc_hash`` from their edited content. Only
``plans/plan/validate.py``'s semantic checks can then tell such a plan from a compiled one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lmeval.plans.plan import canonical_bytes, content_hash, header_hash_bytes, record_maps, unpack_stream
from lmeval.plans.plan.storage import chunks, encode_body, open_layout

Maps = list[dict[str, Any]]
RecordEdit = Callable[[Maps], Maps | None]
HeaderEdit = Callable[[dict[str, Any]], dict[str, Any] | None]


def raw_plan(src: Path) -> tuple[dict[str, Any], Maps]:
    f, layout = open_layout(str(src))
    with f:
        objs = list(record_maps(unpack_stream(chunks(f, layout), str(src)), str(src)))
    return dict(layout.raw), objs


def _request_hash(o: dict[str, Any]) -> str:
    keys = ("request_type", "context", "continuation", "generation_kwargs", "context_ids", "continuation_ids")
    try:
        from lmeval.plans.plan import request_hash_of

        return request_hash_of(*(o.get(k) for k in keys))
    except (TypeError, ValueError):
        return content_hash({k: o.get(k) for k in keys})


def forge(
    src: Path,
    dst: Path,
    records: RecordEdit | None = None,
    header: HeaderEdit | None = None,
    rehash: bool = True,
    codec: str = "zstd",
    after: HeaderEdit | None = None,
) -> Path:
    """``src`` edited (``records`` on the record maps, ``header`` on the header map after spans and counts were
    recomputed) and re-sealed so every hash agrees. ``rehash``: recompute request and doc hashes too. The
    storage map and frames follow the records' true spans, whatever the edited header says. ``after``: an edit
    of the header after ``plan_hash`` was computed (a plan whose hash no longer agrees)."""
    head, objs = raw_plan(src)
    if records is not None:
        new = records(objs)
        objs = objs if new is None else new
    if rehash:
        for o in objs:
            if o.get("kind") == "instance":
                o["request_hash"] = _request_hash(o)
            elif isinstance(o.get("doc"), dict):
                try:
                    o["doc_hash"] = hashlib.sha256(canonical_bytes(o["doc"])).hexdigest()
                except (TypeError, ValueError):
                    pass
    blobs = [canonical_bytes(o) for o in objs]
    spans: dict[str, list[int]] = {}
    pos = 0
    per_task: dict[str, list[bytes]] = {}
    counts: dict[str, list[int]] = {}
    for o, b in zip(objs, blobs, strict=True):
        name = str(o.get("task"))
        span = spans.setdefault(name, [pos, 0])
        span[1] = pos + len(b) - span[0]
        pos += len(b)
        per_task.setdefault(name, []).append(b)
        c = counts.setdefault(name, [0, 0])
        c[0 if o.get("kind") == "doc" else 1] += 1
    tasks = head["tasks"]
    for t in tasks:
        name = t["name"] if isinstance(t, dict) else None
        if isinstance(name, str):
            c = counts.get(name, [0, 0])
            t["n_docs"], t["n_instances"] = c
            summary = {
                k: t.get(k)
                for k in ("name", "output_type", "num_fewshot", "version", "metric_list", "filter_list", "config")
            }
            h = hashlib.sha256(canonical_bytes(summary))
            for b in per_task.get(name, []):
                h.update(b)
            t["task_hash"] = h.hexdigest()
    names = [t["name"] for t in tasks if isinstance(t, dict)]
    names += [n for n in spans if n not in names]
    head["extra"] = {**head.get("extra", {}), "spans": {n: spans.get(n, [pos, 0]) for n in names}}
    head["n_docs"] = sum(c[0] for c in counts.values())
    head["n_instances"] = sum(c[1] for c in counts.values())
    true_spans = {"tasks": [{"name": n} for n in spans], "extra": {"spans": dict(spans)}}
    storage, frames = encode_body(true_spans, blobs, codec)
    if header is not None:
        new_head = header(head)
        head = head if new_head is None else new_head
    h = hashlib.sha256(header_hash_bytes(head))
    for b in blobs:
        h.update(b)
    head["plan_hash"] = h.hexdigest()
    if after is not None:
        head = after(head) or head
    dst.write_bytes(canonical_bytes(head) + storage + b"".join(frames))
    return dst
