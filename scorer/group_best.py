"""``NAME@best`` groups (issue #38, OLMES' rule): per task, the better of its cloze (``NAME@cf``) and lettered
(``NAME@mcf``) scores. The group reports ``best,none`` (the better score), ``best_stderr,none`` (the chosen
member's stderr), ``best_format`` (cf or mcf) and ``best_metric`` (the member's ``metric,filter``); both
members keep their own results. A member's score is its ``format.metric`` (``member_metric``); on a tie the
first member (cf) wins. Taking the larger of two is optimistic (a selection effect): both numbers are shown."""

from __future__ import annotations

from typing import Any

from lmeval.plans import BEST, GroupSummary, split_name


def is_best(g: GroupSummary) -> bool:
    return any(c.get("aggregation") == BEST for c in g.aggregate_metric_list)


def member_metric(member: str, result: dict[str, Any], compared: str | None = None) -> str | None:
    """The ``metric,filter`` key a member is judged by: ``compared`` (the member's ``format.metric``, OLMES'
    per-task normalisation for cf) when given, else cf: ``acc_norm,none`` when present else ``acc,none`` and
    mcf: ``acc,none``; None when the member has no such score."""
    if compared is not None:
        keys = [compared]
    else:
        keys = ["acc_norm,none", "acc,none"] if split_name(member)[1] == "cf" else ["acc,none"]
    for key in keys:
        v = result.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return key
    return None


def best_of(
    members: list[str], results: dict[str, dict[str, Any]], compared: dict[str, str] | None = None
) -> dict[str, Any]:
    """The best-of keys for ``members`` (in order; the first wins a tie), or {} when some member has no score
    (a partial run reports no best rather than the one score it has). ``compared``: member -> the
    ``metric,filter`` it is compared on (``format.metric``)."""
    chosen: tuple[str, str, float] | None = None
    for m in members:
        r = results.get(m, {})
        key = member_metric(m, r, (compared or {}).get(m))
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


def add_best(
    groups: list[GroupSummary], results: dict[str, dict[str, Any]], compared: dict[str, str] | None = None
) -> None:
    """Fill in every best-of group's entry of ``results`` (tasks' and other groups' results already there).
    ``compared``: task -> its ``format.metric``; a member group is compared on its first leaf task's."""
    by = {g.name: g for g in groups}
    for g in groups:
        if is_best(g):
            per_member = {m: c for m in g.subtasks if (c := _compared(m, by, compared or {})) is not None}
            results.setdefault(g.name, {}).update(best_of(list(g.subtasks), results, per_member))


def _compared(member: str, by: dict[str, GroupSummary], compared: dict[str, str]) -> str | None:
    seen: set[str] = set()
    while member in by and member not in seen and by[member].subtasks:
        seen.add(member)
        member = by[member].subtasks[0]
    return compared.get(member)
