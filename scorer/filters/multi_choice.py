"""The ``multi_choice_regex`` filter: lm-eval's MultiChoiceRegexFilter, in Python (it reads each document's
choices)."""

from __future__ import annotations

import re
import sys
import unicodedata
from typing import Any

from lmeval.scorer.filters.registry import Context, register_filter
from lmeval.scorer.filters.responses import Responses


@register_filter("multi_choice_regex")
def _multi_choice(st: Responses, kw: dict[str, Any], ctx: Context) -> Responses:
    """lm-eval's MultiChoiceRegexFilter (reads each Instance's document's ``choices``)."""
    return Responses.from_py(_multi_choice_regex(kw, st.to_py(), ctx.docs()))


_PUNCT_TABLE: dict[int, None] | None = None


def _punct_table() -> dict[int, None]:
    global _PUNCT_TABLE
    if _PUNCT_TABLE is None:
        _PUNCT_TABLE = dict.fromkeys(i for i in range(sys.maxunicode) if unicodedata.category(chr(i)).startswith("P"))
    return _PUNCT_TABLE


def _multi_choice_regex(kw: dict[str, Any], resps: list[Any], docs: list[dict[str, Any]]) -> list[Any]:
    rx = re.compile(kw.get("regex_pattern", r"#### (\-?[0-9\.\,]+)"))
    gs = int(kw.get("group_select", 0))
    fallback = kw.get("fallback", "[invalid]")
    ignore_case = bool(kw.get("ignore_case", False))
    ignore_punct = bool(kw.get("ignore_punctuation", False))
    to_ignore = kw.get("regexes_to_ignore")

    def find(regex: re.Pattern[str], resp: Any, convert: dict[str, str] | None = None) -> Any:
        convert = convert or {}
        if not isinstance(resp, str):
            resp = ""
        found = regex.findall(resp)
        if found:
            m = found[gs]
            if isinstance(m, tuple):
                nonempty = [g for g in m if g]
                if not nonempty:
                    return ""
                m = nonempty[0]
            m = m.strip()
            if m and m in convert:
                m = convert[m]
            return m
        return found

    def ignores(s: str) -> str:
        if to_ignore is not None:
            for p in to_ignore:
                s = re.sub(p, "", s)
        if ignore_case:
            s = s.lower()
        if ignore_punct:
            s = s.translate(_punct_table())
        return s

    out = []
    for r, doc in zip(resps, docs, strict=True):
        alts: list[str] = []
        choice_to_alpha: dict[str, str] = {}
        letters: list[str] = []
        letter_to_target: dict[str, str] = {}
        nxt = "A"
        for c in doc["choices"]:
            m = ignores(c.strip())
            alts.append(re.escape(m))
            choice_to_alpha[m] = f"({nxt})"
            letters.append(nxt)
            letter_to_target[nxt] = f"({nxt})"
            nxt = chr(ord(nxt) + 1)
        fb_rx = re.compile("|".join(sorted(alts, key=len, reverse=True)))
        letter_rx = re.compile(rf":[\s]*({'|'.join(letters)})")
        filtered = []
        for resp in r:
            match = find(rx, resp)
            if not match:
                match = find(fb_rx, ignores(resp), choice_to_alpha)
                if not match:
                    match = find(letter_rx, resp, letter_to_target)
            if not match:
                match = fallback
            filtered.append(match)
        out.append(filtered)
    return out
