"""How a plan's records are stored on disk: a storage map after the header, then per task its frames.

A plan file (format version 2) is the canonical msgpack header, then a small msgpack *storage map*, then the
record bytes of each task as one or more frames of whole records (up to 8 MiB each): zstd frames
(``codec: "zstd"``, the default) or the bytes themselves (``codec: "none"``). The storage map is not part of
any hash: ``plan_hash``, task hashes and request hashes are defined on the header and the uncompressed record
bytes, so the codec, the compression level and the zstd library version change the file's bytes, never its
identity. FORMAT.md has the layout.

Readers hold one frame at a time. Every zstd frame must declare its uncompressed size, equal to what the
storage map and the header's task spans say; the decompressor gets exactly that much room and output past it
is an error, so a small hostile file cannot expand into gigabytes (a decompression bomb).
"""

from __future__ import annotations

import hashlib
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property
from typing import IO, Any, TypeVar

import msgpack
import zstandard

from lmeval.plans.errors import PlanError
from lmeval.plans.plan.canonical import canonical_bytes
from lmeval.plans.plan.records import FORMAT, VERSION

CODECS = ("zstd", "none")
DEFAULT_CODEC = "zstd"
# zstd level 3 (zstd's own default): an MMLU 5-shot plan shrinks ~11x in a fraction of a second.
ZSTD_LEVEL = 3
# Frames hold whole records, at most FRAME_TARGET uncompressed bytes each (a task is one or more frames);
# only a single record larger than that gets a larger frame of its own. A reader decompresses one frame at a
# time and refuses frames over FRAME_MAX (above msgpack's own 100 MiB limit on one record): that bounds the
# memory any file can make a reader allocate.
FRAME_TARGET = 8 << 20
FRAME_MAX = 128 << 20
# Largest zstd window a reader accepts. Level 3 writes windows of at most 2 MiB.
MAX_WINDOW = 1 << 25
_READ = 1 << 20  # bytes read from an uncompressed plan at a time
_HEADER_READ = 1 << 16
T = TypeVar("T")


@dataclass(frozen=True)
class Frame:
    """A run of one task's records as stored: ``start``/``length`` in the uncompressed record stream,
    ``offset``/``stored`` in the file."""

    task: str
    start: int
    length: int
    offset: int
    stored: int


@dataclass(frozen=True)
class Layout:
    """Where everything is in one plan file."""

    path: str
    raw: dict[str, Any]  # the header map exactly as stored
    codec: str
    frames: tuple[Frame, ...]  # in file order
    body_start: int  # file offset of the first frame
    size: int  # file size
    spans: dict[str, tuple[int, int]]  # every task of the header → (start, length) in the record stream

    @property
    def records_length(self) -> int:
        """Bytes of the uncompressed record stream."""
        return sum(f.length for f in self.frames)

    def task_frames(self, task: str) -> list[Frame]:
        """The task's frames in order (none for a task without records; PlanError for an unknown task)."""
        if task not in self.spans:
            raise PlanError(f"{self.path}: no task {task!r} in plan")
        return self._by_task.get(task, [])

    @cached_property
    def _by_task(self) -> dict[str, list[Frame]]:
        out: dict[str, list[Frame]] = {}
        for f in self.frames:
            out.setdefault(f.task, []).append(f)
        return out


def check_version(obj: Any, path: str) -> int:
    """The plan's format version, after checking it is an lmeval plan this lmeval reads."""
    if not isinstance(obj, dict) or obj.get("format") != FORMAT:
        raise PlanError(f"{path}: not an lmeval plan (no '{FORMAT}' header)")
    version = obj.get("version")
    if version != VERSION:
        raise PlanError(
            f"{path}: plan format version {version!r}, but this lmeval reads version {VERSION}; "
            f"recompile the plan with this lmeval or use the lmeval that wrote it"
        )
    return version


def read_raw_header(f: IO[bytes], path: str) -> tuple[Any, int]:
    """The first msgpack object of the file (the header, unchecked) and the offset just after it."""
    return _unpack_at(
        f, 0, path, "empty or truncated plan (no complete header)",
        "not an lmeval plan (cannot decode a msgpack header)",
    )  # fmt: skip


