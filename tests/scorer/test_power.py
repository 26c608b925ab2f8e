"""``scorer.statistics.power``'s exact binomial tail (McNemar's test) against scipy's exact binomial test, over
every flip count up to 60 and some large ones (beyond 20,000 flips: log-space sums), p from 1 down to underflow
(#40)."""

from __future__ import annotations

import pytest
from scipy.stats import binomtest

from lmeval.scorer.statistics.power import binomial_two_sided
from tests.bounds import ARITHMETIC, SCORES


@pytest.mark.parametrize("n", [*range(1, 61), 99, 500, 2001, 30_001, 150_001])  # the last two: log-space sums
def test_binomial_tail_is_scipys_exact_test(n: int) -> None:
    ks = (
        range(n + 1) if n <= 60 else [0, 1, n // 3, n // 2 - int(n**0.5), n // 2 - 3, n // 2, n - 7]
    )  # p ~ 0.05 at -sqrt(n)
    for k in ks:
        want = binomtest(k, n, 0.5).pvalue
        assert binomial_two_sided(k, n) == pytest.approx(want, rel=SCORES.rtol, abs=1e-300), (k, n)


def test_no_flips_is_p_one() -> None:
    assert binomial_two_sided(0, 0) == 1.0


def test_paired_bootstrap_for_non_binary_metrics() -> None:
    """Per-document numbers that are not 0/1 (MMLU answer lengths as a stand-in score): the bootstrap's
    interval holds the mean difference, p is 1 for no difference and 1/(B+1) for a shift far beyond the noise."""
    from lmeval.scorer.statistics.power import BOOT_ITERS, MDE_FACTOR, paired_test
    from tests.support import jsonl_rows

    a = [float(len(r["question"])) for r in jsonl_rows("mmlu/anatomy", "test", 40)]
    b = [x + (7.0 if i % 3 else 1.0) for i, x in enumerate(a)]
    t = paired_test(a, b)
    assert t is not None and t.test == "bootstrap" and t.n01 is None
    d = [y - x for x, y in zip(a, b, strict=True)]
    mean = sum(d) / len(d)
    assert t.low < mean < t.high
    sd = (sum((x - mean) ** 2 for x in d) / (len(d) - 1)) ** 0.5
    assert t.mde == pytest.approx(MDE_FACTOR * sd / len(d) ** 0.5, rel=ARITHMETIC.rtol)
    assert t.p == pytest.approx(1 / (BOOT_ITERS + 1))  # mean 5, sd 2.9 on 40 docs: z about 11
    same = paired_test(a, a)
    assert same is not None and same.p == 1.0 and same.low == same.high == 0.0 and same.mde is None
