"""Corpus files cut into spans for ``--workers N`` (``corpus.Span``), so one large file scales past one worker.

The corpus's bytes are divided into about ``N`` equal parts (never under ``MIN_SPAN`` bytes each): a text or
JSONL file larger than a part is cut at byte offsets aligned to line starts (the first line start at or after
each raw cut: a line straddling a cut belongs to the span it starts in, so every line is read exactly once);
a Parquet file at row-group boundaries (by the groups' sizes). The spans are listed in corpus order; each
worker takes every ``N``-th, so it reads its spans in corpus order too. Rows come back relative to their
span's first line (Parquet rows are absolute); ``absolute_rows`` adds the lines of the spans before.
"""

from __future__ import annotations

import bisect
import os
from pathlib import Path

from lmeval.contamination.check import Matches
from lmeval.contamination.corpus import Span, kind_of

MIN_SPAN = 1 << 20  # bytes: a file is cut only into parts of at least this size
_SCAN = 1 << 20  # bytes read at a time looking for the next line start


def _line_start(path: str, cut: int, size: int) -> int:
    """The first line start at or after byte ``cut`` (``size`` when none)."""
    with open(path, "rb") as f:
        f.seek(cut - 1)
        pos = cut - 1
        while pos < size:
            chunk = f.read(_SCAN)
            if not chunk:
                break
            i = chunk.find(b"\n")
            if i >= 0:
                return pos + i + 1
            pos += len(chunk)
    return size


def _text_spans(path: str, size: int, parts: int) -> list[Span]:
    starts = [0]
    for k in range(1, parts):
        s = _line_start(path, size * k // parts, size)
        if starts[-1] < s < size:
            starts.append(s)
    ends = starts[1:] + [-1]
    return [Span(path, a, b) for a, b in zip(starts, ends, strict=True)]


def _parquet_spans(path: str, parts: int) -> list[Span]:
    import pyarrow.parquet as pq

    try:
        meta = pq.ParquetFile(path).metadata
    except (OSError, ValueError):  # unreadable: one span, the worker records why
        return [Span(path)]
    sizes = [meta.row_group(i).total_byte_size for i in range(meta.num_row_groups)]
    total = sum(sizes) or 1
    starts, acc = [0], 0
    for i, s in enumerate(sizes[:-1]):
        acc += s
        if acc * parts // total >= len(starts) and i + 1 > starts[-1]:
            starts.append(i + 1)
    ends = starts[1:] + [-1]
    return [Span(path, a, b) for a, b in zip(starts, ends, strict=True)]


def plan_spans(files: list[str], workers: int, min_span: int = MIN_SPAN) -> list[Span]:
    """The spans of ``files`` (in corpus order) for ``workers`` workers."""
    sizes = {}
    for f in files:
        try:
            sizes[f] = os.path.getsize(f)
        except OSError:
            sizes[f] = 0
    part = max(min_span, -(-sum(sizes.values()) // max(1, workers)))
    out: list[Span] = []
    for f in files:
        parts = min(workers, -(-sizes[f] // part), sizes[f] // min_span)  # parts of at least min_span
        if parts <= 1:
            out.append(Span(f))
        elif kind_of(Path(f)) == "parquet":
            out += _parquet_spans(f, parts)
        else:
            out += _text_spans(f, sizes[f], parts)
    return out


def absolute_rows(matches: Matches, spans: list[Span]) -> Matches:
    """``matches``' text and JSONL rows made absolute: each plus the lines of its file's spans before its own
    (``spans``: as read, ``lines`` set)."""
    by_file: dict[str, tuple[list[int], list[int]]] = {}
    for s in spans:
        starts, before = by_file.setdefault(s.file, ([], [0]))
        starts.append(s.start)
        before.append(before[-1] + s.lines)
    for locs in matches.locations.values():
        for loc in locs:
            starts, before = by_file.get(loc.file, ([], [0]))
            if loc.offset >= 0 and len(starts) > 1:
                loc.row += before[bisect.bisect_right(starts, loc.offset) - 1]
    matches.seen = {(d, x.file, x.offset, x.row) for d, locs in matches.locations.items() for x in locs}
    return matches
