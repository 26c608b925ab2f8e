"""Diff two plans: config, model identity, per-task counts, causes and the first changed prompts.

Both plans are read through the contract's reader (``plans.io.PlanReader``) and checked with its hashes
(``plans.integrity``). A task whose ``task_hash`` is the same on both sides is skipped without reading its
records; a task whose record bytes are identical is reported from its summary alone (a config/metric-only
change); the remaining tasks are compared doc by doc (``diff/tasks.py``).
"""

from __future__ import annotations

import fnmatch
import os
from contextlib import ExitStack

from lmeval.diff.changes import dict_changes, group_by_cause
from lmeval.diff.model import DiffReport, TaskDiff
from lmeval.diff.tasks import diff_task
from lmeval.plans import (
    VERSION,
    PlanError,
    PlanReader,
    TaskSummary,
    UserError,
    peek_header,
    split_name,
    verify_plans,
)


def _check_versions(old: str, new: str) -> None:
    """Plans of different format versions get an explanation, not a crash."""
    raw_old, raw_new = peek_header(old), peek_header(new)
    v_old, v_new = raw_old.get("version"), raw_new.get("version")
    if v_old != v_new:
        stale = [p for p, v in ((old, v_old), (new, v_new)) if v != VERSION]
        lv_old, lv_new = raw_old.get("lmeval_version", "?"), raw_new.get("lmeval_version", "?")
        raise PlanError(
            f"cannot diff plans of different format versions: {old} is plan format version {v_old!r} "
            f"(lmeval {lv_old}) and {new} is version {v_new!r} (lmeval {lv_new}); records are laid out "
            f"differently, so prompts cannot be compared. This lmeval reads version {VERSION}: recompile "
            f"{' and '.join(stale)} with it (the config is in the plan header) and diff again"
        )


def diff_plans(
    old_path: str | os.PathLike[str],
    new_path: str | os.PathLike[str],
    show: int = 5,
    task: str | None = None,
    verify: bool = True,
    labels: tuple[str, str] | None = None,
) -> DiffReport:
    """Compare two plan files. ``show``: how many changed prompts to render; ``task``: a task name, glob or
    group to restrict the per-task sections to. ``verify``: check both plan hashes (one read of each file)."""
    _check_versions(str(old_path), str(new_path))
    with ExitStack() as stack:
        old = stack.enter_context(PlanReader(old_path, verify=False))
        new = stack.enter_context(PlanReader(new_path, verify=False))
        if verify:
            verify_plans(old.layout, new.layout)
        return _diff(old, new, show, task, labels)


def _diff(old: PlanReader, new: PlanReader, show: int, task: str | None, labels: tuple[str, str] | None) -> DiffReport:
    oh, nh = old.header, new.header
    report = DiffReport(
        old=old.path,
        new=new.path,
        old_plan_hash=oh.plan_hash,
        new_plan_hash=nh.plan_hash,
        identical=oh.plan_hash == nh.plan_hash,
        n_tasks=(len(oh.tasks), len(nh.tasks)),
        n_docs=(oh.n_docs, nh.n_docs),
        n_instances=(oh.n_instances, nh.n_instances),
        show=max(0, show),
        task_filter=task,
    )
    if task is not None and not any(_matches(t, task) for t in [*oh.tasks, *nh.tasks]):
        names = sorted({t.name for t in [*oh.tasks, *nh.tasks]})
        raise UserError(
            f"--task {task!r}: no such task or group in either plan (tasks: {', '.join(names[:10])}"
            f"{', …' if len(names) > 10 else ''})"
        )
    if report.identical:
        report.tasks_identical = sum(1 for t in nh.tasks if task is None or _matches(t, task))
        return report
    report.config = dict_changes(oh.config, nh.config)
    report.model = dict_changes(oh.model.to_dict(), nh.model.to_dict())
    report.meta = dict_changes({"lmeval_version": oh.lmeval_version}, {"lmeval_version": nh.lmeval_version})
    report.meta += dict_changes(
        {k: v for k, v in oh.extra.items() if k != "spans"},
        {k: v for k, v in nh.extra.items() if k != "spans"},
        "extra",
    )
    report.groups = dict_changes({g.name: g.to_dict() for g in oh.groups}, {g.name: g.to_dict() for g in nh.groups})
    run_causes = group_by_cause(report.config + report.model)

    old_tasks = {t.name: t for t in oh.tasks}
    new_tasks = {t.name: t for t in nh.tasks}
    paired = format_pairs(list(old_tasks), list(new_tasks))
    taken = set(paired.values())
    order = [t.name for t in nh.tasks] + [t.name for t in oh.tasks if t.name not in new_tasks and t.name not in taken]
    for name in order:
        ot, nt = old_tasks.get(paired.get(name, name)), new_tasks.get(name)
        if task is not None and not any(_matches(t, task) for t in (ot, nt) if t is not None):
            continue
        if ot is None or nt is None:
            report.tasks.append(_one_sided(name, ot, nt))
            continue
        if ot.task_hash == nt.task_hash and old.layout.spans[ot.name][1] == new.layout.spans[name][1]:
            report.tasks_identical += 1
            continue
        report.tasks.append(diff_task(old, new, ot, nt, run_causes, report, labels or (old.path, new.path)))
    return report


def _one_sided(name: str, ot: TaskSummary | None, nt: TaskSummary | None) -> TaskDiff:
    """A task only one plan has: added (only in the new one) or removed."""
    if ot is None:
        assert nt is not None
        return TaskDiff(
            name,
            "added",
            None,
            nt.task_hash,
            0,
            nt.n_docs,
            0,
            nt.n_instances,
            docs_added=nt.n_docs,
            instances_added=nt.n_instances,
            to_execute=nt.n_instances,
        )
    return TaskDiff(
        name,
        "removed",
        ot.task_hash,
        None,
        ot.n_docs,
        0,
        ot.n_instances,
        0,
        docs_removed=ot.n_docs,
        instances_removed=ot.n_instances,
    )


def format_pairs(old: list[str], new: list[str]) -> dict[str, str]:
    """New task name -> old task name for one task in two prompt formats (``arc_easy`` or ``arc_easy@cf`` in
    one plan, ``arc_easy@mcf`` in the other: ``plans.split_name``): each side's only unmatched task of a base."""
    olds: dict[str, list[str]] = {}
    for n in old:
        if n not in set(new):
            olds.setdefault(split_name(n)[0], []).append(n)
    news: dict[str, list[str]] = {}
    for n in new:
        if n not in set(old):
            news.setdefault(split_name(n)[0], []).append(n)
    return {ns[0]: olds[b][0] for b, ns in news.items() if len(ns) == 1 and len(olds.get(b, [])) == 1}


def _matches(t: TaskSummary, pattern: str) -> bool:
    return fnmatch.fnmatchcase(t.name, pattern) or pattern in t.groups
