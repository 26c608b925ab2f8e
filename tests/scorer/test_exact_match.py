"""Vectorised exact_match equals lm-eval's ``exact_match_hf_evaluate`` row by row."""

from __future__ import annotations

import random

import lm_eval.api.metrics as lm_metrics  # noqa: E402
import polars as pl
import pytest

from lmeval.scorer import vector_metrics

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
    got = vector_metrics.exact_match(pl.Series(preds), pl.Series(golds), opts).to_list()
    want = [
        float(lm_metrics.exact_match_hf_evaluate(predictions=[p], references=[g], **opts)["exact_match"])
        for p, g in zip(preds, golds, strict=True)
    ]
    assert got == want
    assert 0.0 in want and 1.0 in want
