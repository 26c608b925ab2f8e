"""``NAME@sweep`` groups (issue #38, sensitivity sweeps): over the variants of one task (formats, label
styles, few-shot seeds: compiler/formats/sweep.py), the spread of their scores, each member judged by its
``format.metric`` (scorer/groups/members.py). Keys: ``spread_min,none``, ``spread_max,none``,
``spread_range,none`` (max - min), ``spread_mean,none``, ``spread_std,none`` (the sample standard deviation
over the variants, n - 1 in the denominator; "N/A" for one variant), ``spread_n`` and the variants at the
extremes, ``spread_argmin`` and ``spread_argmax`` (the first of equals). The spread is of the variants'
scores on the same documents: it measures the prompt's effect, not sampling noise (each member keeps its own
stderr)."""

from __future__ import annotations

import math
from typing import Any

from lmeval.plans import SPREAD, GroupSummary
from lmeval.scorer.groups.members import compared_metrics, member_scores


def is_spread(g: GroupSummary) -> bool:
    return any(c.get("aggregation") == SPREAD for c in g.aggregate_metric_list)


def spread_of(
    members: list[str], results: dict[str, dict[str, Any]], compared: dict[str, str] | None = None
) -> dict[str, Any]:
    """The spread keys over ``members``' scores, or {} when some member has no score (a partial run)."""
    scores = member_scores(members, results, compared or {})
    if not scores:
        return {}
    values = [v for _, _, v in scores]
    n = len(values)
    mean = math.fsum(values) / n
    std: float | str = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else "N/A"
    lo = min(range(n), key=lambda i: values[i])
    hi = max(range(n), key=lambda i: values[i])
    out: dict[str, Any] = {
        f"{SPREAD}_min,none": values[lo],
        f"{SPREAD}_max,none": values[hi],
        f"{SPREAD}_range,none": values[hi] - values[lo],
        f"{SPREAD}_mean,none": mean,
        f"{SPREAD}_std,none": std,
        f"{SPREAD}_n": n,
        f"{SPREAD}_argmin": scores[lo][0],
        f"{SPREAD}_argmax": scores[hi][0],
    }
    sample_len = results.get(scores[0][0], {}).get("sample_len")
    if sample_len is not None:
        out["sample_len"] = sample_len
    return out


def add_spread(
    groups: list[GroupSummary], results: dict[str, dict[str, Any]], compared: dict[str, str] | None = None
) -> None:
    """Fill in every sweep group's entry of ``results`` (its members' results already there)."""
    for g in groups:
        if is_spread(g):
            per_member = compared_metrics(g, groups, compared or {})
            results.setdefault(g.name, {}).update(spread_of(list(g.subtasks), results, per_member))
