"""Aggregations and stderr equal lm-eval 0.4.13's own functions (bootstrap included, same seeds)."""

from __future__ import annotations

import random

import lm_eval.api.metrics as lm_metrics  # noqa: E402
import pytest

from lmeval.scorer.metrics import aggregations as agg
from tests.bounds import ARITHMETIC, SCORES


@pytest.fixture(autouse=True)
def _no_mp(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DISABLE_MULTIPROC", "1")


def _floats(n: int, seed: int) -> list[float]:
    r = random.Random(seed)
    return [-r.random() * 20 for _ in range(n)]


def test_mean_and_stderr() -> None:
    x = [float(random.Random(1).random() < 0.3) for _ in range(500)]
    assert agg.aggregate("mean", x) == lm_metrics.mean(x)
    assert abs(agg.stderr("mean", "acc", x) - lm_metrics.mean_stderr(x)) < ARITHMETIC.atol


@pytest.mark.parametrize("name,fn", [("perplexity", "perplexity"), ("median", "median")])
def test_bootstrap_numeric(name: str, fn: str) -> None:
    x = _floats(60, 3)
    f = getattr(lm_metrics, fn)
    want = lm_metrics.bootstrap_stderr(f, x, iters=2000)
    got = agg.stderr(name, name, x, iters=2000)
    assert abs(got - want) <= SCORES.atol * max(1.0, abs(want))
    assert agg.aggregate(name, x) == f(x)


@pytest.mark.parametrize("name,fn", [("f1", "f1_score"), ("matthews_corrcoef", "matthews_corrcoef")])
def test_bootstrap_classification(name: str, fn: str) -> None:
    r = random.Random(5)
    items = [(r.randint(0, 1), r.randint(0, 1)) for _ in range(40)]
    f = getattr(lm_metrics, fn)
    ours = agg.bootstrap_replicates(name, items, 2000)
    # lm-eval calls sklearn once per resample (slow): compare the first 10 replicates of chunks 0 and 1
    for chunk in (0, 1):
        want = lm_metrics._bootstrap_internal(f, 10)((chunk, items))
        got = ours[chunk * 1000 : chunk * 1000 + 10]
        assert max(abs(a - b) for a, b in zip(got, want, strict=True)) <= ARITHMETIC.atol
    assert abs(agg.aggregate(name, items) - f(items)) <= ARITHMETIC.atol


def test_bootstrap_bleu_capped() -> None:
    r = random.Random(9)
    words = "the cat sat on a mat with dog and bird".split()
    items = [
        [" ".join(r.choice(words) for _ in range(6)), " ".join(r.choice(words) for _ in range(6))] for _ in range(15)
    ]
    want = lm_metrics.bootstrap_stderr(lm_metrics.bleu, items, iters=100)
    assert abs(agg.stderr("bleu", "bleu", items) - want) <= SCORES.atol
    assert abs(agg.aggregate("bleu", items) - lm_metrics.bleu(items)) <= ARITHMETIC.atol


def test_group_pooling() -> None:
    se, n = [0.05, 0.02, 0.1], [40, 300, 12]
    assert abs(agg.pooled_sample_stderr(se, n) - float(lm_metrics.pooled_sample_stderr(se, n))) < ARITHMETIC.atol
    v = [0.3, 0.5, 0.9]
    assert agg.weighted_mean(v, n) == lm_metrics.aggregate_subtask_metrics(v, n)


def test_f1_mcc_edge_cases_match_sklearn() -> None:
    import warnings

    cases = [[(0, 0), (0, 0), (0, 0)], [(1, 1), (1, 1)], [(0, 1), (1, 0), (1, 1), (0, 0), (1, 1)], [(1, 0), (1, 0)]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for items in cases:
            assert agg.aggregate("f1", items) == pytest.approx(float(lm_metrics.f1_score(items)), abs=ARITHMETIC.atol)
            assert agg.aggregate("matthews_corrcoef", items) == pytest.approx(
                float(lm_metrics.matthews_corrcoef(items)), abs=ARITHMETIC.atol
            )
