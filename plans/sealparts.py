"""Sealing and writing a plan from its tasks' encoded bytes (``EncodedTask``: one task's records joined, their
lengths and, when already made, its zstd frames), without the record objects: what the compiler's build cache
and worker processes hand over. Same header, hashes and file bytes as ``plans.io.seal`` / ``write_sealed``
over the same records (tests compare them)."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO

from lmeval.common.atomic import write_atomic
from lmeval.plans.canonical import canonical_bytes
from lmeval.plans.identity import locations_in
from lmeval.plans.integrity import header_hash_bytes, task_hash
from lmeval.plans.records import PlanHeader
from lmeval.plans.storage import CODECS, DEFAULT_CODEC, compress_frame, storage_map, task_payloads


@dataclass(frozen=True)
class EncodedTask:
    """One task's part of a plan: ``data`` (its record bytes in plan order, joined), ``lengths`` (each record's
    byte length), its doc and instance counts, and ``frames``: its records as the ``zstd`` codec stores them,
    (uncompressed length, stored bytes) per frame (``encode_frames``). ``task_hash``: the task's hash
    (``plans.integrity.task_hash`` of its summary and these bytes) when its producer computed it, else empty."""

    name: str
    data: bytes
    lengths: list[int]
    n_docs: int
    n_instances: int
    frames: list[tuple[int, bytes]]
    task_hash: str = ""


def encode_frames(data: bytes, lengths: list[int]) -> list[tuple[int, bytes]]:
    """A task's zstd frames, cut and compressed as ``plans.storage.encode_body`` does it."""
    return [(len(p), compress_frame(p)) for p in task_payloads(data, lengths)]


def seal_tasks(header: PlanHeader, tasks: list[EncodedTask]) -> PlanHeader:
    """``plans.io.seal`` for tasks given as encoded bytes (in plan order; header.tasks names them)."""
    placed = locations_in(header.config)
    if placed:
        raise ValueError(f"a plan holds no locations (plans/identity.py), but its config has {', '.join(placed)}")
    names = [t.name for t in header.tasks]
    if names != [t.name for t in tasks]:
        raise ValueError(f"encoded tasks {[t.name for t in tasks]} do not match the header's {names}")
    spans: dict[str, list[int]] = {}
    pos = 0
    for t in tasks:
        if t.data:
            spans[t.name] = [pos, len(t.data)]
            pos += len(t.data)
    extra = dict(header.extra)
    extra["spans"] = {t.name: spans.get(t.name, [pos, 0]) for t in header.tasks}
    summaries = [
        replace(s, task_hash=e.task_hash or task_hash(s, [0, len(e.data)] if e.data else None, e.data))
        for s, e in zip(header.tasks, tasks, strict=True)
    ]
    sealed = replace(
        header,
        tasks=summaries,
        n_docs=sum(t.n_docs for t in tasks),
        n_instances=sum(t.n_instances for t in tasks),
        extra=extra,
        plan_hash="",
    )
    h = hashlib.sha256(header_hash_bytes(sealed.to_dict()))
    for t in tasks:
        h.update(t.data)
    return replace(sealed, plan_hash=h.hexdigest())


def write_tasks(
    path: str | os.PathLike[str], sealed: PlanHeader, tasks: list[EncodedTask], codec: str = DEFAULT_CODEC
) -> Path:
    """``plans.io.write_sealed`` for a header sealed by ``seal_tasks``: atomically, nothing left on failure."""
    if codec not in CODECS:
        raise ValueError(f"unknown plan codec {codec!r} (one of {', '.join(CODECS)})")
    head = canonical_bytes(sealed.to_dict())
    if codec == "none":
        frames = [(len(p), p) for t in tasks for p in task_payloads(t.data, t.lengths)]
    else:
        frames = [f for t in tasks for f in t.frames]
    storage = storage_map(codec, [(n, len(b)) for n, b in frames])

    def write(f: IO[bytes]) -> None:
        f.write(head)
        f.write(storage)
        for _, b in frames:
            f.write(b)

    return write_atomic(path, write)
