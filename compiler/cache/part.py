"""One compiled task as the pipeline assembles plans from it (``TaskPart``: its header summary, its notes and its
encoded records, ``plans.sealparts.EncodedTask``), built from a ``BuiltTask``, and its stored form: the bytes of a
build-cache entry, which worker processes also hand back.

An entry is ``MAGIC``, the sha256 of the payload, the payload's length (8 bytes, big-endian), then the payload: a
msgpack map of the cache key, the summary, the notes, the null-field counts (``compiler.build.nullfields``: a cached
build warns as a fresh one does), the record lengths and counts and the task's zstd frames (each with zstd's own
content checksum). ``unpack_part`` checks all of it (length, sha256, key, every frame's
declared size and checksum, the lengths adding up) and raises ``CorruptEntry`` on any mismatch: an entry is
rebuilt, never trusted."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import msgpack
import zstandard

from lmeval.compiler.build import BuildOptions, BuiltTask, NullField
from lmeval.compiler.encode import ModelTokenizer, task_records, task_summary
from lmeval.plans import FRAME_MAX, MAX_WINDOW, EncodedTask, TaskSummary, encode_frames, task_hash

MAGIC = b"LMEVAL-BUILD-3\n"  # 3: entries carry the null-field counts (2's are rebuilt)
_HEAD = len(MAGIC) + 32 + 8


class CorruptEntry(Exception):
    """A build-cache entry (or a worker's result) that fails a check; the task is built again."""


@dataclass(frozen=True)
class TaskPart:
    summary: TaskSummary  # unsealed (no task_hash yet)
    notes: list[str]
    encoded: EncodedTask
    digest: str = ""  # the sha256 of its entry's payload (hex) when it went through one: what its bytes are
    null_fields: tuple[NullField, ...] = ()  # what its prompts rendered as None (never in the plan)
    media: tuple[tuple[str, bytes], ...] = ()  # its images (sha256, bytes): the plan's companion folder


def entry_digest(entry: bytes) -> str:
    """The payload sha256 an entry (``pack_part``'s bytes) carries in its header."""
    return entry[len(MAGIC) : len(MAGIC) + 32].hex()


def part_of(bt: BuiltTask, opts: BuildOptions, tok: ModelTokenizer | None) -> TaskPart:
    """A built task's records encoded (``encode.task_records``), its summary and zstd frames."""
    blobs, fingerprint = task_records(bt, tok)
    summary = task_summary(bt, opts, fingerprint)
    lengths = [len(b) for b in blobs]
    data = b"".join(blobs)
    del blobs
    frames = encode_frames(data, lengths)
    th = task_hash(summary, [0, len(data)] if data else None, data)
    enc = EncodedTask(bt.config.name, data, lengths, summary.n_docs, summary.n_instances, frames, th)
    media = tuple(sorted(bt.media.items()))
    return TaskPart(summary, list(bt.notes), enc, null_fields=tuple(bt.null_fields), media=media)


def pack_part(key: str, part: TaskPart) -> bytes:
    """The entry bytes of ``part`` under ``key`` (see the module docstring)."""
    e = part.encoded
    payload = msgpack.packb(
        {
            "key": key,
            "summary": part.summary.to_dict(),
            "notes": part.notes,
            "null_fields": [n.to_list() for n in part.null_fields],
            "lengths": e.lengths,
            "n_docs": e.n_docs,
            "n_instances": e.n_instances,
            "frames": [[n, b] for n, b in e.frames],
            "task_hash": e.task_hash,
            **({"media": [[k, v] for k, v in part.media]} if part.media else {}),
        },
        use_bin_type=True,
    )
    return MAGIC + hashlib.sha256(payload).digest() + len(payload).to_bytes(8, "big") + payload


def unpack_part(blob: bytes, key: str, lazy: bool = False) -> TaskPart:
    """The task part an entry holds, every check passed; ``CorruptEntry`` otherwise. ``lazy``: the frames are
    decompressed when the records are first asked for (``EncodedTask.data``), not here; the payload's sha256
    covers them, and every frame's declared size is checked here all the same."""
    if len(blob) < _HEAD or not blob.startswith(MAGIC):
        raise CorruptEntry("not a build-cache entry (no header)")
    digest = blob[len(MAGIC) : len(MAGIC) + 32]
    size = int.from_bytes(blob[len(MAGIC) + 32 : _HEAD], "big")
    payload = memoryview(blob)[_HEAD:]
    if len(payload) != size:
        raise CorruptEntry(f"truncated or extended entry ({len(payload)} payload bytes, header says {size})")
    if hashlib.sha256(payload).digest() != digest:
        raise CorruptEntry("payload sha256 mismatch")
    try:
        m = msgpack.unpackb(payload, raw=False, strict_map_key=True)
        if m["key"] != key:
            raise CorruptEntry("entry holds another key")
        summary = TaskSummary.from_dict(m["summary"])
        lengths: list[int] = m["lengths"]
        frames: list[tuple[int, bytes]] = [(int(n), bytes(b)) for n, b in m["frames"]]
        notes = [str(x) for x in m["notes"]]
        nulls = tuple(NullField.from_list(x) for x in m["null_fields"])
        n_docs, n_inst = int(m["n_docs"]), int(m["n_instances"])
        th = str(m["task_hash"])
        media = tuple((str(k), bytes(v)) for k, v in m.get("media", []))
        if any(hashlib.sha256(v).hexdigest() != k for k, v in media):
            raise CorruptEntry("an image's bytes do not hash to its name")
    except CorruptEntry:
        raise
    except Exception as e:  # noqa: BLE001 - anything malformed in a payload whose hash matched: a format bug
        raise CorruptEntry(f"malformed payload ({type(e).__name__}: {e})") from None
    if lazy:
        data = None
        size = sum(_declared(n, b) for n, b in frames)
    else:
        data = b"".join(_decompress(n, b) for n, b in frames)
        size = len(data)
    if not all(type(x) is int and x > 0 for x in lengths) or sum(lengths) != size:
        raise CorruptEntry("record lengths do not add up to the task's bytes")
    if (summary.n_docs, summary.n_instances) != (n_docs, n_inst):
        raise CorruptEntry("record counts disagree with the summary")
    enc = EncodedTask(summary.name, data, lengths, n_docs, n_inst, frames, th)
    return TaskPart(summary, notes, enc, digest.hex(), nulls, media)


def _declared(n: int, stored: bytes) -> int:
    if not 0 < n <= FRAME_MAX:
        raise CorruptEntry(f"frame of {n} bytes")
    try:
        declared = zstandard.get_frame_parameters(stored).content_size
    except zstandard.ZstdError as e:
        raise CorruptEntry(f"corrupt frame (zstd: {e})") from None
    if declared != n:
        raise CorruptEntry(f"frame declares {declared} bytes, entry says {n}")
    return n


def _decompress(n: int, stored: bytes) -> bytes:
    _declared(n, stored)
    try:
        out = zstandard.ZstdDecompressor(max_window_size=MAX_WINDOW).decompress(
            stored, max_output_size=n, allow_extra_data=False
        )
    except zstandard.ZstdError as e:
        raise CorruptEntry(f"corrupt frame (zstd: {e})") from None
    if len(out) != n:
        raise CorruptEntry("frame shorter than declared")
    return out


def records_of(part: TaskPart) -> list[Any]:
    """The task's records decoded from its bytes (as a plan reader would give them)."""
    from lmeval.plans import decode_record, record_maps, unpack_stream

    where = f"compiled task {part.summary.name!r}"
    return [decode_record(m, where) for m in record_maps(unpack_stream([part.encoded.data], where), where)]