def _unpack_at(f: IO[bytes], pos: int, path: str, truncated: str, undecodable: str, **limits: int) -> tuple[Any, int]:
    """The msgpack object at offset ``pos`` and the offset just after it; a one-line PlanError (``truncated``
    when the file ends inside it, ``undecodable`` when it is not msgpack) otherwise."""
    f.seek(pos)
    unpacker = msgpack.Unpacker(f, raw=False, read_size=_HEADER_READ, strict_map_key=True, **limits)
    try:
        obj = unpacker.unpack()
    except msgpack.OutOfData:
        raise PlanError(f"{path}: {truncated}") from None
    except OSError as e:
        raise PlanError(f"{path}: cannot read plan ({e.strerror})") from None
    except Exception:
        raise PlanError(f"{path}: {undecodable}") from None
    return obj, pos + unpacker.tell()


def _spans(raw: dict[str, Any], path: str) -> list[tuple[str, int, int]]:
    extra = raw.get("extra")
    spans = extra.get("spans") if isinstance(extra, dict) else None
    tasks = raw.get("tasks")
    if not isinstance(spans, dict) or not isinstance(tasks, list):
        raise PlanError(f"{path}: malformed plan header (no tasks or no task spans in extra.spans)")
    out: list[tuple[str, int, int]] = []
    for t in tasks:
        name = t.get("name") if isinstance(t, dict) else None
        span = spans.get(name) if isinstance(name, str) else None
        if not (isinstance(span, list) and len(span) == 2 and all(type(x) is int and x >= 0 for x in span)):
            raise PlanError(f"{path}: malformed plan header (task {name!r} has no valid span)")
        out.append((str(name), span[0], span[1]))
    return out


def read_layout(f: IO[bytes], path: str) -> Layout:
    """Header, storage map and frame table of an open plan file; checks that they agree with each other and
    with the file's size (a truncated or extended file is refused here, before any record is read)."""
    raw, pos = read_raw_header(f, path)
    check_version(raw, path)
    spans = _spans(raw, path)
    try:
        size = os.fstat(f.fileno()).st_size
    except OSError as e:
        raise PlanError(f"{path}: cannot read plan ({e.strerror})") from None
    storage, body_start = _unpack_at(
        f, pos, path, "truncated plan (the storage map after the header is cut short)",
        "corrupt plan (cannot decode the storage map after the header)", max_buffer_size=64 << 20,
    )  # fmt: skip
    codec = storage.get("codec") if isinstance(storage, dict) else None
    stored = storage.get("frames") if isinstance(storage, dict) else None
    if codec not in CODECS or not isinstance(stored, list):
        raise PlanError(f"{path}: corrupt plan storage map (codec {codec!r}; this lmeval reads {', '.join(CODECS)})")
    # the header's non-empty spans, in stream order, must tile the record stream; each is one or more frames
    used = sorted((s, n, name) for name, s, n in spans if n > 0)
    frames: list[Frame] = []
    entries = iter(stored)
    pos = 0
    offset = body_start
    for start, length, name in used:
        if start != pos:
            raise PlanError(f"{path}: malformed plan header (task {name!r}: spans overlap or leave gaps)")
        while pos < start + length:
            entry = next(entries, None)
            if not (isinstance(entry, list) and len(entry) == 2 and all(type(x) is int and x > 0 for x in entry)):
                raise PlanError(f"{path}: corrupt plan storage map (task {name!r}: missing or bad frame entry)")
            ulen, slen = entry
            if pos + ulen > start + length or ulen > FRAME_MAX or (codec == "none" and slen != ulen):
                raise PlanError(
                    f"{path}: corrupt plan storage map (task {name!r}: a frame of {ulen} bytes does not fit its "
                    f"span of {length} bytes)"
                )
            frames.append(Frame(name, pos, ulen, offset, slen))
            pos += ulen
            offset += slen
    if next(entries, None) is not None:
        raise PlanError(f"{path}: corrupt plan storage map (more frames than the header's task spans cover)")
    if offset != size:
        what = "truncated or modified plan" if size < offset else "modified plan: trailing bytes after its records"
        raise PlanError(f"{path}: {what} (its storage map promises {offset} bytes, the file holds {size})")
    return Layout(path, raw, codec, tuple(frames), body_start, size, {name: (s, n) for name, s, n in spans})


