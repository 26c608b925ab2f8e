"""The stated numeric bounds, and every test tolerance derived from them (issue #51).

One bound per comparison, each ``|a - b| <= max(atol, rtol * |b|)`` (``b`` the reference side), with at least
a 2x margin over the worst difference measured on any CPU kind (docs: "What repeats exactly" and "lm-eval
compatibility"; ``tests/test_bounds.py`` checks the pages state these very numbers):

- ``LOGLIKELIHOOD``: lmeval against itself (same plan, model and dtype; another CPU, kernel path, batch,
  prefix cache, resume, part size or worker count): ``max(2e-5, 2e-6 * |ll|)``. Worst seen: 8.6e-5 at
  |ll| = 1770 (AVX2 against AVX-512 + BF16 kernels, 4.9e-8 relative) and 7.3e-6 at |ll| = 12.9.
- ``VS_LM_EVAL``: lmeval (vllm or hf backend) against ``lm_eval --model hf`` 0.4.13 on the same model folder
  and dtype (float32), per request, a rolling sum included: ``max(5e-4, 2.5e-5 * |ll|)``. Worst seen (SmolLM2,
  ``MEASURED_VS_LM_EVAL``): 2.25e-4 absolute (arc, |ll| about 20: 1.1e-5 relative) on Intel Xeon avx512f and
  AMD EPYC avx512f + avx512_bf16; 8.9e-5 on AMD EPYC avx2 only; rolling sums 5.6e-6 relative.
- ``SCORES``: a score (metric, stderr, per-sample value) computed from the same rows by lmeval and by lm-eval,
  or on two machines: ``max(1e-9, 1e-9 * |x|)`` (numpy's vectorised ``exp`` differs in the last bit between
  AVX2 and AVX-512; float64 sums in another order).
- ``ARITHMETIC``: one float64 formula evaluated two ways in pure Python/numpy (a hand-computed statistic, a
  mean of the same values): ``max(1e-12, 1e-12 * |x|)``, thousands of ulps (2.2e-16 each); no engine involved.

Propagation (``VS_LM_EVAL`` or ``LOGLIKELIHOOD`` as ``tol``): a metric that is a function of log-likelihoods
gets the tolerance its formula carries from the per-request bound, computed from the reference side's own
log-likelihoods:

- ``mean_ll_bound``: the mean of log-likelihoods each within its bound moves by at most the mean of the bounds;
- ``perplexity_rel``: ``exp(-mean ll)`` (lm-eval's perplexity; word and byte perplexity ``exp(-sum ll /
  units)``) moves by at most ``exp(d) - 1`` relative for a mean (per unit) log-likelihood within ``d``;
- ``bits_per_byte_abs``: ``-sum ll / (bytes * ln 2)`` moves by at most ``sum of bounds / (bytes * ln 2)``;
- ``bootstrap_stderr_abs``: a bootstrap stderr of a perplexity (the sample standard deviation of replicas,
  each a perplexity of a resample) moves by at most the largest replica's move;
- ``tie_gap``: acc / acc_norm (a log-likelihood divided by the choice's length) / PMI (a difference of two
  log-likelihoods): two sides may pick different choices only where the gap between them is within the sum
  of the terms' bounds;
- ``greedy_tie_gap``: greedy decoding may part only where the top two next-token log-probs (each a request
  of one token) lie within twice the per-request bound.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Tolerance:
    """Two floats agree when ``|a - b| <= max(atol, rtol * |b|)`` (both NaN agree too)."""

    atol: float
    rtol: float

    def bound(self, b: float) -> float:
        return max(self.atol, self.rtol * abs(b))

    def close(self, a: float, b: float) -> bool:
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return abs(a - b) <= self.bound(b)

    def same(self, a: Any, b: Any) -> bool:
        """``a`` equals ``b`` with every number in them (nested in dicts, lists and tuples included) within
        this tolerance; everything else (strings, booleans, None, keys, lengths) exactly."""
        if a is None or b is None or isinstance(a, str) or isinstance(b, str):
            return type(a) is type(b) and a == b
        if isinstance(a, bool) or isinstance(b, bool):  # a boolean metric may be logged as 1.0 by the other side
            return bool(a == b)
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            return self.close(float(a), float(b))
        if isinstance(a, dict) and isinstance(b, dict):
            return a.keys() == b.keys() and all(self.same(a[k], b[k]) for k in a)
        if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
            return len(a) == len(b) and all(self.same(x, y) for x, y in zip(a, b, strict=True))
        return bool(a == b)

    def outside(self, a: Iterable[float], b: Iterable[float]) -> list[tuple[int, float, float]]:
        """The pairs of two equally long columns (``b`` the reference) that are not ``close``: (index, a, b)."""
        return [(i, x, y) for i, (x, y) in enumerate(zip(a, b, strict=True)) if not self.close(x, y)]

    def scaled(self, factor: float) -> Tolerance:
        """This bound times ``factor`` (a planted shift of N bounds, or a fraction of one)."""
        return Tolerance(self.atol * factor, self.rtol * factor)


@dataclass(frozen=True)
class Measured:
    """The worst difference seen on one CPU kind: ``abs_diff`` at a log-likelihood of ``ll`` (the reference's)."""

    cpu: str
    abs_diff: float
    ll: float
    what: str


# --- the stated bounds ---------------------------------------------------------------------------------------
LOGLIKELIHOOD = Tolerance(atol=2e-5, rtol=2e-6)
VS_LM_EVAL = Tolerance(atol=5e-4, rtol=2.5e-5)
SCORES = Tolerance(atol=1e-9, rtol=1e-9)
ARITHMETIC = Tolerance(atol=1e-12, rtol=1e-12)
MARGIN = 2.0  # every bound is at least this many times the worst difference measured under it

# what the bounds were chosen from (issue #51's table, #42, the tiny-model runs of "What repeats exactly")
MEASURED_SELF = (
    Measured("AMD EPYC avx512f+avx512_bf16, AVX2 kernels forced vs native", 8.6e-5, -1770.0, "tiny model, rolling"),
    Measured("AMD EPYC avx512f+avx512_bf16, AVX2 kernels forced vs native", 7.3e-6, -12.9, "tiny model"),
    Measured("AMD EPYC avx512f+avx512_bf16, one CPU", 1.8e-5, -160.0, "tiny model"),
    Measured("AMD EPYC avx2 only, resumed", 7.6e-6, -287.0, "tiny model"),
)
MEASURED_VS_LM_EVAL = (
    Measured("AMD EPYC avx2 only", 8.9e-5, -20.0, "SmolLM2 arc_easy"),
    Measured("Intel Xeon avx512f", 2.25e-4, -20.0, "SmolLM2 arc_easy, 799 requests"),
    Measured("Intel Xeon avx512f", 5.6e-6 * 372.0, -372.0, "SmolLM2 rolling sum (5.6e-6 relative)"),
    Measured("AMD EPYC avx512f+avx512_bf16", 2.25e-4, -20.0, "SmolLM2 arc, 799 requests"),
    Measured("AMD EPYC avx512f+avx512_bf16", 2.1e-4, -15.0, "SmolLM2 winogrande"),
    Measured("AMD EPYC avx512f+avx512_bf16", 1.1e-5 * 15.0, -15.0, "SmolLM2, largest relative (1.1e-5)"),
    Measured("AMD EPYC avx512f+avx512_bf16", 5.5e-6 * 372.0, -372.0, "SmolLM2 rolling sum (5.5e-6 relative)"),
    # bench/ll_bound.py, 2118 requests (bench/results/ll-bound-avx512_bf16.md): the largest |diff| / bound
    Measured("AMD EPYC avx512f+avx512_bf16", 8.67e-5, -17.424341, "SmolLM2 arc_easy, bench/ll_bound.py"),
    # the same with AVX2 kernels forced (bench/results/ll-bound-avx512_bf16-avx2.md): 2.37e-4 the largest |diff|
    Measured("AMD EPYC avx512f+avx512_bf16, AVX2 kernels forced", 2.22e-4, -27.471333, "SmolLM2 arc_challenge"),
)


def margin(tol: Tolerance, measured: Iterable[Measured]) -> float:
    """The smallest ratio of the bound to a measured difference under it."""
    return min(tol.bound(m.ll) / m.abs_diff for m in measured)


# --- propagation -----------------------------------------------------------------------------------------------
def mean_ll_bound(tol: Tolerance, lls: Sequence[float]) -> float:
    """How far the mean of ``lls`` (the reference's) may move when each moves within ``tol``."""
    return sum(tol.bound(x) for x in lls) / len(lls)


def perplexity_rel(d: float) -> float:
    """Relative tolerance of ``exp(-m)`` when ``m`` (a mean log-likelihood, per unit) moves by at most ``d``:
    ``exp(d) - 1`` (the larger of ``exp(d) - 1`` and ``1 - exp(-d)``)."""
    return math.expm1(d)


def perplexity_tolerance(tol: Tolerance, lls: Sequence[float], units: float | None = None) -> Tolerance:
    """lm-eval's ``perplexity`` (``exp(-mean ll)``; ``units`` None) or word/byte perplexity (``exp(-sum ll /
    units)``, ``units`` the reference's word or byte count) over the reference's log-likelihoods ``lls``."""
    d = mean_ll_bound(tol, lls) if units is None else sum(tol.bound(x) for x in lls) / units
    return Tolerance(atol=0.0, rtol=perplexity_rel(d))


def bits_per_byte_tolerance(tol: Tolerance, lls: Sequence[float], n_bytes: float) -> Tolerance:
    """lm-eval's ``bits_per_byte`` (``-sum ll / (bytes * ln 2)``) over the reference's ``lls``."""
    return Tolerance(atol=sum(tol.bound(x) for x in lls) / (n_bytes * math.log(2)), rtol=0.0)


def bootstrap_stderr_tolerance(tol: Tolerance, lls: Sequence[float], iters: int = 100_000) -> Tolerance:
    """The bootstrap stderr of lm-eval's ``perplexity`` (the sample standard deviation of ``iters`` replicas
    ``x_j``, each the perplexity of a resample drawn with lm-eval's fixed seed, the same on both sides) moves
    by at most ``sqrt(iters / (iters - 1)) * max_j |dx_j|`` (a standard deviation is a seminorm). A replica is
    at most the largest single-document perplexity ``exp(-min ll)`` and moves by at most ``exp(D) - 1`` of
    itself, ``D`` the largest bound of one document's log-likelihood."""
    big_d = max(tol.bound(x) for x in lls)
    return Tolerance(atol=math.sqrt(iters / (iters - 1)) * math.exp(-min(lls)) * perplexity_rel(big_d), rtol=0.0)


def tie_gap(tol: Tolerance, ll_a: float, ll_b: float, len_a: float = 1.0, len_b: float = 1.0) -> float:
    """The largest gap between two choices' scores (``ll / len``: acc with lengths 1, acc_norm with the
    choices' lengths) that the two sides may order differently."""
    return tol.bound(ll_a) / len_a + tol.bound(ll_b) / len_b


def pmi_bound(tol: Tolerance, ll_cond: float, ll_uncond: float) -> float:
    """How far a PMI score (``ll(choice | context) - ll(choice | nothing)``) may move."""
    return tol.bound(ll_cond) + tol.bound(ll_uncond)


def greedy_tie_gap(tol: Tolerance) -> float:
    """The largest gap between the top two next-token log-probs (each a one-token request, small in
    magnitude) at which two engines' greedy decoding may part."""
    return 2 * tol.atol
