"""Paired tests, intervals and power for comparing two runs on the same documents (``lmeval compare``), and
the difference a plan can detect before it runs (``lmeval plan-power``).

- binary per-document metrics (every value 0 or 1 on both sides): McNemar's exact test on the flips,
  ``n01`` (A right, B wrong) and ``n10`` (A wrong, B right): under no difference each flip goes either way
  with probability 1/2, so ``p = min(1, 2 · P(X <= min(n01, n10)))``, X ~ Binomial(n01 + n10, 1/2),
  computed exactly in integers (``binomial_two_sided``);
- other per-document metrics: a paired bootstrap of the mean difference (``BOOT_ITERS`` resamples of the
  documents, numpy's ``default_rng(BOOT_SEED)``): the 2.5th/97.5th percentiles are the interval, and p is the
  share of resampled means at least as far from the observed one as the observed one is from 0, (k+1)/(B+1);
- the interval of a binary metric's difference is normal: Δ ± z·se, se the paired stderr sd(d)/sqrt(n);
- the minimum detectable effect (MDE) at 80% power with a two-sided 5% test is (z_0.975 + z_0.8) · se
  (about 2.80 · se): the smallest true difference this many documents would find significant 4 times in 5.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from statistics import NormalDist
from typing import Any

import numpy as np

from lmeval.plans import Intervals

ALPHA, POWER = 0.05, 0.80
Z_ALPHA = NormalDist().inv_cdf(1 - ALPHA / 2)
Z_POWER = NormalDist().inv_cdf(POWER)
MDE_FACTOR = Z_ALPHA + Z_POWER  # 2.8016
BOOT_ITERS = 10_000
BOOT_SEED = 0
_EXACT_UP_TO = 20_000  # flips: exact integer tail up to here, log-space sums beyond


@dataclass
class PairedTest:
    """One metric's paired comparison."""

    test: str  # "mcnemar" or "bootstrap"
    p: float
    low: float  # the 95% interval of the mean difference B - A
    high: float
    mde: float | None  # the minimum detectable effect at 80% power (None: sd of the differences is 0)
    n01: int | None = None  # McNemar: documents A got right and B wrong
    n10: int | None = None  # ... A wrong and B right


def binomial_two_sided(k: int, n: int) -> float:
    """The exact two-sided p-value of ``k`` successes in ``n`` trials with probability 1/2:
    ``min(1, 2 · P(X <= min(k, n - k)))`` (for p = 1/2 the same as scipy's ``binomtest(k, n).pvalue``)."""
    if n <= 0:
        return 1.0
    k = min(k, n - k)
    if n <= _EXACT_UP_TO:
        tail, c = 0, 1
        for i in range(k + 1):
            tail += c
            c = c * (n - i) // (i + 1)
        return float(min(Fraction(1), Fraction(2 * tail, 2**n)))
    logs = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) - n * math.log(2) for i in range(k + 1)]
    top = max(logs)
    return min(1.0, 2 * math.exp(top) * sum(math.exp(x - top) for x in logs))


def mde(se: float) -> float:
    """The minimum detectable effect at 80% power (two-sided 5% test) for a difference with stderr ``se``."""
    return MDE_FACTOR * se


def paired_test(a: Sequence[float], b: Sequence[float]) -> PairedTest | None:
    """McNemar (binary values) or a paired bootstrap (otherwise) of B - A; None with fewer than 2 pairs."""
    n = len(a)
    if n < 2 or len(b) != n:
        return None
    d = np.asarray(b, dtype=np.float64) - np.asarray(a, dtype=np.float64)
    mean = float(d.mean())
    se = float(d.std(ddof=1)) / math.sqrt(n)
    effect = mde(se) if se > 0 else None
    if all(x in (0.0, 1.0) for x in a) and all(x in (0.0, 1.0) for x in b):
        n10 = int(np.sum(d > 0))
        n01 = int(np.sum(d < 0))
        p = binomial_two_sided(n10, n01 + n10)
        return PairedTest("mcnemar", p, mean - Z_ALPHA * se, mean + Z_ALPHA * se, effect, n01, n10)
    rng = np.random.default_rng(BOOT_SEED)
    means = np.empty(BOOT_ITERS)
    step = max(1, 2_000_000 // n)
    for i in range(0, BOOT_ITERS, step):
        m = min(step, BOOT_ITERS - i)
        means[i : i + m] = d[rng.integers(0, n, size=(m, n))].mean(axis=1)
    lo, hi = np.quantile(means, [ALPHA / 2, 1 - ALPHA / 2])
    far = int(np.sum(np.abs(means - mean) >= abs(mean) - 1e-15))
    return PairedTest("bootstrap", (far + 1) / (BOOT_ITERS + 1), float(lo), float(hi), effect)


@dataclass
class PlanPower:
    """One task's (or group's) detectable difference before a run (``lmeval plan-power``)."""

    task: str
    key: str  # "metric,filter" of the baseline
    n: int  # documents the plan holds
    baseline: float  # the baseline's value
    sd: float  # per-document standard deviation, from the baseline's stderr (lm-eval's: sd / sqrt(n))
    design_effect: float  # (clustered stderr / stderr)^2 of the baseline, at least 1 (1 without intervals)
    mde: float  # at the given correlation
    mde_unpaired: float  # at correlation 0 (two independent samples of the same documents)


def plan_mde(sd: float, n: int, rho: float = 0.0, design_effect: float = 1.0) -> float:
    """MDE of a paired difference of two runs on ``n`` documents whose per-document scores have standard
    deviation ``sd`` on each side and correlation ``rho``: Var(d) = 2 sd² (1 - rho), times the design effect."""
    return MDE_FACTOR * math.sqrt(2 * sd * sd * (1 - rho) * design_effect / n)


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(float(v))


def plan_power(
    sizes: dict[str, int], baseline: dict[str, dict[str, Any]], intervals: Intervals | None, rho: float = 0.0
) -> list[PlanPower]:
    """Per task or group of the plan (``sizes``: name -> documents) that the baseline's results scored, and
    per metric with a numeric stderr there: the difference a comparison on the plan's documents detects."""
    out: list[PlanPower] = []
    for name, n in sizes.items():
        m = baseline.get(name)
        if not isinstance(m, dict) or n < 2:
            continue
        n_base = m.get("sample_len")
        if not isinstance(n_base, int) or n_base < 2:
            continue
        for key in sorted(k for k in m if "," in k and "_stderr," not in k):
            metric, _, filt = key.partition(",")
            value: Any = m[key]
            se: Any = m.get(f"{metric}_stderr,{filt}")
            if not _num(value) or not _num(se) or float(se) <= 0:
                continue
            se_f = float(se)
            deff = 1.0
            iv = intervals.get(name, key) if intervals is not None else None
            if iv is not None and iv.stderr_clustered is not None:
                deff = max(1.0, (iv.stderr_clustered / se_f) ** 2)  # planning: clustering never shrinks it
            sd = se_f * math.sqrt(n_base)
            out.append(PlanPower(name, key, n, float(value), sd, deff,
                                 plan_mde(sd, n, rho, deff), plan_mde(sd, n, 0.0, deff)))  # fmt: skip
    return out
