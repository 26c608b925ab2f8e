"""Text normalisation and n-gram hashing (the GPT-3 / lm-eval ``decontamination.janitor`` definition).

A text's ASCII letters are lower-cased, ASCII punctuation (``string.punctuation``) is deleted (not replaced:
"don't" -> "dont"), and it is split on ASCII whitespace into words, on its UTF-8 bytes (as lm-eval's
``Janitor.normalize_string`` then ``str.split``); its n-grams are the runs of ``n`` consecutive words (13 by
default). Each word hashes to 64 bits (``WordHasher``, numpy over a batch's bytes), an n-gram to a polynomial
over its word hashes modulo 2**64, computed with numpy over a whole batch of words at once. Two different
n-grams share a hash with probability about 2**-64 per pair.
"""

from __future__ import annotations

import string

import numpy as np

NGRAM = 13
_DELETE = string.punctuation.encode()
_MUL = np.uint64(0x100000001B3)  # an odd 64-bit multiplier (FNV prime)


def word_bytes(text: str) -> list[bytes]:
    """``text`` normalised into words, as UTF-8 bytes (the fast path: bytes methods, no per-word Python)."""
    return text.encode("utf-8", "surrogatepass").lower().translate(None, _DELETE).split()


def words(text: str) -> list[str]:
    """``text`` normalised into words."""
    return [w.decode("utf-8", "surrogatepass") for w in word_bytes(text)]


_P = np.uint64(0x9E3779B97F4A7C15 | 1)
_PINV = np.uint64(pow(int(_P), -1, 1 << 64))


class WordHasher:
    """Words -> 64-bit hashes, vectorised over a whole space-joined text: a polynomial over the word's UTF-8
    bytes modulo 2**64 from prefix sums (``P`` is odd, so invertible), then the splitmix64 finaliser."""

    def __init__(self) -> None:
        self._pow = np.ones(1, dtype=np.uint64)
        self._inv = np.ones(1, dtype=np.uint64)

    def _powers(self, size: int) -> tuple[np.ndarray, np.ndarray]:
        if self._pow.shape[0] < size:
            k = max(size, 2 * self._pow.shape[0])
            with np.errstate(over="ignore"):
                self._pow = np.cumprod(np.full(k, _P, dtype=np.uint64), dtype=np.uint64)
                self._inv = np.cumprod(np.full(k, _PINV, dtype=np.uint64), dtype=np.uint64)
        return self._pow[:size], self._inv[:size]

    def joined(self, text: bytes) -> np.ndarray:
        """The hashes of the words of ``text``, whose words are separated by single spaces."""
        b = np.frombuffer(text, dtype=np.uint8)
        if b.shape[0] == 0:
            return np.empty(0, dtype=np.uint64)
        space = np.flatnonzero(b == 32)
        starts = np.concatenate(([0], space + 1)).astype(np.int64)
        ends = np.concatenate((space, [b.shape[0]])).astype(np.int64) - 1
        pw, inv = self._powers(b.shape[0])
        with np.errstate(over="ignore"):
            sums = np.cumsum((b.astype(np.uint64) + np.uint64(1)) * inv, dtype=np.uint64)
            before = np.where(starts > 0, sums[np.maximum(starts - 1, 0)], np.uint64(0))
            h = (sums[ends] - before) * pw[ends]
            h ^= h >> np.uint64(30)
            h *= np.uint64(0xBF58476D1CE4E5B9)
            h ^= h >> np.uint64(27)
            h *= np.uint64(0x94D049BB133111EB)
            h ^= h >> np.uint64(31)
        return h

    def hashes(self, ws: list[bytes]) -> np.ndarray:
        return self.joined(b" ".join(ws)) if ws else np.empty(0, dtype=np.uint64)


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
    return np.unique(gram_hashes(hasher.hashes(word_bytes(text)), n))
