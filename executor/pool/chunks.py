"""Deterministic chunks of a plan's Instances: the unit of work a worker pulls, runs and returns.

Chunks depend on the plan (and the chunk size) only, never on the number of workers, so any worker count
cuts a plan the same way and a resumed run with another ``--workers`` finds the same chunks. A chunk is a
run of documents in plan order (a document's Instances share their context, and neighbouring documents of
a task share their few-shot prefix, so the engine's prefix cache keeps working inside a chunk); an Instance
whose request repeats one of an earlier chunk joins that chunk, so equal requests get one answer, as in a
single-process run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lmeval.plans import InstanceRecord

TARGET_CHUNKS = 128  # default: about this many chunks per plan (many more than workers, for balance)
MIN_CHUNK = 32
MAX_CHUNK = 4096


@dataclass(frozen=True)
class Chunk:
    index: int
    instances: tuple[InstanceRecord, ...]

    def describe(self) -> str:
        """``task docs a-b`` for each task in the chunk, for error messages."""
        spans: dict[str, list[int]] = {}
        for inst in self.instances:
            s = spans.setdefault(inst.task, [inst.doc_id, inst.doc_id])
            s[0], s[1] = min(s[0], inst.doc_id), max(s[1], inst.doc_id)
        parts = [f"{t} doc {a}" if a == b else f"{t} docs {a}-{b}" for t, (a, b) in spans.items()]
        return f"chunk {self.index} ({', '.join(parts)}; {len(self.instances)} instances)"


def default_chunk_size(n_instances: int) -> int:
    """About ``TARGET_CHUNKS`` chunks, each between ``MIN_CHUNK`` and ``MAX_CHUNK`` Instances."""
    return max(MIN_CHUNK, min(MAX_CHUNK, -(-n_instances // TARGET_CHUNKS)))


def make_chunks(instances: Sequence[InstanceRecord], chunk_size: int) -> list[Chunk]:
    """Cut ``instances`` (in plan order) into chunks of at least ``chunk_size`` Instances at document
    boundaries (the last may be smaller); repeated requests join the chunk of their first occurrence."""
    if chunk_size < 1:
        raise ValueError(f"chunk size {chunk_size}: must be at least 1")
    chunks: list[list[InstanceRecord]] = []
    home: dict[str, int] = {}  # request hash -> chunk of its first occurrence
    current: list[InstanceRecord] = []
    last_doc: tuple[str, int] | None = None
    for inst in instances:
        doc = (inst.task, inst.doc_id)
        if doc != last_doc and len(current) >= chunk_size:
            chunks.append(current)
            current = []
        last_doc = doc
        key = inst.request_hash
        if key and key in home and home[key] < len(chunks):
            chunks[home[key]].append(inst)
            continue
        if key:
            home.setdefault(key, len(chunks))
        current.append(inst)
    if current:
        chunks.append(current)
    return [Chunk(i, tuple(c)) for i, c in enumerate(chunks)]
