"""Vectorised exact_match equals lm-eval's ``exact_match_hf_evaluate`` row by row."""

from __future__ import annotations

import random

import lm_eval.api.metrics as lm_metrics  # noqa: E402
import polars as pl
import pytest

from lmeval.scorer.metrics import exact_match_vector

PIECES = [
    "#### ",
    "12",
    "1,234",
    "$5",
    ".",
    "\n",
    " ",
    "A",
    "b",
    "é",
    "İ",
    "ß",
    "Σ",
    "\x00",
    "!",
    "?",
    "٣",
    "\t",
    "The answer is ",
    "x",
]
OPTIONS = [
    {},
    {"ignore_case": True},
    {"ignore_case": True, "ignore_punctuation": True},
    {"ignore_numbers": True, "ignore_punctuation": True},
    {"ignore_case": True, "ignore_punctuation": False, "regexes_to_ignore": [",", "\\$", "(?s).*#### ", "\\.$"]},
    {"regexes_to_ignore": ["\\s+", "\\b[a-z]\\b"], "ignore_case": True},
]


def _strings(n: int, seed: int) -> list[str]:
    r = random.Random(seed)
    return ["".join(r.choice(PIECES) for _ in range(r.randint(0, 6))) for _ in range(n)]


@pytest.mark.parametrize("opts", OPTIONS)
def test_exact_match_matches_lm_eval(opts: dict) -> None:
    preds = _strings(1500, 1)
    golds = [p if i % 3 == 0 else q for i, (p, q) in enumerate(zip(preds, _strings(1500, 2), strict=True))]
    got = exact_match_vector(pl.Series(preds), pl.Series(golds), opts).to_list()
    want = [
        float(lm_metrics.exact_match_hf_evaluate(predictions=[p], references=[g], **opts)["exact_match"])
        for p, g in zip(preds, golds, strict=True)
    ]
    assert got == want
    assert 0.0 in want and 1.0 in want


# Non-ASCII punctuation and symbols (Unicode categories P* and S*), ASCII punctuation next to them, letters
# whose case folding is not ASCII, and spaces that are not U+0020. lm-eval's ignore_punctuation strips
# ``string.punctuation`` only (ASCII), so "«a»" and "a" stay different while "a!" and "a" become equal.
UNICODE_PIECES = [
    "«", "»", "—", "–", "…", "¿", "¡", "、", "。", "！", "？", "“", "”", "‘", "’", "·", "§", "¶", "‰",
    "€", "£", "±", "×", "÷", "°", "©", "™", "½", "²", "\u00a0", "\u2009", "‐", "٪", "؟",
    "!", ".", ",", "-", "'", '"', "$", "a", "b", "É", "é", "ß", "1",
]  # fmt: skip
UNICODE_OPTIONS = [{"ignore_punctuation": True}, {"ignore_punctuation": True, "ignore_case": True},
                   {"ignore_punctuation": True, "ignore_numbers": True}]  # fmt: skip


def _unicode_pairs(n: int) -> tuple[list[str], list[str]]:
    """Pairs that differ only by inserted punctuation/symbols (ASCII or not), and unrelated pairs."""
    r = random.Random(26)
    preds, golds = [], []
    marks = [p for p in UNICODE_PIECES if not p.isalnum()]
    for i in range(n):
        base = "".join(r.choice("abÉé1 ") for _ in range(r.randint(1, 4)))
        noisy = "".join(ch + (r.choice(marks) if r.random() < 0.5 else "") for ch in base)
        preds.append(noisy if i % 2 else "".join(r.choice(UNICODE_PIECES) for _ in range(r.randint(0, 5))))
        golds.append(base)
    return preds, golds


@pytest.mark.parametrize("opts", UNICODE_OPTIONS)
def test_ignore_punctuation_strips_ascii_only_like_lm_eval(opts: dict) -> None:
    import unicodedata

    from lmeval.scorer.metrics import exact_match_np

    preds, golds = _unicode_pairs(2000)
    want = [
        float(lm_metrics.exact_match_hf_evaluate(predictions=[p], references=[g], **opts)["exact_match"])
        for p, g in zip(preds, golds, strict=True)
    ]
    assert exact_match_vector(pl.Series(preds), pl.Series(golds), opts).to_list() == want
    assert [exact_match_np([p], [g], **opts) for p, g in zip(preds, golds, strict=True)] == want

    # the alphabet can tell: some pairs lm-eval keeps apart would be equal if every Unicode punctuation or
    # symbol were stripped, and some pairs equal only after ASCII punctuation is stripped
    def strip_all(s: str) -> str:
        return "".join(ch for ch in s if unicodedata.category(ch)[0] not in "PS")

    apart = [p for p, g, w in zip(preds, golds, want, strict=True) if w == 0.0 and strip_all(p) == strip_all(g)]
    joined = [p for p, g, w in zip(preds, golds, want, strict=True) if w == 1.0 and p != g]
    assert len(apart) > 50 and len(joined) > 20, (len(apart), len(joined))
