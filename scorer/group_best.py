"""``NAME@best`` groups (issue #38, OLMES' rule): per task, the better of its cloze (``NAME@cf``) and lettered
(``NAME@mcf``) scores. The group reports ``best,none`` (the better score), ``best_stderr,none`` (the chosen
member's stderr), ``best_format`` (cf or mcf) and ``best_metric`` (the member's ``metric,filter``); both
members keep their own results. A member's score is its primary metric (``member_metric``); on a tie the
first member (cf) wins. Taking the larger of two is optimistic (a selection effect): both numbers are shown."""

from __future__ import annotations

from typing import Any

from lmeval.plans import BEST, GroupSummary, split_name


def is_best(g: GroupSummary) -> bool:
    return any(c.get("aggregation") == BEST for c in g.aggregate_metric_list)


def member_metric(member: str, result: dict[str, Any]) -> str | None:
    """The ``metric,filter`` key a member is judged by: cf: ``acc_norm,none`` when present else ``acc,none``;
    mcf: ``acc,none``; None when the member has no such score."""
    fmt = split_name(member)[1]
    keys = ["acc_norm,none", "acc,none"] if fmt == "cf" else ["acc,none"]
    for key in keys:
        v = result.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return key
    return None


def best_of(members: list[str], results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The best-of keys for ``members`` (in order; the first wins a tie), or {} when some member has no score
    (a partial run reports no best rather than the one score it has)."""
    chosen: tuple[str, str, float] | None = None
    for m in members:
        r = results.get(m, {})
        key = member_metric(m, r)
        if key is None:
            return {}
        if chosen is None or r[key] > chosen[2]:
            chosen = (m, key, float(r[key]))
    if chosen is None:
        return {}
    member, key, value = chosen
    metric, _, filt = key.partition(",")
    r = results[member]
    out: dict[str, Any] = {
        f"{BEST},none": value,
        f"{BEST}_stderr,none": r.get(f"{metric}_stderr,{filt}", "N/A"),
        f"{BEST}_format": split_name(member)[1],
        f"{BEST}_metric": key,
    }
    if "sample_len" in r:
        out["sample_len"] = r["sample_len"]
    return out


def add_best(groups: list[GroupSummary], results: dict[str, dict[str, Any]]) -> None:
    """Fill in every best-of group's entry of ``results`` (tasks' and other groups' results already there)."""
    for g in groups:
        if is_best(g):
            results.setdefault(g.name, {}).update(best_of(list(g.subtasks), results))
