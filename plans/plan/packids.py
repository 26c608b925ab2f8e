"""msgpack arrays of token ids, packed once per shared start: ``IdsPacker.pack(ids) == msgpack.packb(ids)``.

A msgpack array is its header (its length) followed by each element's own packing, so the packing of ``a + b``
is the header of its length, then the elements of ``a``, then those of ``b``. The contexts of a task's docs in a
row often share a long start (a description and the same few-shot examples: ~1,200 of MMLU 5-shot's ~1,500
context ids); its elements are packed once and the rest of each context after them. Only for lists of ``int``
(the caller checks): an equal ``True`` or ``1.0`` would pack differently.
"""

from __future__ import annotations

import msgpack

MIN_SHARED = 32  # a shared start shorter than this is not worth keeping (and cheap to rule out)


def _common(a: list[int], b: list[int]) -> int:
    """The length of the longest common start of ``a`` and ``b`` (compared in slices, in C)."""
    lo, hi = 0, min(len(a), len(b))
    if a[:hi] == b[:hi]:
        return hi
    while hi - lo > 1:  # a[:lo] == b[:lo], a[:hi] != b[:hi]
        mid = (lo + hi) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid
    return lo


class IdsPacker:
    """Packs id lists in a row, reusing the packed elements of the start the last ones share."""

    def __init__(self) -> None:
        packer = msgpack.Packer()
        self._packb = packer.pack
        self._header = packer.pack_array_header
        self._prev: list[int] | None = None
        self._start: list[int] = []  # a start of the previous list, and its packed elements
        self._packed = b""

    def pack(self, ids: list[int]) -> bytes:
        """``msgpack.packb(ids)`` for a list of ``int``."""
        prev, self._prev = self._prev, ids
        n = len(self._start)
        if n and ids[:n] == self._start:
            return self._header(len(ids)) + self._packed + self._elements(ids[n:])
        if prev is None or len(ids) < MIN_SHARED or prev[:MIN_SHARED] != ids[:MIN_SHARED]:
            return self._packb(ids)
        n = _common(prev, ids)
        self._start = ids[:n]
        self._packed = self._elements(self._start)
        return self._header(len(ids)) + self._packed + self._elements(ids[n:])

    def _elements(self, ids: list[int]) -> bytes:
        """The packing of ``ids`` without its array header."""
        n = len(ids)
        return self._packb(ids)[1 if n < 16 else 3 if n < 1 << 16 else 5 :]
