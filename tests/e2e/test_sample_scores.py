"""Every sample scored (#40): gsm8k with ``repeats: 4`` on SmolLM2, sampled (temperature 0.8, per-request seeds),
``sample_scores: [mean, majority, pass@1, pass@4]`` (``gsm8k_r4`` of the shared vLLM run, tests/e2e/smollm2_run.py).
maj@4, avg@4, pass@1 and pass@4 must equal what a hand computation from repeats.parquet's per-sample rows gives,
and those rows must be what gsm8k's own filters and exact_match make of the raw responses in the result parts
(recomputed here with Python's ``re``).

The model rarely solves gsm8k, so a second check rescores the same run after giving some repeats the gold
answer (a known pattern of right repeats per document), so the reductions are checked on non-trivial counts.
"""

from __future__ import annotations

import json
import math
import re
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from lmeval.plans.results import read_results
from lmeval.plans.scored import read_repeats
from tests.bounds import ARITHMETIC, SCORES
from tests.e2e.smollm2_run import R4, R4_DOCS, R4_REPEATS
from tests.support import cli_in_process as cli
from tests.support import jsonl_rows

DOCS, N, TASK = R4_DOCS, R4_REPEATS, R4
KEYS = ("avg@4", "maj@4", "pass@1", "pass@4")
STRICT = r"#### (\-?[0-9\.\,]+)"
FLEX = r"(-?[$0-9.,]{2,})|(-?[0-9]+)"
IGNORE = (",", r"\$", "(?s).*#### ", r"\.$")  # gsm8k's exact_match regexes_to_ignore (ignore_case: true)


def _extract(text: str, pattern: str, group_select: int) -> str:
    """lm-eval's RegexFilter on one response."""
    found = re.findall(pattern, text)
    if not found:
        return "[invalid]"
    m = found[group_select]
    if isinstance(m, tuple):
        m = next((x for x in m if x), m[0])
    return str(m).strip()


def _norm(s: str) -> str:
    for rx in IGNORE:
        s = re.sub(rx, "", s)
    return s.lower()


def _pass_at(n: int, c: int, k: int) -> float:
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def _by_hand(rep: pl.DataFrame, filt: str, doc: int) -> dict[str, float]:
    rows = rep.filter((pl.col("filter") == filt) & (pl.col("doc_id") == doc)).sort("repeat")
    answers, em = rows["filtered"].to_list(), rows["exact_match"].to_list()
    assert rows["repeat"].to_list() == list(range(N))
    vote = Counter(answers).most_common(1)[0][0]
    c = int(sum(em))
    return {"avg@4": sum(em) / N, "maj@4": em[answers.index(vote)], "pass@1": _pass_at(N, c, 1),
            "pass@4": _pass_at(N, c, 4), "first": em[0]}  # fmt: skip


def _check(out: Path) -> dict[str, dict[int, dict[str, float]]]:
    """repeats.parquet against the raw responses, and every reduction against the hand computation; returns
    the hand computations (filter -> doc -> key -> value)."""
    rep = read_repeats(out)
    assert rep is not None
    rep = rep.filter(pl.col("task") == TASK)
    assert rep.height == DOCS * N * 2
    golds = {i: d["answer"] for i, d in enumerate(jsonl_rows("gsm8k", "test", DOCS))}
    raw = read_results(out).filter(pl.col("task") == TASK).sort("doc_id")
    samples = pl.read_parquet(out / "samples.parquet").filter(pl.col("task") == TASK)
    results = json.loads((out / "results.json").read_text())["results"][TASK]
    hand: dict[str, dict[int, dict[str, float]]] = {}
    for filt, (pattern, group) in {"strict-match": (STRICT, 0), "flexible-extract": (FLEX, -1)}.items():
        hand[filt] = {}
        for doc, responses in zip(raw["doc_id"].to_list(), raw["responses"].to_list(), strict=True):
            rows = rep.filter((pl.col("filter") == filt) & (pl.col("doc_id") == doc)).sort("repeat")
            want = [_extract(r, pattern, group) for r in responses]
            assert rows["filtered"].to_list() == want, (filt, doc)
            assert rows["exact_match"].to_list() == [float(_norm(a) == _norm(golds[doc])) for a in want]
            hand[filt][doc] = _by_hand(rep, filt, doc)
        per_doc = samples.filter(pl.col("filter") == filt).sort("doc_id")
        assert per_doc["exact_match"].to_list() == [hand[filt][d]["first"] for d in range(DOCS)]  # lm-eval's
        for key in KEYS:
            col = per_doc[f"exact_match_{key}"].to_list()
            assert ARITHMETIC.same(col, [hand[filt][d][key] for d in range(DOCS)]), (filt, key)
            assert SCORES.close(results[f"exact_match_{key},{filt}"], sum(col) / DOCS)
            assert results[f"exact_match_{key}_stderr,{filt}"] >= 0
    return hand


@pytest.mark.vllm
def test_every_sample_scored_on_smollm2(smollm2_vllm: Path) -> None:
    _check(smollm2_vllm)
    texts = [t for lst in read_results(smollm2_vllm).filter(pl.col("task") == TASK)["responses"].to_list() for t in lst]
    assert len(texts) == DOCS * N and len(set(texts)) > DOCS  # sampled: the repeats differ


RIGHT = {0: [1], 1: [0, 2, 3], 2: [0, 1, 2, 3]}  # the repeats given the gold answer, per document


@pytest.mark.vllm
def test_reductions_on_known_counts(smollm2_vllm: Path, tmp_path: Path) -> None:
    """The run's responses with the repeats of ``RIGHT`` replaced by the gold answer, rescored: 1, 3 and 4
    right of 4 (so pass@1 = 1/4, 3/4, 1; pass@4 = 1; maj@4 right for the 3- and 4-right documents)."""
    out = tmp_path / "results"
    shutil.copytree(smollm2_vllm, out)
    golds = {i: d["answer"] for i, d in enumerate(jsonl_rows("gsm8k", "test", DOCS))}
    for k, part in enumerate(sorted(out.glob("part-*.parquet"))):
        rows = pl.read_parquet(part)
        new: list[Any] = []
        for task, doc, lst in zip(rows["task"], rows["doc_id"], rows["responses"].to_list(), strict=True):
            right = RIGHT[doc] if task == TASK else []
            new.append(None if lst is None else [f" {golds[doc]}\n\n" if j in right else t for j, t in enumerate(lst)])
        part.unlink()  # a part named without a checksum is read as it is (plans/results/partsum.py)
        changed = rows.with_columns(responses=pl.Series(new, dtype=pl.List(pl.String)))
        changed.write_parquet(out / f"part-{k:06d}.parquet")
    rc, _, err = cli("score", str(out))
    assert rc == 0, err
    hand = _check(out)["strict-match"]
    for doc, right in RIGHT.items():
        assert hand[doc]["pass@1"] >= len(right) / N  # the gold repeats count (a sampled one may be right too)
        assert hand[doc]["pass@4"] == 1.0
    assert hand[1]["maj@4"] == hand[2]["maj@4"] == 1.0
    assert hand[2]["avg@4"] == 1.0 and hand[2]["first"] == 1.0
