"""Fail fast at compile: every task's scoring configuration checked against what the scorer implements.

Metric names and their options for the task's output type, aggregations, ``higher_is_better``, filter
functions and their arguments (regexes compiled with the engine the scorer runs them with) and the
groups' aggregate metrics, by the rules of the contract (``plans.scoring``). A problem is a one-line
CompileError naming file, task and field, raised before any prompt is rendered, so no plan is written.
"""

from __future__ import annotations

from typing import Any

from lmeval.compiler.encode import plain_data
from lmeval.compiler.errors import fail
from lmeval.compiler.tasks import GroupInfo, TaskConfig
from lmeval.plans import check_filter_list, check_group_metric, check_metric_list, name_data, produced_metrics


def _data(value: Any) -> Any:
    """The plan's data form of a config value, without importing anything (``!function`` → a reference)."""
    return plain_data(value, lambda r: name_data(r.qualname))


def _has_process_results(task: TaskConfig) -> bool:
    return task.process_results is not None


def check_task(task: TaskConfig) -> None:
    """Raise a CompileError for the first problem of ``task``'s metric_list or filter_list."""
    problems = check_metric_list(task.output_type, _data(task.metric_list), _has_process_results(task))
    problems += check_filter_list(_data(task.filter_list))
    if problems:
        where, msg = problems[0]
        raise fail(msg, file=task.source, task=task.name, field=where)


def check_groups(groups: list[GroupInfo], tasks: list[TaskConfig]) -> None:
    """Raise a CompileError when a group aggregates a metric none of its leaf tasks has."""
    by_group = {g.name: g for g in groups}
    by_task = {t.name: t for t in tasks}

    def leaves(name: str, seen: frozenset[str] = frozenset()) -> list[str]:
        if name in seen:
            return []
        out: list[str] = []
        for child in by_group[name].subtasks:
            out += leaves(child, seen | {name}) if child in by_group else [child]
        return out

    for g in groups:
        if not g.aggregate_metric_list:
            continue
        members = [by_task[t] for t in leaves(g.name) if t in by_task]
        produced = [produced_metrics(s.output_type, _data(s.metric_list), _has_process_results(s)) for s in members]
        for entry in g.aggregate_metric_list:
            problems = check_group_metric(entry, produced)
            if problems:
                where, msg = problems[0]
                raise fail(msg, file=g.source, field=f"group {g.name} {where}")
