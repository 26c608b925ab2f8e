"""Group aggregates (lm-eval 0.4.13 ``Group.aggregate``): every group aggregates over all of its *leaf*
tasks (recursively), weighting each by its sample count, with the pooled-variance stderr."""

from __future__ import annotations

from typing import Any

from lmeval.plans import GroupSummary
from lmeval.scorer import metrics as agg
from lmeval.scorer.errors import ScoreError
from lmeval.scorer.groups import best as group_best
from lmeval.scorer.groups import spread as group_spread


def _by_name(groups: list[GroupSummary]) -> dict[str, GroupSummary]:
    return {g.name: g for g in groups}


def leaf_tasks(name: str, groups: dict[str, GroupSummary], seen: frozenset[str] = frozenset()) -> list[str]:
    if name in seen:
        raise ScoreError(f"group {name!r} contains itself")
    out: list[str] = []
    for child in groups[name].subtasks:
        if child in groups:
            out.extend(leaf_tasks(child, groups, seen | {name}))
        else:
            out.append(child)
    return out


def has_aggregation(groups: list[GroupSummary], name: str) -> bool:
    g = _by_name(groups).get(name)
    return bool(g and g.aggregate_metric_list)


def _version(g: GroupSummary) -> str:
    return "N/A" if g.version is None else str(g.version)


def aggregate_groups(
    groups: list[GroupSummary],
    task_results: dict[str, dict[str, Any]],
    aliases: dict[str, str] | None = None,
    compared: dict[str, str] | None = None,
) -> tuple[dict[str, dict[str, Any]], dict[str, str], dict[str, list[str]]]:
    """(group results, group versions, group_subtasks). ``compared``: formatted task -> its ``format.metric``
    (what a ``NAME@best`` group compares)."""
    by = _by_name(groups)
    aliases = aliases or {}
    results: dict[str, dict[str, Any]] = {}
    versions: dict[str, str] = {}
    subtasks: dict[str, list[str]] = {}
    for g in groups:
        subtasks[g.name] = list(g.subtasks)
        versions[g.name] = _version(g)
        gm: dict[str, Any] = {"alias": aliases.get(g.name, g.name), "name": g.name}
        if g.aggregate_metric_list and not (group_best.is_best(g) or group_spread.is_spread(g)):  # below
            leaves = leaf_tasks(g.name, by)
            gm["sample_len"] = sum(task_results[t].get("sample_len", 0) for t in leaves if t in task_results)
            sample_count: dict[str, int] = {}
            for i, cfg in enumerate(g.aggregate_metric_list):
                metric = cfg.get("metric")
                if not isinstance(metric, str):
                    raise ScoreError(f"group {g.name}: aggregate_metric_list[{i}] has no metric name")
                how = cfg.get("aggregation", "mean")
                if how != "mean":
                    raise ScoreError(f"group {g.name}: metric {metric}: only 'mean' group aggregation is supported")
                weight = bool(cfg.get("weight_by_size", True))
                flist = cfg.get("filter_list")
                if isinstance(flist, str):
                    flist = [flist]
                if flist is None:
                    found = set()
                    for t in leaves:
                        for k in task_results.get(t, {}):
                            if k.startswith(metric + ",") and "_stderr" not in k:
                                found.add(k[len(metric) + 1 :])
                    flist = sorted(found)
                for f in flist:
                    key, skey = f"{metric},{f}", f"{metric}_stderr,{f}"
                    values, sizes, stderrs = [], [], []
                    for t in leaves:
                        tr = task_results.get(t)
                        if tr is None or key not in tr:
                            continue
                        values.append(tr[key])
                        sizes.append(tr.get("sample_len", 0))
                        if tr.get(skey) is not None:
                            stderrs.append(tr[skey])
                    if not values:
                        continue
                    gm[key] = agg.weighted_mean(values, sizes, weight)
                    sample_count[key] = sum(sizes)
                    if len(stderrs) == len(values) and "N/A" not in stderrs:
                        gm[skey] = (
                            agg.pooled_sample_stderr(stderrs, sizes) if weight else agg.unweighted_mean_stderr(stderrs)
                        )
                    else:
                        gm[skey] = "N/A"
            if sample_count:
                gm["sample_count"] = sample_count
        results[g.name] = gm
    group_best.add_best(groups, {**task_results, **results}, compared)  # NAME@best, over its members' results
    group_spread.add_spread(groups, {**task_results, **results}, compared)  # NAME@sweep
    return results, versions, subtasks


def propagate(
    groups: list[GroupSummary],
    subtasks: dict[str, list[str]],
    n_shot: dict[str, Any],
    hib: dict[str, dict[str, Any]],
) -> None:
    """Copy n-shot (when all children agree) and higher_is_better (None on conflict) up to groups."""
    for g in groups:
        vals = {n_shot[c] for c in subtasks[g.name] if c in n_shot}
        if len(vals) == 1:
            n_shot[g.name] = vals.pop()
    for g in groups:
        merged: dict[str, Any] = {}
        for c in subtasks[g.name]:
            for m, h in hib.get(c, {}).items():
                if m not in merged:
                    merged[m] = h
                elif merged[m] is not None and merged[m] != h:
                    merged[m] = None
        if merged:
            hib[g.name] = merged
