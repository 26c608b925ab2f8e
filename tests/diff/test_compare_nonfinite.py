"""``compare`` (diff/runs.py) on NaN or infinite per-document values (#53 item 7): such documents are left out of
the pairs, so the test and its p-values are those of the finite documents, never "significant" by overflow."""

from __future__ import annotations

import math

import polars as pl

from lmeval.diff.runs import MetricDelta, _paired


def _samples(values: list[float]) -> pl.DataFrame:
    n = len(values)
    schema = {"task": pl.String, "filter": pl.String, "doc_id": pl.Int64, "x": pl.Float64}
    return pl.DataFrame({"task": ["t"] * n, "filter": ["none"] * n, "doc_id": list(range(n)), "x": values}, schema)


def _delta(a: list[float], b: list[float]) -> MetricDelta:
    md = MetricDelta("t", "none", "x", None, None, None)
    _paired(md, _samples(a), _samples(b), [])
    return md


def test_non_finite_documents_are_left_out_of_the_pairs() -> None:
    a = [0.1 * (i % 7) for i in range(40)]
    b = [x + (0.01 if i % 2 else -0.01) for i, x in enumerate(a)]
    finite = _delta(a, b)
    assert finite.n_paired == 40 and finite.p is not None and finite.p > 0.05
    bad_a = [*a, math.nan, 0.0, -math.inf, 1e308, 0.5]
    bad_b = [*b, 0.0, math.inf, 0.0, -1e308, math.nan]  # NaN, +inf, -inf, an overflowing difference
    md = _delta(bad_a, bad_b)
    assert md.n_paired == 40
    assert (md.se, md.z, md.p, md.test, md.p_test, md.low, md.high) == (
        finite.se, finite.z, finite.p, finite.test, finite.p_test, finite.low, finite.high)  # fmt: skip
    assert md.p_test is None or md.p_test > 0.05


def test_only_non_finite_differences_give_no_test() -> None:
    md = _delta([0.0, 1.0, 2.0], [math.inf, math.nan, -math.inf])
    assert md.n_paired == 0 and md.p is None and md.p_test is None
