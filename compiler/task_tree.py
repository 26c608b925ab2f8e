"""Which tasks a compile covers: ``+task=...`` entries of the Hydra config and ``run.tasks`` names (from
``run.include_path`` lm-eval YAMLs, else ``conf/task``), with groups and tags expanded as lm-eval's
TaskFactory does (group-level task fields become defaults of the member tasks; an inline member's own
keys win).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lmeval.compiler.errors import fail
from lmeval.compiler.functions import from_hydra_value
from lmeval.compiler.lmyaml import QUALIFIER, Index, build_index, load_yaml
from lmeval.compiler.taskconfig import TaskConfig, build_task_config
from lmeval.plans.limits import MAX_YAML_BYTES, InputError, open_regular
from lmeval.plans.scoring import check_group_metric

GROUP_FIELDS = ("group", "group_alias", "task", "aggregate_metric_list", "metadata")


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


@dataclass
class Found:
    cfg: dict[str, Any]
    source: str | None
    kind: str  # task | group | tag
    members: list[str] = field(default_factory=list)
    namespace_inline: bool = True  # lm-eval names inline group members "<group>::<name>"
    scope: Callable[[str], Found | None] | None = None  # where its members resolve first (its own index)


Lookup = Callable[[str], Found | None]


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


def _text_of(path: str) -> str:
    """A broken task file's text, to tell whether it meant to define a name ("" for a FIFO, device, ...)."""
    try:
        with open_regular(path) as f:
            return f.read(MAX_YAML_BYTES).decode("utf-8", errors="replace")
    except (InputError, OSError):
        return ""


class Expander:
    def __init__(self, lookup: Lookup, known: Callable[[], list[str]], broken: dict[str, str] | None = None) -> None:
        self.lookup = lookup
        self.known = known
        self.broken = broken or {}
        self.sel = Selection()
        self._task_names: dict[str, str] = {}

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
        found = self.lookup(name)
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
        task = build_task_config(cfg, source, default_name)
        if task.name in self._task_names:
            raise fail(
                f"task {task.name!r} is selected twice (in {self._task_names[task.name]} and in "
                f"{parents[-1] if parents else 'the task list'}); compile overlapping groups separately",
                file=source,
                task=task.name,
            )
        self._task_names[task.name] = parents[-1] if parents else "the task list"
        task.groups = list(reversed(parents))
        self.sel.tasks.append(task)
        return [task.name]

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
        self.sel.groups.append(
            GroupInfo(
                name=name,
                alias=raw.get("group_alias"),
                subtasks=subtasks,
                aggregate_metric_list=_norm_agg(raw.get("aggregate_metric_list"), source, name),
                version=md.get("version") if isinstance(md, dict) else None,
                source=source,
            )
        )
        return name


def conf_lookup(conf_task_dir: Path) -> Lookup:
    """Tasks and groups defined as ``conf/task/<name>.yaml`` (Hydra format, ``# @package task.<name>``),
    and the members of the groups defined there (``run.tasks=[mmlu_anatomy]``)."""
    cache: dict[str, Found | None] = {}

    def lookup(name: str) -> Found | None:
        if name not in cache:
            path = conf_task_dir / f"{name}.yaml"
            if "/" in name:
                cache[name] = None
            elif not path.is_file():
                cache[name] = _member_of_conf_group(conf_task_dir, name)
            else:
                cache[name] = hydra_found(name, _load_conf_file(path), conf_task_dir, str(path))
        return cache[name]

    return lookup


_CONF_FILES: dict[Path, dict[str, Any]] = {}


def _load_conf_file(path: Path) -> dict[str, Any]:
    """A conf/task file as plain data (C YAML parser; OmegaConf only when it uses interpolation)."""
    cfg = _CONF_FILES.get(path)
    if cfg is None:
        text = path.read_text(encoding="utf-8")
        if "${" in text:
            from omegaconf import OmegaConf

            loaded: Any = OmegaConf.to_container(OmegaConf.load(path), resolve=True)
        else:
            loaded = load_yaml(path)
        if not isinstance(loaded, dict):
            raise fail("expected a mapping", file=str(path))
        cfg = loaded
        _CONF_FILES[path] = cfg
    return dict(cfg)


def _member_of_conf_group(conf_task_dir: Path, name: str) -> Found | None:
    """A subtask or subgroup defined inline in a conf/task group (e.g. mmlu_anatomy, mmlu_stem of mmlu), with
    the task-level defaults it inherits from its enclosing groups."""
    for path in sorted(conf_task_dir.glob("*.yaml")):
        cfg = _load_conf_file(path)
        if "group" not in cfg:
            continue
        full = _with_definition(cfg, conf_task_dir, str(path))
        hit = _walk(full, name, {})
        if hit is not None:
            return hydra_found(name, hit, conf_task_dir, str(path))
    return None


