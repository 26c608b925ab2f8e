"""Where a task or group name is defined: ``conf/task`` files (Hydra format, inline group members included),
``run.include_path`` and catalog indexes of lm-eval YAMLs, looked up in order (``Found``: a name's config, its
kind and where its members resolve)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lmeval.compiler.errors import fail
from lmeval.compiler.tasks.functions import from_hydra_value
from lmeval.compiler.tasks.yamls import QUALIFIER, Index, build_index, load_yaml

GROUP_FIELDS = ("group", "group_alias", "task", "aggregate_metric_list", "metadata")


@dataclass
class Found:
    cfg: dict[str, Any]
    source: str | None
    kind: str  # task | group | tag
    members: list[str] = field(default_factory=list)
    namespace_inline: bool = True  # lm-eval names inline group members "<group>::<name>"
    scope: Callable[[str], Found | None] | None = None  # where its members resolve first (its own index)


Lookup = Callable[[str], Found | None]


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
    """Names defined by a ``yamls.Index``; with ``qualifier``, ``<qualifier>NAME`` names them too. A group's or
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