def open_layout(path: str) -> tuple[IO[bytes], Layout]:
    """Open a plan file and read its layout; the caller closes the returned file."""
    from lmeval.plans.limits import InputError, open_regular

    try:
        f = open_regular(path, what="plan")  # not /dev/zero, a FIFO, a directory; returned to the caller
    except InputError as e:
        raise PlanError(str(e)) from None
    except OSError as e:
        raise PlanError(f"{path}: cannot open plan ({e.strerror})") from None
    try:
        return f, read_layout(f, path)
    except BaseException:
        f.close()
        raise


def _read_exact(f: IO[bytes], n: int, path: str, task: str) -> bytes:
    try:
        b = f.read(n)
    except OSError as e:
        raise PlanError(f"{path}: cannot read plan ({e.strerror})") from None
    if len(b) != n:
        raise PlanError(f"{path}: truncated plan (task {task!r} is cut short)")
    return b


def stored_chunks(f: IO[bytes], path: str, frame: Frame, size: int = _READ) -> Iterator[bytes]:
    """The stored (possibly compressed) bytes of a frame, in chunks."""
    f.seek(frame.offset)
    left = frame.stored
    while left > 0:
        n = min(size, left)
        yield _read_exact(f, n, path, frame.task)
        left -= n


def stored_bytes(f: IO[bytes], path: str, frame: Frame) -> bytes:
    f.seek(frame.offset)
    return _read_exact(f, frame.stored, path, frame.task)


def decompress_frame(data: bytes, layout: Layout, frame: Frame) -> bytes:
    """A zstd frame's records: exactly ``frame.length`` bytes or a one-line PlanError. The frame must declare
    that content size in its own header (lmeval always writes it), so the decompressor never allocates more than
    the plan's header declares, and output past it is an error, not memory (a decompression bomb)."""
    where = f"{layout.path}: task {frame.task!r}"
    try:
        declared = zstandard.get_frame_parameters(data).content_size
    except zstandard.ZstdError as e:
        raise PlanError(f"{where}: corrupt compressed plan data (zstd: {e})") from None
    if declared != frame.length:
        shown = "no size" if declared >= 1 << 63 else f"{declared} bytes"
        raise PlanError(
            f"{where}: corrupt or hostile compressed plan data: a zstd frame declares {shown}, the plan header "
            f"{frame.length} bytes; refused"
        )
    try:
        out = zstandard.ZstdDecompressor(max_window_size=MAX_WINDOW).decompress(
            data, max_output_size=frame.length, allow_extra_data=False
        )
    except zstandard.ZstdError as e:
        raise PlanError(f"{where}: corrupt or truncated compressed plan data (zstd: {e})") from None
    if len(out) != frame.length:  # pragma: no cover - zstd checks the declared size itself
        raise PlanError(f"{where}: corrupt compressed plan data ({len(out)} of {frame.length} bytes)")
    return out


def frame_chunks(f: IO[bytes], layout: Layout, frame: Frame) -> Iterator[bytes]:
    """The uncompressed record bytes of one frame (one chunk per zstd frame, bounded by FRAME_MAX)."""
    if layout.codec == "none":
        yield from stored_chunks(f, layout.path, frame)
    else:
        yield decompress_frame(stored_bytes(f, layout.path, frame), layout, frame)


def chunks(f: IO[bytes], layout: Layout, frames: Iterable[Frame] | None = None) -> Iterator[bytes]:
    """The uncompressed record stream of ``frames`` (default: all, in file order), one frame at a time."""
    for fr in layout.frames if frames is None else frames:
        yield from frame_chunks(f, layout, fr)


def task_chunks(f: IO[bytes], layout: Layout, task: str) -> Iterator[bytes]:
    """One task's uncompressed record bytes."""
    return chunks(f, layout, layout.task_frames(task))