def _walk(group: dict[str, Any], name: str, inherited: dict[str, Any]) -> dict[str, Any] | None:
    over = {**{k: v for k, v in group.items() if k not in GROUP_FIELDS}, **inherited}
    for item in group.get("task") or []:
        if not isinstance(item, dict):
            continue
        if item.get("group") == name:
            return {**item, **over}
        if item.get("task") == name and "group" not in item:
            return {**over, **item}
        if "group" in item:
            hit = _walk(item, name, over)
            if hit is not None:
                return hit
    return None


def _with_definition(cfg: dict[str, Any], base_dir: Path, source: str) -> dict[str, Any]:
    """A group node with ``definition: FILE`` (relative to conf/task): the file's config, the node's keys on top."""
    ref = cfg.get("definition")
    if ref is None:
        return cfg
    if not isinstance(ref, str):
        raise fail("must be a file name", file=source, field="definition")
    path = base_dir / ref
    if not path.is_file():
        raise fail(f"definition file {path} not found", file=source, field="definition")
    loaded = _load_conf_file(path)
    return {**loaded, **{k: v for k, v in cfg.items() if k != "definition"}}


def hydra_found(key: str, cfg: dict[str, Any], base_dir: Path, source: str) -> Found:
    cfg = _with_definition(cfg, base_dir, source)
    cfg = from_hydra_value(cfg, str(base_dir), source)
    if "group" in cfg:
        return Found(cfg, source, "group", namespace_inline=False)
    return Found({"task": key, **cfg}, source, "task")


def index_lookup(index: Index, qualifier: str = "") -> Lookup:
    """Names defined by an lmyaml Index; with ``qualifier``, ``<qualifier>NAME`` names them too. A group's or
    tag's members resolve in this index first (``Found.scope``)."""

    def lookup(name: str) -> Found | None:
        if qualifier and name.startswith(qualifier):
            name = name[len(qualifier) :]
        e = index.entries.get(name)
        if e is None:
            return None
        if e.kind == "tag":
            return Found({}, None, "tag", members=list(e.members), scope=plain)
        assert e.path is not None
        if e.unsupported:
            raise fail(f"task {name!r} is {e.unsupported}", file=str(e.path))
        cfg = load_yaml(e.path)
        return Found(cfg, str(e.path), e.kind, scope=plain)

    def plain(name: str) -> Found | None:
        return None if name.startswith(QUALIFIER) else lookup(name)

    return lookup


def unqualified(lookup: Lookup, qualifier: str) -> Lookup:
    def plain(name: str) -> Found | None:
        return None if name.startswith(qualifier) else lookup(name)

    return plain


def conf_entries(conf_task_dir: Path) -> list[tuple[str, str, str | None, str]]:
    """(name, kind, output_type, file) of every task and group ``conf/task`` defines, inline group members
    included (``mmlu_anatomy`` of ``mmlu``)."""
    out: list[tuple[str, str, str | None, str]] = []
    for path in sorted(conf_task_dir.glob("*.yaml")):
        cfg = _load_conf_file(path)
        if cfg.get("kind") == "jsonl_spec":
            out.append((path.stem, "task", "generate_until", str(path)))
            continue
        if "group" not in cfg:
            out.append((path.stem, "task", str(cfg.get("output_type", "generate_until")), str(path)))
            continue
        out.append((str(cfg["group"]), "group", None, str(path)))
        full = _with_definition(cfg, conf_task_dir, str(path))
        _members(full, {}, out, str(path))
    return out


def _members(
    group: dict[str, Any], inherited: dict[str, Any], out: list[tuple[str, str, str | None, str]], source: str
) -> None:
    over = {**{k: v for k, v in group.items() if k not in GROUP_FIELDS}, **inherited}
    for item in group.get("task") or []:
        if not isinstance(item, dict):
            continue
        if "group" in item:
            out.append((str(item["group"]), "group", None, source))
            _members(item, over, out, source)
        elif isinstance(item.get("task"), str):
            merged = {**over, **item}
            out.append((item["task"], "task", str(merged.get("output_type", "generate_until")), source))


def chain_lookups(*lookups: Lookup) -> Lookup:
    def lookup(name: str) -> Found | None:
        for lk in lookups:
            f = lk(name)
            if f is not None:
                return f
        return None

    return lookup


def include_index(include_path: str | list[str]) -> Index:
    paths = [include_path] if isinstance(include_path, str) else list(include_path)
    dirs = []
    for p in paths:
        d = Path(p).expanduser()
        if not d.is_dir():
            raise fail(f"run.include_path {p!r} is not a directory")
        if d.resolve() == Path(
            d.anchor or "/"
        ):  # the whole file system (/proc, /sys, others' files): not a task folder
            raise fail(f"run.include_path {p!r} is the file-system root; name the folder that holds the task YAMLs")
        dirs.append(d)
    return build_index(dirs)
