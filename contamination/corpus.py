"""The corpus side: text files, JSONL files (one named text field) and Parquet files, streamed as units.

A unit is a line of a text file (a line longer than ``MAX_UNIT`` bytes is read in pieces cut at whitespace,
each overlapping the one before by ``OVERLAP`` bytes, so an n-gram of up to 64 KiB across a cut is found),
a JSONL record or a Parquet row; n-grams never span two units. Each unit carries its location: the file and
the byte offset of the unit (text, JSONL) or its row number (JSONL line number, Parquet row). Memory stays
bounded: one unit (at most ``MAX_UNIT`` bytes) or one Parquet batch at a time.

Hostile input is counted, never a crash: a file whose first 8 KiB hold a NUL byte is skipped as binary; a unit
that is not UTF-8, a JSONL line that is not JSON or lacks the text field, or a JSONL line longer than
``MAX_UNIT`` is skipped; a Parquet file that cannot be read, or lacks the column, is skipped with its reason; a
Parquet value over ``MAX_UNIT`` bytes is skipped before it becomes a Python string, and a row group whose text
column holds more than ``MAX_PARQUET_CHUNK`` bytes (a 300 MB value) is skipped unread. A file is opened with
``plans.open_regular`` (a FIFO or device is refused, never read or waited on).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from lmeval.common import file_kind
from lmeval.contamination.errors import ContaminationError
from lmeval.plans import InputError, open_regular

MAX_UNIT = 8 << 20
MAX_PARQUET_CHUNK = 256 << 20  # uncompressed bytes of the text column in one Parquet row group (read at once)
OVERLAP = 64 << 10  # bytes the pieces of a long line overlap (an n-gram across a cut is found)
_WS = b" \t\n\r\x0b\x0c"


@dataclass
class Unit:
    file: str
    offset: int  # byte offset in the file (-1 for Parquet)
    row: int  # line number (text, JSONL) or row number (Parquet), 0-based
    text: str


@dataclass
class Span:
    """A part of one corpus file (``ranges``): lines starting at byte offsets in ``[start, end)`` of a text or
    JSONL file, or row groups ``[start, end)`` of a Parquet file; ``end`` -1: to the end. ``lines`` is set
    when read: the lines the span held (the driver adds the lines of the spans before it to their rows)."""

    file: str
    start: int = 0
    end: int = -1
    lines: int = 0


@dataclass
class CorpusStats:
    files: int = 0
    bytes: int = 0
    units: int = 0
    skipped_files: dict[str, str] = field(default_factory=dict)  # file -> why
    skipped_units: dict[str, int] = field(default_factory=dict)  # why -> count

    def skip(self, why: str) -> None:
        self.skipped_units[why] = self.skipped_units.get(why, 0) + 1


def corpus_files(paths: list[str]) -> list[Path]:
    """The files named, folders walked in sorted order; a missing path is a one-line error."""
    out: list[Path] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            out += sorted(q for q in path.rglob("*") if q.is_file())
        elif path.is_file():
            out.append(path)
        elif os.path.lexists(path):
            kind = file_kind(os.stat(path).st_mode) if path.exists() else "a dangling link"
            raise ContaminationError(f"{p}: a corpus file must be a regular file, found {kind}")
        else:
            raise ContaminationError(f"{p}: no such corpus file or folder")
    return out


def kind_of(path: Path) -> str:
    name = path.name.lower()
    if name.endswith((".jsonl", ".json", ".ndjson")):
        return "jsonl"
    if name.endswith(".parquet"):
        return "parquet"
    return "text"


def units(path: Path, text_field: str, stats: CorpusStats, span: Span | None = None) -> Iterator[Unit]:
    """The units of ``path`` (of its ``span`` only, when given: the file is counted by its first span; rows
    are then relative to the span's first line, ``span.lines`` set at its end)."""
    span = span or Span(str(path))
    first = span.start == 0
    stats.files += first
    kind = kind_of(path)
    if kind == "parquet":
        yield from _parquet(path, text_field, stats, span)
        return
    try:
        with open_regular(path, what="corpus file") as f:  # a FIFO or device swapped in after listing: refused
            if b"\x00" in f.read(8192):
                stats.skipped_files[str(path)] = "binary (a NUL byte in its first 8 KiB)"
                return
            f.seek(span.start)
            stats.bytes += os.fstat(f.fileno()).st_size if first else 0
            read = _jsonl if kind == "jsonl" else _text
            yield from read(f, str(path), text_field, stats, span)
    except InputError as e:
        stats.skipped_files[str(path)] = str(e).removeprefix(f"{path}: ")
    except OSError as e:
        stats.skipped_files[str(path)] = f"unreadable ({e.strerror or e})"


def _pieces(f: object, span: Span) -> Iterator[tuple[int, int, bytes, bool]]:
    """(offset, line number, bytes, whole line) for each line starting in ``span`` (``f`` at its start),
    long lines in pieces cut at whitespace; ``span.lines`` counts the lines."""
    pos = start = span.start
    line = 0
    carry = b""
    whole = True
    while True:
        span.lines = line
        if not carry and 0 <= span.end <= pos:
            return
        chunk = f.readline(MAX_UNIT)  # type: ignore[attr-defined]
        if not chunk:
            if carry:
                yield start, line, carry, whole
                span.lines = line + 1
            return
        data = carry + chunk
        if data.endswith(b"\n"):
            yield start, line, data, whole
            pos += len(chunk)
            start, carry, line, whole = pos, b"", line + 1, True
            continue
        pos += len(chunk)
        if len(data) < MAX_UNIT:  # the last line, without a newline
            carry = data
            continue
        cut = max(data.rfind(c, 0, len(data)) for c in _WS)
        if cut <= 0:
            cut = len(data)
        yield start, line, data[:cut], False
        whole = False
        back = max(data.rfind(c, 0, max(cut - OVERLAP, 1)) for c in _WS)  # the next piece overlaps this one
        if back <= 0:
            back = cut
        start += back
        carry = data[back:]


def _text(f: object, file: str, text_field: str, stats: CorpusStats, span: Span) -> Iterator[Unit]:
    for offset, line, raw, _ in _pieces(f, span):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            stats.skip("invalid UTF-8")
            continue
        stats.units += 1
        yield Unit(file, offset, line, text)


def _jsonl(f: object, file: str, text_field: str, stats: CorpusStats, span: Span) -> Iterator[Unit]:
    long_line = -1
    for offset, line, raw, whole in _pieces(f, span):
        if not whole:
            if line != long_line:
                stats.skip(f"JSONL line over {MAX_UNIT} bytes")
                long_line = line
            continue
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except (UnicodeDecodeError, ValueError):
            stats.skip("not JSON or not UTF-8")
            continue
        text = obj.get(text_field) if isinstance(obj, dict) else None
        if not isinstance(text, str):
            stats.skip(f"no string field {text_field!r}")
            continue
        stats.units += 1
        yield Unit(file, offset, line, text)


def _parquet_units(path: Path, column: object, text_field: str, stats: CorpusStats, row: int) -> Iterator[Unit]:
    """The string values of one batch as units; a value over ``MAX_UNIT`` bytes is skipped (counted) before it
    becomes a Python string."""
    import pyarrow as pa
    import pyarrow.compute as pc

    arr: pa.Array = column  # type: ignore[assignment]
    if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        for _ in range(len(arr)):
            stats.skip(f"no string field {text_field!r}")
        return
    sizes = pc.binary_length(arr).to_pylist()
    for i, n in enumerate(sizes):
        if n is None:
            stats.skip(f"no string field {text_field!r}")
        elif n > MAX_UNIT:
            stats.skip(f"a Parquet value longer than {MAX_UNIT} bytes")
        else:
            stats.units += 1
            yield Unit(str(path), -1, row + i, arr[i].as_py())


def _parquet(path: Path, text_field: str, stats: CorpusStats, span: Span) -> Iterator[Unit]:
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
        stats.bytes += path.stat().st_size if span.start == 0 else 0
        if text_field not in pf.schema_arrow.names:
            stats.skipped_files[str(path)] = f"no column {text_field!r}"
            return
        col = pf.schema_arrow.names.index(text_field)
        stop = pf.num_row_groups if span.end < 0 else min(span.end, pf.num_row_groups)
        row = sum(pf.metadata.row_group(i).num_rows for i in range(span.start))  # rows are absolute
        for g in range(span.start, stop):
            meta = pf.metadata.row_group(g)
            if meta.column(col).total_uncompressed_size > MAX_PARQUET_CHUNK:  # never decoded: memory stays bounded
                stats.skip(f"a Parquet row group whose {text_field!r} column holds more than {MAX_PARQUET_CHUNK} bytes")
                row += meta.num_rows
                continue
            for batch in pf.iter_batches(batch_size=4096, columns=[text_field], row_groups=[g]):
                yield from _parquet_units(path, batch.column(0), text_field, stats, row)
                row += batch.num_rows
    except (OSError, ValueError) as e:  # pyarrow's ArrowInvalid is a ValueError
        stats.skipped_files[str(path)] = f"not a readable Parquet file ({type(e).__name__})"
