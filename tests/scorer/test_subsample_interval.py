"""``run.subsample``'s interval (#40, scorer/statistics/subsample.py): in a seeded simulation of 200 subsets drawn by
the compiler's rule (plans/vocab/subsample.py) from real data, the 95% interval covers the full population's score at
about the nominal rate; and ``lmeval score`` of a subsampled run reports it (results.json ``subsample``).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl
import pytest

from lmeval.plans.scored import read_scored
from lmeval.plans.vocab import Subsample, choose, stratum_of
from lmeval.scorer.statistics.subsample import stratified
from tests.support import cli_in_process as cli
from tests.support import data_dir, jsonl_rows

SUBSETS = 200
BAND = (0.90, 0.99)  # 200 draws at a true 0.95: a binomial sd of 0.015, so the band is about 3 sd wide


def _coverage(task: str, scores: list[float], strata: list[str], n: int) -> tuple[float, float]:
    """The share of ``SUBSETS`` seeded subsets whose interval covers the full mean, and the mean width."""
    truth = sum(scores) / len(scores)
    hits, width = 0, 0.0
    for seed in range(SUBSETS):
        d = choose(task, strata, Subsample(n, seed, "k" if len(set(strata)) > 1 else None))
        e = stratified([scores[i] for i in d.doc_ids], d.doc_strata, d.strata_sizes)
        hits += e.lo <= truth <= e.hi
        width += e.hi - e.lo
    return hits / SUBSETS, width / SUBSETS


def test_interval_covers_boolq_at_the_nominal_rate() -> None:
    """boolq's labels (a real binary per-document score, 62% true) in subsets of 150 of 3270 documents."""
    rows = jsonl_rows("boolq", "validation")
    scores = [float(r["answer"]) for r in rows]
    cov, width = _coverage("boolq", scores, [""] * len(rows), 150)
    assert BAND[0] <= cov <= BAND[1], cov
    p = sum(scores) / len(scores)
    assert width == pytest.approx(2 * 1.96 * math.sqrt(p * (1 - p) / 150 * (1 - 150 / len(rows))), rel=0.05)


def test_stratified_interval_covers_arc_easy() -> None:
    """arc_easy stratified by its answer key; the score: whether the right choice is the longest one."""
    rows = jsonl_rows("arc_easy", "test")
    scores = []
    for r in rows:
        texts, labels = r["choices"]["text"], r["choices"]["label"]
        right = texts[labels.index(r["answerKey"])]
        scores.append(float(len(right) == max(len(t) for t in texts)))
    strata = [stratum_of(r["answerKey"]) for r in rows]
    cov, _ = _coverage("arc_easy", scores, strata, 120)
    assert BAND[0] <= cov <= BAND[1], cov


def test_a_census_is_exact() -> None:
    """Every document of every stratum: the estimate is the mean and the finite-population correction leaves
    no error."""
    scores = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0]
    e = stratified(scores, ["a", "a", "b", "b", "b", "b"], {"a": 2, "b": 4})
    assert e.estimate == pytest.approx(4 / 6) and e.stderr == 0.0 and e.lo == e.hi


def test_score_reports_the_interval(tmp_path: Path) -> None:
    """A subsampled arc_easy run (fake backend): results.json's ``subsample`` has the setting, the population
    and per metric the stratified estimate of samples.parquet's per-document values, with its interval."""
    out = tmp_path / "results"
    sub = "run.subsample={n:60,seed:5,strata:answerKey}"
    rc, stdout, err = cli("run", "+task=arc_easy", f"run.data_dir={data_dir()}", "model=tiny", "model.backend=fake",
                          sub, "--out", str(out), "--no-progress")  # fmt: skip
    assert rc == 0, err
    doc = json.loads((out / "results.json").read_text())
    rec = doc["subsample"]["tasks"]["arc_easy"]
    assert doc["subsample"]["version"] == 1
    assert {k: rec[k] for k in ("n", "seed", "strata", "population", "sampled")} == {
        "n": 60, "seed": 5, "strata": "answerKey", "population": 2376, "sampled": 60}  # fmt: skip
    rows = jsonl_rows("arc_easy", "test")
    samples = pl.read_parquet(out / "samples.parquet").sort("doc_id")
    ids = samples["doc_id"].to_list()
    strata = [str(rows[i]["answerKey"]) for i in ids]
    sizes: dict[str, int] = {}
    for r in rows:
        sizes[str(r["answerKey"])] = sizes.get(str(r["answerKey"]), 0) + 1
    for metric in ("acc", "acc_norm"):
        got = rec["metrics"][f"{metric},none"]
        vals = samples[metric].to_list()
        weighted = sum(sizes[s] / len(rows) * _mean([v for v, t in zip(vals, strata, strict=True) if t == s])
                       for s in set(strata))  # fmt: skip
        assert got["estimate"] == pytest.approx(weighted)
        assert got["ci95"][0] < got["estimate"] < got["ci95"][1] and got["stderr"] > 0
        assert doc["results"]["arc_easy"][f"{metric},none"] == pytest.approx(sum(vals) / len(vals))  # unweighted
    assert read_scored(out).results.subsample is not None  # the reader accepts it
    assert "subsample" in stdout and "of 2376 documents" in stdout


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)
