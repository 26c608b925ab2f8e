"""The stated bounds (``tests/bounds.py``): each keeps its margin over what was measured, the docs state the same
numbers, and each propagated tolerance holds for the worst moves its bound allows and fails just outside."""

from __future__ import annotations

import math
import random
import re
import statistics
from pathlib import Path

import pytest

from tests.bounds import (
    LOGLIKELIHOOD,
    MARGIN,
    MEASURED_SELF,
    MEASURED_VS_LM_EVAL,
    SCORES,
    VS_LM_EVAL,
    bits_per_byte_tolerance,
    bootstrap_stderr_tolerance,
    greedy_tie_gap,
    margin,
    perplexity_tolerance,
    pmi_bound,
    tie_gap,
)

REPO = Path(__file__).resolve().parents[1]
LLS = [-71.8, -65.2, -80.1, -70.3]  # the Llama-style model's last-word log-likelihoods are of this size


def _flat(page: str) -> str:
    return " ".join((REPO / page).read_text(encoding="utf-8").split())


def test_each_bound_keeps_its_margin_over_every_measurement() -> None:
    assert margin(LOGLIKELIHOOD, MEASURED_SELF) >= MARGIN
    assert margin(VS_LM_EVAL, MEASURED_VS_LM_EVAL) >= MARGIN
    # and the measurements span the three CPU kinds the docs name
    kinds = {m.cpu.split(",")[0] for m in MEASURED_VS_LM_EVAL}
    assert {"AMD EPYC avx2 only", "Intel Xeon avx512f", "AMD EPYC avx512f+avx512_bf16"} <= kinds


def test_docs_state_the_bounds() -> None:
    compat = _flat("docs/explanation/lm-eval-compatibility.md")
    m = re.search(r"\|Δ loglikelihood\| ≤ max\(([0-9.e-]+), ([0-9.e-]+)·\|ll\|\)", compat)
    assert m, "lm-eval compatibility no longer states the per-request bound against lm-eval"
    assert (float(m.group(1)), float(m.group(2))) == (VS_LM_EVAL.atol, VS_LM_EVAL.rtol)
    for cpu in ("avx2 only", "avx512f", "avx512_bf16"):
        assert cpu in compat, cpu
    assert "to 1e-9" in compat and SCORES.atol == 1e-9
    repeats = _flat("docs/explanation/what-repeats.md")
    m = re.search(r"\|Δ loglikelihood\| ≤ max\(([0-9.e-]+), ([0-9.e-]+)·\|ll\|\)", repeats)
    assert m and (float(m.group(1)), float(m.group(2))) == (LOGLIKELIHOOD.atol, LOGLIKELIHOOD.rtol)


def _shift(lls: list[float], factor: float) -> list[float]:
    return [x + factor * VS_LM_EVAL.bound(x) for x in lls]


@pytest.mark.parametrize("factor", [1.0, -1.0])  # our side's log-likelihoods above or below lm-eval's
def test_perplexity_tolerance_holds_at_the_bound_and_fails_beyond(factor: float) -> None:
    ppl = math.exp(-statistics.fmean(LLS))
    tol = perplexity_tolerance(VS_LM_EVAL, LLS)
    assert tol.close(math.exp(-statistics.fmean(_shift(LLS, 0.999 * factor))), ppl)  # the bound, float rounding aside
    assert not tol.close(math.exp(-statistics.fmean(_shift(LLS, 1.01 * factor))), ppl)


def test_word_perplexity_and_bits_per_byte_tolerances() -> None:
    lls, words, n_bytes = [-372.0, -512.5, -250.25], 231.0, 1204.0
    for factor, ok in ((0.999, True), (-0.999, True), (1.01, False), (-1.01, False)):
        moved = _shift(lls, factor)
        wp = perplexity_tolerance(VS_LM_EVAL, lls, units=words)
        assert wp.close(math.exp(-sum(moved) / words), math.exp(-sum(lls) / words)) is ok
        bpb = bits_per_byte_tolerance(VS_LM_EVAL, lls, n_bytes)
        assert bpb.close(-sum(moved) / n_bytes / math.log(2), -sum(lls) / n_bytes / math.log(2)) is ok


def test_bootstrap_stderr_tolerance_covers_a_bootstrap() -> None:
    """lm-eval's bootstrap (fixed resamples, the same on both sides) of ``exp(-mean)`` with every
    log-likelihood moved within its bound, the worst way: the stderr stays within the derived tolerance."""
    rng = random.Random(1234)
    draws = [[rng.randrange(len(LLS)) for _ in LLS] for _ in range(200)]

    def stderr(lls: list[float]) -> float:
        return statistics.stdev(math.exp(-statistics.fmean(lls[i] for i in d)) for d in draws)

    tol = bootstrap_stderr_tolerance(VS_LM_EVAL, LLS, iters=len(draws))
    want = stderr(LLS)
    worst = max(abs(stderr(_shift(LLS, s)) - want) for s in (1.0, -1.0))
    spread = [x + VS_LM_EVAL.bound(x) * (1 if i % 2 else -1) for i, x in enumerate(LLS)]
    worst = max(worst, abs(stderr(spread) - want))
    assert 0 < worst <= tol.atol < want


def test_choice_ties_and_pmi() -> None:
    """Two choices whose gap is within ``tie_gap`` can be ordered either way by lls within the bound; a gap
    beyond it cannot."""
    a, lens = [-20.0, -20.0 - 0.9 * tie_gap(VS_LM_EVAL, -20.0, -20.0)], (1.0, 1.0)
    moved = [a[0] - VS_LM_EVAL.bound(a[0]), a[1] + VS_LM_EVAL.bound(a[1])]
    assert a[0] > a[1] and moved[1] > moved[0]  # flipped within the bound
    far = [-20.0, -20.0 - 1.1 * tie_gap(VS_LM_EVAL, -20.0, -20.0, *lens)]
    moved = [far[0] - VS_LM_EVAL.bound(far[0]), far[1] + VS_LM_EVAL.bound(far[1])]
    assert moved[0] > moved[1]
    # acc_norm: the gap per character shrinks with the choices' lengths
    assert tie_gap(VS_LM_EVAL, -20.0, -30.0, 10.0, 20.0) == VS_LM_EVAL.bound(-20.0) / 10 + VS_LM_EVAL.bound(-30.0) / 20
    assert pmi_bound(VS_LM_EVAL, -20.0, -40.0) == VS_LM_EVAL.bound(-20.0) + VS_LM_EVAL.bound(-40.0)
    assert greedy_tie_gap(VS_LM_EVAL) == 2 * VS_LM_EVAL.atol
