"""The filters that choose among an Instance's responses: take_first, take_first_k, majority_vote."""

from __future__ import annotations

from typing import Any

import polars as pl

from lmeval.scorer.filters.registry import Context, register_filter
from lmeval.scorer.filters.responses import Responses


@register_filter("take_first")
def _take_first(st: Responses, kw: dict[str, Any], ctx: Context) -> Responses:
    """lm-eval's TakeFirstFilter: each Instance's first response."""
    st = st.as_lists()
    firsts = st.rows.filter(pl.col("_p") == 0)
    if firsts.height != st.n:
        raise IndexError("an instance has no responses")
    return st.with_rows(firsts.sort("_r"), nested=False)


@register_filter("take_first_k")
def _take_first_k(st: Responses, kw: dict[str, Any], ctx: Context) -> Responses:
    """lm-eval's TakeKFilter: each Instance's first ``k`` responses (the first Instance must have k)."""
    k = int(kw["k"])
    if not st.nested:  # lm-eval slices each value: a string gives its first k characters
        py = st.to_py()
        if len(py[0]) < k:
            raise AssertionError(f"need at least {k} responses per doc to take the first {k}, got {len(py[0])}")
        return Responses.from_py([x[:k] for x in py])
    n0 = st.rows.filter(pl.col("_r") == 0).height
    if n0 < k:
        raise AssertionError(f"need at least {k} responses per doc to take the first {k}, got {n0}")
    return st.with_rows(st.rows.filter(pl.col("_p") < k))


@register_filter("majority_vote")
def _majority_vote(st: Responses, kw: dict[str, Any], ctx: Context) -> Responses:
    """lm-eval's MajorityVoteFilter: each Instance's most common response (``Counter.most_common``: ties go
    to the one seen first), as a one-element list."""
    st = st.as_lists()
    rows = st.rows
    if st.values is None:
        key = rows["v"]
    else:  # equal objects (Counter's hash and ==) share a key
        ids: dict[Any, int] = {}
        key = pl.Series([ids.setdefault(v, len(ids)) for v in st.objects()], dtype=pl.Int64)
    counts = rows.select("_r", "_p", key.alias("_k")).group_by(["_r", "_k"]).agg(c=pl.len(), _p=pl.col("_p").min())
    winners = (
        counts.sort(["_r", "c", "_p"], descending=[False, True, False])
        .group_by("_r", maintain_order=True)
        .first()
        .select("_r", "_p", "_k")
    )
    if winners.height != st.n:
        raise IndexError("an instance has no responses")  # Counter([]).most_common(1)[0]
    if st.values is None:  # a string is its own key
        vote = winners.rename({"_k": "v"})
    else:  # the Instance's first object of the winning key
        vote = winners.drop("_k").join(rows, on=["_r", "_p"], how="left", maintain_order="left")
    return st.with_rows(vote.with_columns(pl.lit(0, dtype=rows["_p"].dtype).alias("_p")))
