"""GPT-2 byte-level pre-tokenization of plain ASCII text in Python, so that a BPE tokenizer's model is asked only
for the distinct pre-tokens (each once per compile): the same ids as the tokenizer's own ``encode``, without
running its pre-tokenizer regex (most of its time) over every word.

For a tokenizer the fast path of ``encode.tokenizer`` accepts (``ByteLevel`` pre-tokenizer with its regex and no
prefix space, no normalizer, a BPE model) and with no truncation or padding set, ``encode(text,
add_special_tokens=False).ids`` is: the text cut at its added tokens, every other stretch cut by the GPT-2 regex
into pre-tokens, each pre-token's bytes mapped to characters (``bytes_to_unicode``) and given to the model,
the ids joined. On text of printable ASCII, tabs and newlines (``PLAIN``) that holds no added token's content,
the regex's classes are exact without Unicode tables (``\\p{L}`` is ``[A-Za-z]``, ``\\p{N}`` is ``[0-9]``, ``\\s``
is ``[\\t\\n ]`` there) and the byte map is one character per character. ``ByteLevelWords.encode`` does that for
such texts and gives None for any other (the caller then asks the tokenizer). ``ByteLevelWords.of`` checks
the byte map against the tokenizer's own pre-tokenizer and gives None when it differs.
"""

from __future__ import annotations

import re
from itertools import chain
from typing import Any

PLAIN = re.compile(r"[\t\n\x20-\x7e]*")
# GPT-2's pattern ('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+) on PLAIN text
_PRETOKEN = re.compile(r"'s|'t|'re|'ve|'m|'ll|'d| ?[A-Za-z]+| ?[0-9]+| ?[^\s A-Za-z0-9]+|\s+(?!\S)|\s+", re.ASCII)
_PROBE = "".join(chr(c) for c in (9, 10, *range(0x20, 0x7F)))


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> character map (every byte-level BPE tokenizer's)."""
    bs = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    cs = list(bs)
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs, strict=True)}


class ByteLevelWords:
    """Ids of plain ASCII texts from the tokenizer's model alone (see the module docstring)."""

    def __init__(self, backend: Any, added: list[str]) -> None:
        self._tokenize = backend.model.tokenize
        self._map = str.maketrans({chr(b): c for b, c in bytes_to_unicode().items() if b < 0x80})
        self._added = [a for a in added if a]
        self._ids: dict[str, list[int]] = {}  # pre-token -> ids

    @classmethod
    def of(cls, backend: Any, added: list[str]) -> ByteLevelWords | None:
        """For ``backend`` (a ``tokenizers.Tokenizer`` the fast path accepts; ``added``: its added tokens'
        contents), or None when it truncates or pads, or its pre-tokenizer maps the probe differently."""
        if backend.truncation is not None or backend.padding is not None:
            return None
        self = cls(backend, added)
        try:
            theirs = [s for s, _ in backend.pre_tokenizer.pre_tokenize_str(_PROBE)]
        except Exception:  # noqa: BLE001 - no Python view of the pre-tokenizer: do not take this path
            return None
        ours = [p.translate(self._map) for p in _PRETOKEN.findall(_PROBE)]
        return self if theirs == ours else None

    def encode(self, texts: list[str]) -> list[list[int] | None]:
        """Each text's ids (``encode(text, add_special_tokens=False).ids``), or None for a text that is not plain
        ASCII or holds an added token (the caller asks the tokenizer for those)."""
        joined = "\n".join(texts)  # one check for all texts first (a match across two only costs the texts' own)
        added = [a for a in self._added if a in joined]
        findall, plain = _PRETOKEN.findall, PLAIN.fullmatch
        if not added and plain(joined):
            split: list[list[str] | None] = [findall(t) for t in texts]
        elif not added:
            split = [findall(t) if plain(t) else None for t in texts]
        else:
            split = [
                _PRETOKEN.findall(t) if PLAIN.fullmatch(t) and not any(a in t for a in added) else None for t in texts
            ]
        ids = self._ids
        new = set(chain.from_iterable(ps for ps in split if ps is not None)).difference(ids)
        tokenize, bmap = self._tokenize, self._map
        for p in new:
            ids[p] = [t.id for t in tokenize(p.translate(bmap))]
        get = ids.__getitem__
        return [None if ps is None else list(chain.from_iterable(map(get, ps))) for ps in split]
