"""``scorer.power``'s exact binomial tail (McNemar's test) against scipy's exact binomial test, over every flip
count up to 60 and some large ones (beyond 20,000 flips: log-space sums), p from 1 down to underflow (#40)."""

from __future__ import annotations

import pytest
from scipy.stats import binomtest

from lmeval.scorer.power import binomial_two_sided


@pytest.mark.parametrize("n", [*range(1, 61), 99, 500, 2001, 30_001, 150_001])  # the last two: log-space sums
def test_binomial_tail_is_scipys_exact_test(n: int) -> None:
    ks = (
        range(n + 1) if n <= 60 else [0, 1, n // 3, n // 2 - int(n**0.5), n // 2 - 3, n // 2, n - 7]
    )  # p ~ 0.05 at -sqrt(n)
    for k in ks:
        want = binomtest(k, n, 0.5).pvalue
        assert binomial_two_sided(k, n) == pytest.approx(want, rel=1e-9, abs=1e-300), (k, n)


def test_no_flips_is_p_one() -> None:
    assert binomial_two_sided(0, 0) == 1.0