class BackgroundHash:
    """sha256 fed on a worker thread: hashlib releases the GIL on large buffers, so hashing one frame overlaps
    with decompressing or decoding the next. ``update`` keeps at most a few chunks in flight."""

    def __init__(self, data: bytes = b"") -> None:
        self._h = hashlib.sha256(data)
        self._pool = ThreadPoolExecutor(max_workers=1)
        self._pending: deque[Future[None]] = deque()

    def update(self, chunk: bytes) -> None:
        self._pending.append(self._pool.submit(self._h.update, chunk))
        while len(self._pending) > 2:
            self._pending.popleft().result()

    def hexdigest(self) -> str:
        while self._pending:
            self._pending.popleft().result()
        self._pool.shutdown()
        return self._h.hexdigest()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


def hashed(src: Iterable[bytes], h: BackgroundHash) -> Iterator[bytes]:
    """``src``, passing every chunk to ``h`` on its way."""
    for chunk in src:
        h.update(chunk)
        yield chunk


# -- writing ------------------------------------------------------------------------------------------


def _frame_payloads(blobs: list[bytes], lengths: list[int]) -> Iterator[bytes]:
    """The records' bytes cut into frames: within each task (``lengths``: the non-empty spans' lengths in
    order), whole records up to FRAME_TARGET bytes per frame."""
    i = 0
    for length in lengths:
        got = 0
        while got < length:
            parts = [blobs[i]]
            size = len(blobs[i])
            i += 1
            while got + size < length and size + len(blobs[i]) <= FRAME_TARGET:
                parts.append(blobs[i])
                size += len(blobs[i])
                i += 1
            got += size
            yield b"".join(parts)
        if got != length:
            raise ValueError("task spans do not fall on record boundaries")
    if i != len(blobs):
        raise ValueError("records past the last task span")


def _parallel_map(fn: Callable[[bytes], T], items: Iterator[bytes]) -> list[T]:
    """``[fn(x) for x in items]`` on a few threads (zstd releases the GIL), with only a few inputs in flight."""
    workers = max(1, min(4, os.cpu_count() or 1))
    out: list[T] = []
    with ThreadPoolExecutor(max_workers=workers) as pool:
        pending: deque[Future[T]] = deque()
        for x in items:
            pending.append(pool.submit(fn, x))
            if len(pending) > 2 * workers:
                out.append(pending.popleft().result())
        out.extend(f.result() for f in pending)
    return out


def compress_frame(data: bytes, level: int = ZSTD_LEVEL) -> bytes:
    """One frame's records as stored by the ``zstd`` codec (checksum and content size written)."""
    return zstandard.ZstdCompressor(level=level, write_checksum=True, write_content_size=True).compress(data)


def task_payloads(data: bytes, lengths: list[int]) -> list[bytes]:
    """One task's record bytes (``data``: its records joined; ``lengths``: each record's length) cut into
    frames exactly as ``encode_body`` cuts them (whole records, up to FRAME_TARGET bytes per frame)."""
    out: list[bytes] = []
    total = len(data)
    i = got = 0
    while got < total:
        size = lengths[i]
        i += 1
        while got + size < total and size + lengths[i] <= FRAME_TARGET:
            size += lengths[i]
            i += 1
        out.append(data[got : got + size])
        got += size
    if got != total or i != len(lengths):
        raise ValueError("record lengths do not add up to the task's bytes")
    return out


def storage_map(codec: str, pairs: list[tuple[int, int]]) -> bytes:
    """The storage map for frames of (uncompressed, stored) lengths."""
    return canonical_bytes({"codec": codec, "frames": [[n, s] for n, s in pairs]})


def encode_body(
    header: dict[str, Any], blobs: list[bytes], codec: str = DEFAULT_CODEC, level: int = ZSTD_LEVEL
) -> tuple[bytes, list[bytes]]:
    """The storage map and the frames that follow a sealed header whose dict form is ``header``."""
    if codec not in CODECS:
        raise ValueError(f"unknown plan codec {codec!r} (one of {', '.join(CODECS)})")
    spans = sorted((s, n) for _, s, n in _spans(header, "<plan>") if n > 0)
    payloads = _frame_payloads(blobs, [n for _, n in spans])
    if codec == "none":
        pairs = [(len(p), p) for p in payloads]
    else:

        def compress(data: bytes) -> tuple[int, bytes]:
            return len(data), compress_frame(data, level)

        pairs = _parallel_map(compress, payloads)
    storage = storage_map(codec, [(n, len(b)) for n, b in pairs])
    return storage, [b for _, b in pairs]
