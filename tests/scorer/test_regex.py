"""The regex filter paths (polars and Python) agree row for row with lm-eval 0.4.13's own ``RegexFilter`` and
with Python's ``re``."""

from __future__ import annotations

import random
import re
import warnings
import zlib

import polars as pl
import pytest

from lmeval.scorer.regex import ops as regex_ops
from lmeval.scorer.regex.translation import translate

PATTERNS = [
    (r"#### (\-?[0-9\.\,]+)", 0),
    (r"(-?[$0-9.,]{2,})|(-?[0-9]+)", -1),
    (r"(-?[$0-9.,]{2,})|(-?[0-9]+)", 0),
    (r"The answer is (\d+)", 0),
    (r"\b(\d+)\b", 0),
    (r"[A-D]", -1),
    (r"\(([A-D])\)", 0),
    (r"(?s)answer:(.*)", 0),
    (r"\s(\w+)\s*$", 0),
    (r"(a|ab)(c|bcd)(d*)", 0),
    (r"(\d+)[^\d\s]+", -1),
    (r"(x?)(y?)[0-9]", 0),  # every group can be empty: lm-eval then returns the *stripped* fallback
]
FALLBACKS = ["[invalid]", " [invalid] \n"]
SUBS = [",", r"\$", r"(?s).*#### ", r"\.$", r"\s+", r"[^\w ]", r"^\s*"]

ALPHABET = list("0123456789 .,$-#\n\tabcdAB():") + ["\x1c", "é", "€", "\u00a0", "\u2003", "٣", "\r"]


def _strings(n: int, seed: int) -> list[str]:
    rnd = random.Random(seed)
    out = []
    for _ in range(n):
        k = rnd.randint(0, 30)
        s = "".join(rnd.choice(ALPHABET) for _ in range(k))
        if rnd.random() < 0.3:
            s += f"#### {rnd.randint(-50, 5000):,}"
        if rnd.random() < 0.2:
            s += "\n"
        out.append(s)
    return out


@pytest.mark.parametrize("fallback", FALLBACKS)
@pytest.mark.parametrize("pattern,gs", PATTERNS)
def test_regex_extract_matches_lm_eval(pattern: str, gs: int, fallback: str) -> None:
    from lm_eval.filters.extraction import RegexFilter

    assert translate(pattern) is not None  # the polars path is really exercised
    data = _strings(3000, zlib.crc32(pattern.encode()))
    ref = RegexFilter(regex_pattern=pattern, group_select=gs, fallback=fallback)
    expected = [r[0] for r in ref.apply([[s] for s in data], [{}] * len(data))]
    got = regex_ops.regex_extract(pl.Series(data), pattern, gs, fallback).to_list()
    assert got == expected
    rx = re.compile(pattern)
    assert [regex_ops.py_regex_extract(rx, s, gs, fallback) for s in data] == expected


@pytest.mark.parametrize("pattern", SUBS)
def test_sub_matches_python(pattern: str) -> None:
    data = _strings(3000, 7)
    got = regex_ops.sub(pl.Series(data), pattern).to_list()
    assert got == [re.sub(pattern, "", s) for s in data]


def test_translation_refuses_what_it_cannot_state() -> None:
    assert translate(r"(?i)abc") is None  # IGNORECASE
    assert translate(r"(?m)^a") is None  # MULTILINE
    assert translate(r"a(?=b)") is None  # lookahead
    assert translate(r"(a)\1") is None  # back-reference
    assert translate(r"a*") is None  # can match empty
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # Python warns that [a&&b] may change meaning
        assert translate(r"[a&&b]") is not None  # literal in Python, escaped for Rust
    t = translate(r"\d+\.$")
    assert t is not None and t.has_end_anchor


def test_case_and_strip_match_python() -> None:
    data = _strings(2000, 11) + ["ǅ Σσς İ", " \x1c x \x1f", "ß"]
    s = pl.Series(data)
    assert regex_ops.lower(s).to_list() == [x.lower() for x in data]
    assert regex_ops.upper(s).to_list() == [x.upper() for x in data]
    assert regex_ops.strip(s).to_list() == [x.strip() for x in data]
