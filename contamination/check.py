"""Match a corpus against a plan's n-gram index: per document, which of its n-grams occur and where.

The corpus is processed in batches of units (about ``BATCH_WORDS`` words or ``BATCH_BYTES`` bytes): the
batch's word hashes form one uint64 array, its n-gram hashes are computed at once (``ngrams.gram_hashes``),
n-grams spanning two units are masked out, and membership is a lookup in a bit table
(``PlanIndex.present``) and, for the few candidates, one ``searchsorted`` against the plan's sorted keys.
Only hits touch Python.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np

from lmeval.contamination.corpus import CorpusStats, Span, Unit, units
from lmeval.contamination.ngrams import WordHasher, gram_hashes, word_bytes
from lmeval.contamination.plantext import PlanIndex

BATCH_WORDS = 1 << 20
BATCH_BYTES = 8 << 20
MAX_LOCATIONS = 100  # locations kept per document (the count of matched n-grams is exact)


@dataclass
class CorpusLocation:
    doc: int  # document index into PlanIndex.docs
    file: str
    offset: int
    row: int


@dataclass
class Matches:
    """What the corpus matched: per document index, its matched n-gram hashes and first locations."""

    grams: dict[int, set[int]] = field(default_factory=dict)
    locations: dict[int, list[CorpusLocation]] = field(default_factory=dict)
    seen: set[tuple[int, str, int, int]] = field(default_factory=set)

    def add(self, doc: int, gram: int, unit: Unit) -> None:
        self.grams.setdefault(doc, set()).add(gram)
        key = (doc, unit.file, unit.offset, unit.row)
        locs = self.locations.setdefault(doc, [])
        if key not in self.seen and len(locs) < MAX_LOCATIONS:
            self.seen.add(key)
            locs.append(CorpusLocation(doc, unit.file, unit.offset, unit.row))

    def merge(self, other: Matches) -> None:
        """Add ``other``'s matches; every location is kept (``in_corpus_order`` then keeps the first)."""
        for d, g in other.grams.items():
            self.grams.setdefault(d, set()).update(g)
        for d, locs in other.locations.items():
            mine = self.locations.setdefault(d, [])
            for loc in locs:
                key = (d, loc.file, loc.offset, loc.row)
                if key not in self.seen:
                    self.seen.add(key)
                    mine.append(loc)


def _batches(stream: Iterable[Unit], hasher: WordHasher) -> Iterator[tuple[list[Unit], np.ndarray, np.ndarray]]:
    """(units, word hashes of the batch, words per unit)."""
    batch: list[Unit] = []
    pieces: list[bytes] = []
    counts: list[int] = []
    size = nbytes = 0
    for u in stream:
        ws = word_bytes(u.text)
        if not ws:
            continue
        batch.append(u)
        pieces.append(b" ".join(ws))
        counts.append(len(ws))
        size += len(ws)
        nbytes += len(pieces[-1]) + 1
        if size >= BATCH_WORDS or nbytes >= BATCH_BYTES:
            yield batch, hasher.joined(b" ".join(pieces)), np.asarray(counts, dtype=np.int64)
            batch, pieces, counts, size, nbytes = [], [], [], 0, 0
    if batch:
        yield batch, hasher.joined(b" ".join(pieces)), np.asarray(counts, dtype=np.int64)


def match_batch(
    index: PlanIndex, n: int, batch: list[Unit], tokens: np.ndarray, lens: np.ndarray, out: Matches
) -> None:
    if tokens.shape[0] < n or index.keys.shape[0] == 0:
        return
    uid = np.repeat(np.arange(len(batch), dtype=np.int64), lens)
    grams = gram_hashes(tokens, n)
    mask = np.uint64(index.present.shape[0] - 1)
    cand = np.flatnonzero(index.present[(grams & mask).astype(np.int64)])
    cand = cand[uid[cand] == uid[cand + n - 1]]  # n-grams within one unit
    pos = np.searchsorted(index.keys, grams[cand])
    np.minimum(pos, index.keys.shape[0] - 1, out=pos)
    hit = cand[index.keys[pos] == grams[cand]]
    for i in hit.tolist():
        g = int(grams[i])
        unit = batch[int(uid[i])]
        for doc in index.owners[g]:
            out.add(doc, g, unit)


def match_files(index: PlanIndex, n: int, files: list[str], text_field: str) -> tuple[Matches, CorpusStats]:
    """Stream ``files`` (already listed) against ``index``."""
    matches, stats, _ = match_spans(index, n, [Span(f) for f in files], text_field)
    return matches, stats


def match_spans(
    index: PlanIndex, n: int, spans: list[Span], text_field: str
) -> tuple[Matches, CorpusStats, list[Span]]:
    """Stream the ``spans`` of corpus files against ``index``; the spans come back with ``lines`` set."""
    from pathlib import Path

    stats = CorpusStats()
    out = Matches()
    hasher = WordHasher()

    def stream() -> Iterator[Unit]:
        for s in spans:
            yield from units(Path(s.file), text_field, stats, s)

    for batch, tokens, lens in _batches(stream(), hasher):
        match_batch(index, n, batch, tokens, lens, out)
    return out, stats, spans


def in_corpus_order(matches: Matches, files: list[str]) -> Matches:
    """``matches`` with each document's locations sorted by (file's place in ``files``, offset, row) and cut to
    ``MAX_LOCATIONS``: the same whichever process found them."""
    rank = {f: i for i, f in enumerate(files)}
    for locs in matches.locations.values():
        locs.sort(key=lambda x: (rank.get(x.file, len(rank)), x.offset, x.row))
        del locs[MAX_LOCATIONS:]
    return matches
