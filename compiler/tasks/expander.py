"""The Expander: tasks, groups, tags and formats (NAME@FMT, @best, @sweep) expanded into each other in lm-eval's
TaskFactory order (group-level task fields become defaults of the member tasks; an inline member's own keys win;
lm-eval 0.5's ``GROUP::CHILD`` paths walked), into a ``Selection``: the tasks and groups a compile covers.
``select.select_tasks`` drives it.
"""
# size: one recursion, the Expander: tasks, groups, tags and formats expand into each other in lm-eval's
# TaskFactory order and share its state (names seen, the format being applied)

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lmeval.compiler.errors import fail
from lmeval.compiler.formats import (
    DEFAULT_LABELS,
    Sweep,
    check_format,
    default_variant,
    format_name,
    formatted,
    formatted05,
    group_aggregates,
    lm_eval_05_format,
    refuse_format_record,
    split_name,
    with_scorer,
)
from lmeval.compiler.tasks.lm_eval_catalog import QUALIFIER
from lmeval.compiler.tasks.lookup import GROUP_FIELDS, Found, Lookup, chain_lookups
from lmeval.compiler.tasks.taskconfig import TaskConfig, build_task_config
from lmeval.plans import (
    BEST,
    BEST_OF,
    MAX_YAML_BYTES,
    SWEEP,
    InputError,
    Variant,
    VariantError,
    best_aggregate,
    check_group_metric,
    open_regular,
    parse_variant,
    spread_aggregate,
)

PATH_SEPARATOR = "::"  # lm-eval 0.5's group paths (``mmlu_humanities`` in ``mmlu``: not ``mmlu::humanities``)


@dataclass
class GroupInfo:
    name: str
    alias: str | None
    subtasks: list[str]
    aggregate_metric_list: list[dict[str, Any]]
    version: Any = None
    source: str | None = None  # the file that defines the group (for error messages)


@dataclass
class Selection:
    tasks: list[TaskConfig] = field(default_factory=list)
    groups: list[GroupInfo] = field(default_factory=list)
    top: list[str] = field(default_factory=list)  # names as selected (for the default file name)
    # task names in lm-eval's load order (TaskManager.load: the list in order, a group's members depth first,
    # a tag's tasks by name), before ``tasks`` is sorted by name; run.seed_mode=lm_eval builds in this order
    load_order: list[str] = field(default_factory=list)

    bad_lines: list[str] = field(default_factory=list)  # JSONL-spec lines left out (header extra.spec_bad_lines)


def _norm_agg(items: Any, source: str | None, group: str) -> list[dict[str, Any]]:
    if items is None:
        return []
    if isinstance(items, dict):
        items = [items]
    out = []
    for it in items:
        problems = check_group_metric(it, [])  # the contract's rules (plans.scoring); metrics: compiler.scorecheck
        if problems:
            where, msg = problems[0]
            raise fail(msg, file=source, field=f"group {group} {where}")
        fl = it.get("filter_list")
        out.append(
            {
                "metric": it["metric"],
                "filter_list": [fl] if isinstance(fl, str) else fl,
                "aggregation": "mean",
                "weight_by_size": bool(it.get("weight_by_size", True)),
            }
        )
    return out


def _file(where: str | None) -> str | None:
    """The file an error names: a group's YAML, not the run option a name came from."""
    return None if where in (None, "run.tasks") else where


def _text_of(path: str) -> str:
    """A broken task file's text, to tell whether it meant to define a name ("" for a FIFO, device, ...)."""
    try:
        with open_regular(path) as f:
            return f.read(MAX_YAML_BYTES).decode("utf-8", errors="replace")
    except (InputError, OSError):
        return ""


