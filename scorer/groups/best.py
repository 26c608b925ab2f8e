"""``NAME@best`` groups (issue #38, OLMES' rule): per task, the better of its cloze (``NAME@cf``) and lettered
(``NAME@mcf``) scores. The group reports ``best,none`` (the better score), ``best_stderr,none`` (the chosen
member's stderr), ``best_format`` (cf or mcf) and ``best_metric`` (the member's ``metric,filter``); both
members keep their own results. A member's score is its ``format.metric`` (scorer/groups/members.py); on a
tie the first member (cf) wins. Taking the larger of two is optimistic (a selection effect): both are shown."""

from __future__ import annotations

from typing import Any

from lmeval.plans import BEST, GroupSummary, format_of
from lmeval.scorer.groups.members import compared_metrics, member_scores


def is_best(g: GroupSummary) -> bool:
    return any(c.get("aggregation") == BEST for c in g.aggregate_metric_list)


def best_of(
    members: list[str], results: dict[str, dict[str, Any]], compared: dict[str, str] | None = None
) -> dict[str, Any]:
    """The best-of keys for ``members`` (in order; the first wins a tie), or {} when some member has no score.
    ``compared``: member -> the ``metric,filter`` it is compared on (``format.metric``)."""
    scores = member_scores(members, results, compared or {})
    if not scores:
        return {}
    member, key, value = max(scores, key=lambda s: s[2])  # max keeps the first of equals
    metric, _, filt = key.partition(",")
    r = results[member]
    out: dict[str, Any] = {
        f"{BEST},none": value,
        f"{BEST}_stderr,none": r.get(f"{metric}_stderr,{filt}", "N/A"),
        f"{BEST}_format": format_of(member),
        f"{BEST}_metric": key,
    }
    if "sample_len" in r:
        out["sample_len"] = r["sample_len"]
    return out


def add_best(
    groups: list[GroupSummary], results: dict[str, dict[str, Any]], compared: dict[str, str] | None = None
) -> None:
    """Fill in every best-of group's entry of ``results`` (tasks' and other groups' results already there).
    ``compared``: task -> its ``format.metric``."""
    for g in groups:
        if is_best(g):
            per_member = compared_metrics(g, groups, compared or {})
            results.setdefault(g.name, {}).update(best_of(list(g.subtasks), results, per_member))
