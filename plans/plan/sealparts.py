"""Sealing and writing a plan from its tasks' encoded bytes (``EncodedTask``: one task's records joined, their
lengths and, when already made, its zstd frames), without the record objects: what the compiler's build cache
and worker processes hand over. Same header, hashes and file bytes as ``plans.io.seal`` / ``write_sealed``
over the same records (tests compare them)."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import IO

import zstandard

from lmeval.common import write_atomic
from lmeval.plans.plan.canonical import canonical_bytes
from lmeval.plans.plan.identity import locations_in
from lmeval.plans.plan.integrity import header_hash_bytes, task_hash
from lmeval.plans.plan.records import PlanHeader
from lmeval.plans.plan.storage import CODECS, DEFAULT_CODEC, MAX_WINDOW, compress_frame, storage_map, task_payloads


@dataclass(frozen=True)
class EncodedTask:
    """One task's part of a plan: ``data`` (its record bytes in plan order, joined), ``lengths`` (each record's
    byte length), its doc and instance counts, and ``frames``: its records as the ``zstd`` codec stores them,
    (uncompressed length, stored bytes) per frame (``encode_frames``). ``task_hash``: the task's hash
    (``plans.integrity.task_hash`` of its summary and these bytes) when its producer computed it, else empty.

    ``raw``: the record bytes, or None when only the frames are at hand (a build-cache hit): ``data`` then
    decompresses them when first asked for (a compile whose plan hash is known never does)."""

    name: str
    raw: bytes | None
    lengths: list[int]
    n_docs: int
    n_instances: int
    frames: list[tuple[int, bytes]]
    task_hash: str = ""

    @cached_property
    def data(self) -> bytes:
        if self.raw is not None:
            return self.raw
        return b"".join(_inflate(n, b) for n, b in self.frames)

    @property
    def size(self) -> int:
        """``len(data)``, without decompressing."""
        return len(self.raw) if self.raw is not None else sum(n for n, _ in self.frames)


def _inflate(n: int, stored: bytes) -> bytes:
    out = zstandard.ZstdDecompressor(max_window_size=MAX_WINDOW).decompress(
        stored, max_output_size=n, allow_extra_data=False
    )
    if len(out) != n:
        raise ValueError(f"a task's zstd frame gave {len(out)} bytes, {n} expected")
    return out


def encode_frames(data: bytes, lengths: list[int]) -> list[tuple[int, bytes]]:
    """A task's zstd frames, cut and compressed as ``plans.storage.encode_body`` does it."""
    return [(len(p), compress_frame(p)) for p in task_payloads(data, lengths)]


def seal_tasks(header: PlanHeader, tasks: list[EncodedTask]) -> PlanHeader:
    """``plans.io.seal`` for tasks given as encoded bytes (in plan order; header.tasks names them)."""
    sealed = seal_header(header, tasks)
    return replace(sealed, plan_hash=plan_digest(sealed, tasks))


def plan_digest(sealed: PlanHeader, tasks: list[EncodedTask], head: bytes | None = None) -> str:
    """The plan hash of a header from ``seal_header``: sha256 of its hashed bytes (``head``, when the caller
    has them: ``integrity.header_hash_bytes``), then every task's records."""
    h = hashlib.sha256(header_hash_bytes(sealed.to_dict()) if head is None else head)
    for t in tasks:
        h.update(t.data)
    return h.hexdigest()


def seal_header(header: PlanHeader, tasks: list[EncodedTask]) -> PlanHeader:
    """The header ``seal_tasks`` gives, its ``plan_hash`` left empty (``plan_digest`` computes it)."""
    placed = locations_in(header.config)
    if placed:
        raise ValueError(f"a plan holds no locations (plans/plan/identity.py), but its config has {', '.join(placed)}")
    names = [t.name for t in header.tasks]
    if names != [t.name for t in tasks]:
        raise ValueError(f"encoded tasks {[t.name for t in tasks]} do not match the header's {names}")
    spans: dict[str, list[int]] = {}
    pos = 0
    for t in tasks:
        if t.size:
            spans[t.name] = [pos, t.size]
            pos += t.size
    extra = dict(header.extra)
    extra["spans"] = {t.name: spans.get(t.name, [pos, 0]) for t in header.tasks}
    summaries = [
        replace(s, task_hash=e.task_hash or task_hash(s, [0, e.size] if e.size else None, e.data))
        for s, e in zip(header.tasks, tasks, strict=True)
    ]
    return replace(
        header,
        tasks=summaries,
        n_docs=sum(t.n_docs for t in tasks),
        n_instances=sum(t.n_instances for t in tasks),
        extra=extra,
        plan_hash="",
    )


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