class Expander:
    def __init__(
        self,
        lookup: Lookup,
        known: Callable[[], list[str]],
        broken: dict[str, str] | None = None,
        default_format: str | None = None,
        sweep: Sweep | None = None,
        run_seed: int | None = None,
    ) -> None:
        self.lookup = lookup
        self.known = known
        self.broken = broken or {}
        self.sel = Selection()
        self._task_names: dict[str, str] = {}
        self._renamed: dict[tuple[str, str], str] = {}  # (group, task) -> GROUP::TASK (overlapping groups)
        self._overlapped: set[str] = set()  # tasks named GROUP::TASK because groups gave them different configs
        # prompt formats (compiler/formats): run.format for every multiple-choice task, or NAME@FMT's own
        self.default_format = default_format
        self._variant: Variant | None = None  # the NAME@FMT (or NAME@FMT+LABELS+seedN) being expanded
        self._format_is_task = False  # NAME is a task (a group formats only its multiple-choice members)
        # lm-eval 0.5's NAME@mcqa|cloze|generate|cot, or a name from a task's own ``formats:`` table
        self._selection05: str | None = None
        # NAME@sweep (compiler/formats/sweep.py): run.sweep's variants, the run's few-shot seed unmarked in names
        self.sweep = sweep
        self.run_seed = run_seed
        self.swept = False

    def unknown(self, name: str, where: str | None = None) -> Exception:
        for path, why in sorted(self.broken.items()):
            if Path(path).stem == name or name in _text_of(path):
                return fail(f"task or group {name!r}: {path} could not be read ({why})", file=where)
        close = difflib.get_close_matches(name, self.known(), n=5, cutoff=0.6)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        return fail(f"unknown task or group {name!r}{hint}", file=where)

    def add_named(
        self, name: str, parents: list[str], overrides: dict[str, Any] | None = None, where: str | None = None
    ) -> list[str]:
        base, fmt = split_name(name)
        if fmt is not None:
            if self._variant is not None:
                raise fail(f"{name!r}: a format inside a formatted selection ({self._variant.suffix()})", file=where)
            if fmt == BEST:
                return [self.add_best(base, parents, overrides, where)]
            if fmt == SWEEP:
                return [self.add_sweep(base, parents, overrides, where)]
            if self._selection05 is not None:
                raise fail(f"{name!r}: a format inside a formatted selection (@{self._selection05})", file=where)
            try:
                variant = parse_variant(fmt)
            except VariantError as e:
                if self._is_lm_eval_05(base, fmt):
                    return self._add_selection05(base, fmt, parents, overrides, where)
                raise fail(str(e), file=where, field=f"{where or 'run.tasks'} {name}") from None
            check_format(variant.fmt, f"{where or 'run.tasks'} {name}")
            found = self.lookup(base)
            if found is None:
                raise self.unknown(base, where)
            self._variant, self._format_is_task = variant, found.kind == "task"
            try:
                return self.add_named(base, parents, overrides, where)
            finally:
                self._variant = None
        found = self.lookup(name)
        if found is None and PATH_SEPARATOR in name:
            return [self.add_path(name, parents, overrides, where)]
        if found is None:
            raise self.unknown(name, where)
        name = name.removeprefix(QUALIFIER)
        if found.scope is not None and found.kind != "task":
            # a catalog group's or tag's members are the catalog's (as in lm-eval's own index), not conf/task's
            prev = self.lookup
            self.lookup = chain_lookups(found.scope, prev)
            try:
                return self._add_found(name, found, parents, overrides)
            finally:
                self.lookup = prev
        return self._add_found(name, found, parents, overrides)

    def _is_lm_eval_05(self, base: str, fmt: str) -> bool:
        """``fmt`` is lm-eval 0.5's: a name of its registry, or any name when task ``base`` has its own
        ``formats:`` (lm-eval 0.5 then reads the suffix against that table, or ignores it)."""
        if lm_eval_05_format(fmt) is not None:
            return True
        found = self.lookup(base)
        return found is not None and found.kind == "task" and "formats" in found.cfg

    def _add_selection05(
        self, base: str, fmt: str, parents: list[str], overrides: dict[str, Any] | None, where: str | None
    ) -> list[str]:
        """``NAME@FMT`` in lm-eval 0.5's vocabulary (compiler/formats/lm_eval_05.py): a task in that format
        named ``NAME@FMT``; a group's members each in it."""
        if self.lookup(base) is None:
            raise self.unknown(base, where)
        self._selection05 = fmt
        try:
            return self.add_named(base, parents, overrides, where)
        finally:
            self._selection05 = None

    def add_path(self, path: str, parents: list[str], overrides: dict[str, Any] | None, where: str | None) -> str:
        """``GROUP::CHILD[::...]`` (lm-eval 0.5's group paths): the root group expanded as selected alone, then
        walked down by each child's full name: an inline subgroup or task is ``PARENT::NAME``, a task it
        lists by name ``PARENT::TASK``, a group it lists by name keeps its own name (so lm-eval 0.5.0.dev1 finds
        no ``mmlu::humanities``: mmlu lists ``mmlu_humanities``). The node found is selected with what the
        groups above it gave it."""
        parts = path.split(PATH_SEPARATOR)
        found = self.lookup(parts[0])
        if found is None:
            raise self.unknown(parts[0], where)
        if found.kind != "group":
            raise fail(
                f"root {parts[0]!r} of path {path!r} is not a group", file=_file(where), field=where or "run.tasks"
            )
        scratch = Expander(self.lookup, self.known, self.broken, self.default_format, self.sweep, self.run_seed)
        scratch.add_named(parts[0], [], overrides, where)
        scratch.finish()
        groups = {g.name: g for g in scratch.sel.groups}
        current = parts[0]
        for i in range(1, len(parts)):
            if current not in groups:
                raise fail(
                    f"cannot go into {parts[i]!r}: {PATH_SEPARATOR.join(parts[:i])!r} is a task, not a group",
                    file=_file(where),
                    field=where or "run.tasks",
                )
            key = PATH_SEPARATOR.join(parts[: i + 1])
            children = {self._child_key(current, c, groups): c for c in groups[current].subtasks}
            hits = [key] if key in children else [k for k in children if "@" not in parts[i] and k.split("@")[0] == key]
            if len(hits) != 1:
                why = "matches several" if hits else "not found in"
                raise fail(
                    f"{key!r} {why} group {current!r}; its children: {', '.join(hits or children)}",
                    file=_file(where),
                    field=where or "run.tasks",
                )
            current = children[hits[0]]
        return self._adopt(scratch, current, groups, parents)

    @staticmethod
    def _child_key(parent: str, child: str, groups: dict[str, GroupInfo]) -> str:
        """A child's name in a path: an inline one's own (``PARENT::NAME``), a listed group's own, a listed
        task's ``PARENT::TASK``."""
        if child.startswith(parent + PATH_SEPARATOR) or child in groups:
            return child
        return f"{parent}{PATH_SEPARATOR}{child}"

    def _adopt(self, scratch: Expander, node: str, groups: dict[str, GroupInfo], parents: list[str]) -> str:
        """Take ``node`` (a group or task of ``scratch``'s expansion) and everything under it into this selection,
        under ``parents``."""
        keep: set[str] = set()
        stack = [node]
        while stack:
            n = stack.pop()
            if n in groups and n not in keep:
                keep.add(n)
                stack += groups[n].subtasks
        outer = list(reversed(parents))
        for t in scratch.sel.tasks:
            if t.name != node and not keep & set(t.groups):
                continue
            inner = t.groups[: t.groups.index(node) + 1] if node in t.groups else []
            t.groups = inner + outer
            if t.name in self._task_names:
                self._overlap(t, parents + list(reversed(inner)), t.source)
                continue
            self._task_names[t.name] = inner[0] if inner else (parents[-1] if parents else "the task list")
            self.sel.tasks.append(t)
        self.sel.groups += [g for g in scratch.sel.groups if g.name in keep]
        return node

    def finish(self) -> None:
        """Groups list their members by the names they ended with (overlapping groups rename, GROUP::TASK)."""
        for g in self.sel.groups:
            g.subtasks = [self._renamed.get((g.name, s), s) for s in g.subtasks]

    def add_best(self, base: str, parents: list[str], overrides: dict[str, Any] | None, where: str | None) -> str:
        """``NAME@best``: ``NAME@cf`` and ``NAME@mcf`` exactly as selected alone (their tasks' records do not
        name this group), and the group ``NAME@best`` over the two that reports the better (scorer/groups/best.py)."""
        subtasks: list[str] = []
        for fmt in BEST_OF:
            subtasks += self.add_named(format_name(base, fmt), parents, overrides, where)
        name = format_name(base, BEST)
        self.sel.groups.append(
            GroupInfo(name=name, alias=None, subtasks=subtasks, aggregate_metric_list=[best_aggregate()], source=where)
        )
        return name

    def add_sweep(self, base: str, parents: list[str], overrides: dict[str, Any] | None, where: str | None) -> str:
        """``NAME@sweep``: every variant of ``run.sweep`` (all three formats by default) as ``NAME@FMT[+...]``
        exactly as selected alone, and the group ``NAME@sweep`` over them reporting their spread
        (scorer/groups/spread.py)."""
        self.swept = True
        subtasks: list[str] = []
        for v in (self.sweep or Sweep()).variants(self.run_seed):
            subtasks += self.add_named(format_name(base, v.suffix()), parents, overrides, where)
        name = format_name(base, SWEEP)
        spread = [spread_aggregate()]
        self.sel.groups.append(
            GroupInfo(name=name, alias=None, subtasks=subtasks, aggregate_metric_list=spread, source=where)
        )
        return name

    def _add_found(self, name: str, found: Found, parents: list[str], overrides: dict[str, Any] | None) -> list[str]:
        if found.kind == "tag":
            out = []
            for t in sorted(found.members):
                f = self.lookup(t)
                assert f is not None
                out += self.add_task({**f.cfg, **(overrides or {}), "task": t}, f.source, parents)
            return out
        if found.kind == "group":
            return [self.add_group(name, found.cfg, found.source, overrides, parents, found.namespace_inline)]
        cfg = {**found.cfg, **(overrides or {})}
        return self.add_task(cfg, found.source, parents, default_name=name)

    def add_task(
        self, cfg: dict[str, Any], source: str | None, parents: list[str], default_name: str | None = None
    ) -> list[str]:
        for k in ("tag", "group", "task_list"):
            cfg.pop(k, None)
        refuse_format_record(cfg, source, default_name)
        cfg = self._lm_eval_05(cfg, source, default_name)
        v = self._variant or default_variant(self.default_format)
        if v is not None and (cfg.get("output_type") == "multiple_choice" or self._format_is_task):
            cfg = formatted(
                {**cfg, "task": cfg.get("task", default_name)}, v.fmt, source, v.labels or DEFAULT_LABELS, v.seed
            )
        task = build_task_config(cfg, source, default_name)
        task.groups = list(reversed(parents))
        if task.name in self._overlapped and parents:  # a third group's own config: GROUP::TASK too
            same = next((t for t in self.sel.tasks if t.raw == {**task.raw, "task": t.name}), None)
            if same is not None:
                same.groups += [g for g in task.groups if g not in same.groups]
                return [same.name]
            qualified = f"{parents[-1]}::{task.name}"
            self._renamed[(parents[-1], task.name)] = qualified
            task.name, task.raw = qualified, {**task.raw, "task": qualified}
        if task.name in self._task_names:
            return [self._overlap(task, parents, source)]
        self._task_names[task.name] = parents[-1] if parents else "the task list"
        self.sel.tasks.append(task)
        return [task.name]

    def _overlap(self, task: TaskConfig, parents: list[str], source: str | None) -> str:
        """A task selected again (lm-eval 0.5's overlapping groups): the same config is the same task, listed
        in each group (its Instances built once); another config (a group's own ``num_fewshot``, ...) makes
        each a task of its own named by its group, ``GROUP::NAME``, with Instances and scores of its own."""
        name, where = task.name, parents[-1] if parents else "the task list"
        prev = next(t for t in self.sel.tasks if t.name == name)
        first = self._task_names[name]
        if not parents or not prev.groups:
            raise fail(
                f"task {name!r} is selected twice (in {first} and in {where}); select it once", file=source, task=name
            )
        if prev.raw == task.raw:
            prev.groups += [g for g in task.groups if g not in prev.groups]
            return name
        if first == where:
            raise fail(
                f"task {name!r} is selected twice with different configs (in {first} and in {where}); a task "
                "may differ only between groups (each then named GROUP::TASK)",
                file=source,
                task=name,
            )
        for t, group in ((prev, first), (task, where)):
            t.name = f"{group}::{name}"
            t.raw = {**t.raw, "task": t.name}
            self._task_names[t.name] = group
            self._renamed[(group, name)] = t.name
        del self._task_names[name]
        self._overlapped.add(name)
        self.sel.tasks.append(task)
        return task.name

    def _lm_eval_05(self, cfg: dict[str, Any], source: str | None, default_name: str | None) -> dict[str, Any]:
        """A task in lm-eval 0.5's format: its ``formats:`` or ``@FMT`` (named ``NAME@FMT``), or run.format's
        when that is lm-eval 0.5's and the task is multiple-choice; else ``cfg`` unchanged."""
        sel = self._selection05
        if sel is None and lm_eval_05_format(self.default_format) and cfg.get("output_type") == "multiple_choice":
            sel = self.default_format
        if sel is None and "formats" not in cfg:
            return with_scorer(cfg, source)
        name = str(cfg.get("task", default_name))
        out = with_scorer(formatted05({**cfg, "task": name}, sel, source), source)
        if isinstance(out.get("format"), dict):  # the METRIC,FILTER a comparison of formats reads
            metrics = [m.get("metric") for m in out.get("metric_list") or [] if isinstance(m, dict)]
            filters = [f.get("name") for f in out.get("filter_list") or [] if isinstance(f, dict)]
            first = metrics[0] if metrics else "acc" if out.get("output_type") == "multiple_choice" else "exact_match"
            out["format"]["metric"] = f"{first},{filters[0] if filters else 'none'}"
        if sel is not None:
            out["task"] = format_name(name, sel)
            alias = cfg.get("task_alias")
            if isinstance(alias, str) and alias:
                out["task_alias"] = format_name(alias, sel)
        return out

    def add_group(
        self,
        name: str,
        raw: dict[str, Any],
        source: str | None,
        overrides: dict[str, Any] | None,
        parents: list[str],
        namespace: bool,
    ) -> str:
        if name in parents:
            raise fail(f"group {name!r} contains itself", file=source)
        members = raw.get("task")
        if isinstance(members, str):
            members = [members]
        if not isinstance(members, list) or not members:
            raise fail("a group needs a non-empty 'task' list", file=source, field=f"group {name} task")
        task_overrides = {k: v for k, v in raw.items() if k not in GROUP_FIELDS}
        merged = {**task_overrides, **(overrides or {})}
        chain = [*parents, name]
        first_task = len(self.sel.tasks)
        subtasks: list[str] = []
        for item in members:
            if isinstance(item, str):
                subtasks += self.add_named(item, chain, merged, where=source)
            elif isinstance(item, dict) and "group" in item:
                gname = str(item["group"])
                if "task" not in item and self.lookup(gname) is not None:
                    inline = {k: v for k, v in item.items() if k != "group"}
                    subtasks += self.add_named(gname, chain, {**merged, **inline}, where=source)
                else:
                    full = f"{name}::{gname}" if namespace else gname
                    subtasks.append(self.add_group(full, item, source, merged, chain, namespace))
            elif isinstance(item, dict) and "task" in item:
                base = item["task"]
                item_over = {**merged, **item}
                if not isinstance(base, str):
                    raise fail("inline task entries need a string 'task' name", file=source, field=f"group {name}")
                if self.lookup(base) is None:
                    tname = f"{name}::{base}" if namespace else base
                    subtasks += self.add_task({**item_over, "task": tname}, source, chain)
                else:
                    subtasks += self.add_named(base, chain, item_over, where=source)
            else:
                raise fail(f"unsupported group member {item!r}", file=source, field=f"group {name} task")
        md = raw.get("metadata")
        aggregate = _norm_agg(raw.get("aggregate_metric_list"), source, name)
        alias = raw.get("group_alias")
        v = self._variant or default_variant(self.default_format)
        if v is not None and any(split_name(t)[1] == v.suffix() for t in subtasks):
            name, alias, aggregate = self._formatted_group(name, alias, aggregate, v, first_task)
        self.sel.groups.append(
            GroupInfo(
                name=name,
                alias=alias,
                subtasks=subtasks,
                aggregate_metric_list=aggregate,
                version=md.get("version") if isinstance(md, dict) else None,
                source=source,
            )
        )
        return name

    def _formatted_group(
        self, name: str, alias: str | None, aggregate: list[dict[str, Any]], v: Variant, first_task: int
    ) -> tuple[str, str | None, list[dict[str, Any]]]:
        """A group whose members were formatted is the group of that format (``mmlu@mcf``, a variant's
        ``mmlu@mcf+parens``): its members name it so, and it aggregates the format's metric (gen: the
        extracted label's exact match)."""
        fmt, suffix = v.fmt, v.suffix()
        new = format_name(name, suffix)
        for t in self.sel.tasks[first_task:]:
            t.groups = [new if g == name else g for g in t.groups]
        agg = group_aggregates(fmt, aggregate)  # the format's metric; a cloze one adds its normalisations
        return new, format_name(alias, suffix) if alias else None, agg
