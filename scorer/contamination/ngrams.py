"""Text normalisation and n-gram hashing (the GPT-3 / lm-eval ``decontamination.janitor`` definition).

A text is lower-cased, ASCII punctuation (``string.punctuation``) is deleted (not replaced: "don't" -> "dont"),
and it is split on whitespace into words; its n-grams are the runs of ``n`` consecutive words (13 by default).
Each word hashes to 64 bits (xxh64 of its UTF-8 bytes) and an n-gram to a polynomial over its word hashes
modulo 2**64, computed with numpy over a whole batch of words at once. Two different n-grams share a hash
with probability about 2**-64 per pair.
"""

from __future__ import annotations

import string

import numpy as np
import xxhash

NGRAM = 13
_DELETE = str.maketrans("", "", string.punctuation)
_MUL = np.uint64(0x100000001B3)  # an odd 64-bit multiplier (FNV prime)
_CACHE_LIMIT = 1 << 21


def words(text: str) -> list[str]:
    """``text`` normalised into words."""
    return text.lower().translate(_DELETE).split()


class WordHasher:
    """Word -> 64-bit hash, with a bounded cache (the corpus's frequent words hash once)."""

    def __init__(self) -> None:
        self._cache: dict[str, int] = {}

    def hashes(self, ws: list[str]) -> list[int]:
        cache = self._cache
        if len(cache) > _CACHE_LIMIT:
            cache.clear()
        out = []
        for w in ws:
            h = cache.get(w)
            if h is None:
                h = cache[w] = xxhash.xxh64_intdigest(w.encode("utf-8", "surrogatepass"))
            out.append(h)
        return out


def gram_hashes(tokens: np.ndarray, n: int) -> np.ndarray:
    """The hashes of the ``len(tokens) - n + 1`` n-grams of a uint64 array of word hashes (empty if shorter)."""
    m = tokens.shape[0] - n + 1
    if m <= 0:
        return np.empty(0, dtype=np.uint64)
    acc = tokens[:m].copy()
    with np.errstate(over="ignore"):
        for i in range(1, n):
            acc *= _MUL
            acc ^= tokens[i : i + m]
    return acc


def text_grams(text: str, n: int, hasher: WordHasher) -> np.ndarray:
    """The distinct n-gram hashes of one text."""
    return np.unique(gram_hashes(np.asarray(hasher.hashes(words(text)), dtype=np.uint64), n))
