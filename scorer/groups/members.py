"""The score a member of a ``NAME@best`` or ``NAME@sweep`` group is judged by: its ``format.metric``
(compiler/formats: OLMES' normalisation for cf, the label's accuracy for mcf, the extracted label's exact match
for gen); a member group by its first leaf task's. Without a record (hand-made results): its format's
``judged_by`` (plans/vocab/promptformats.py: cf's ``acc_norm`` when present else ``acc``, ``acc`` for mcf,
``exact_match,letter`` for gen), else ``acc``."""

from __future__ import annotations

from typing import Any

from lmeval.plans import GroupSummary, format_of, prompt_format


def is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def member_metric(member: str, result: dict[str, Any], compared: str | None = None) -> str | None:
    """The ``metric,filter`` key ``member`` is judged by, or None when its results have no such score."""
    f = prompt_format(format_of(member))
    keys = [compared] if compared is not None else list(f.judged_by if f is not None and f.judged_by else ["acc,none"])
    return next((k for k in keys if is_number(result.get(k))), None)


def compared_metrics(group: GroupSummary, groups: list[GroupSummary], compared: dict[str, str]) -> dict[str, str]:
    """Member -> the ``format.metric`` of it (a task) or of its first leaf task (a group), where known."""
    by = {g.name: g for g in groups}
    out: dict[str, str] = {}
    for m in group.subtasks:
        leaf, seen = m, set()
        while leaf in by and leaf not in seen and by[leaf].subtasks:
            seen.add(leaf)
            leaf = by[leaf].subtasks[0]
        if leaf in compared:
            out[m] = compared[leaf]
    return out


def member_scores(
    members: list[str], results: dict[str, dict[str, Any]], compared: dict[str, str]
) -> list[tuple[str, str, float]] | None:
    """(member, its ``metric,filter``, its score) for each member in order, or None when some member has no
    score (a partial run reports no best and no spread rather than those of the members it has)."""
    out: list[tuple[str, str, float]] = []
    for m in members:
        r = results.get(m, {})
        key = member_metric(m, r, compared.get(m))
        if key is None:
            return None
        out.append((m, key, float(r[key])))
    return out
