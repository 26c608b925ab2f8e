"""lm-evaluation-harness task YAMLs, loaded unchanged: ``!function``, ``include:``, groups and tags.

``index(dirs)`` scans directories recursively (sorted paths, like lm-eval's TaskManager) and maps every
task, group and tag name to where it is defined. Functions stay unresolved ``FunctionRef``s here; the
compiler resolves only the ones a selected task uses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from lmeval.compiler.errors import fail
from lmeval.compiler.tasks.functions import FunctionRef
from lmeval.plans import MAX_YAML_BYTES, InputError, open_regular, value_problem

_BASE: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_IGNORE_DIRS = {"__pycache__", ".ipynb_checkpoints"}
QUALIFIER = "lm_eval:"  # names lm-eval's catalog entry explicitly (compiler/tasks/lm_eval_catalog.py)


def _loader_for(path: Path) -> type:
    class Loader(_BASE):  # type: ignore[misc, valid-type]
        pass

    base_dir = str(path.parent)
    source = str(path)

    def ctor(loader: Any, node: Any) -> FunctionRef:
        return FunctionRef(str(loader.construct_scalar(node)).strip(), base_dir, source)

    Loader.add_constructor("!function", ctor)
    return Loader


def _parse(p: Path, memo: dict[Path, Any] | None) -> Any:
    if memo is not None and p in memo:
        hit = memo[p]
        return dict(hit) if isinstance(hit, dict) else hit
    with open_regular(p, max_bytes=MAX_YAML_BYTES, what="task YAML") as fh:
        cfg = yaml.load(fh, Loader=_loader_for(p))  # noqa: S506 - our loader only adds !function
    if memo is not None:
        memo[p] = dict(cfg) if isinstance(cfg, dict) else cfg
    return cfg


def load_yaml(path: str | Path, _seen: tuple[Path, ...] = (), memo: dict[Path, Any] | None = None) -> dict[str, Any]:
    """One task/group YAML with its ``include:`` chain merged (local keys win). ``memo`` (path -> parsed
    file) saves re-parsing shared include files while indexing many YAMLs."""
    p = Path(path).expanduser().resolve()
    if p in _seen:
        raise fail(f"include cycle through {p}", file=str(_seen[0]))
    try:
        cfg = _parse(p, memo)
    except InputError as e:
        raise fail(str(e).removeprefix(f"{p}: "), file=str(path)) from None
    except FileNotFoundError:
        raise fail("file not found", file=str(path)) from None
    except OSError as e:
        raise fail(f"cannot read: {e.strerror or e}", file=str(path)) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(e, "problem", None) or str(e)
        raise fail(f"invalid YAML: {problem}", file=str(p), line=line) from None
    if not isinstance(cfg, dict):
        raise fail(f"expected a mapping at the top level, got {type(cfg).__name__}", file=str(p))
    beyond = value_problem(cfg)  # alias bombs, 64-bit ints, nesting: the limits every stage shares
    if beyond is not None:
        raise fail(beyond[1], file=str(p))
    odd = _odd_key(cfg)
    if odd:
        raise fail(
            f"a mapping key is {odd[0]!r}, not a name (YAML reads true, false, yes, no, null so; quote it)", file=str(p)
        )
    if "include" not in cfg:
        return cfg
    includes = cfg.pop("include")
    merged: dict[str, Any] = {}
    for inc in includes if isinstance(includes, list) else [includes]:
        inc_path = Path(inc) if Path(str(inc)).is_absolute() else p.parent / str(inc)
        if not inc_path.is_file():
            raise fail(f"include: {inc!r} not found (looked for {inc_path})", file=str(p), field="include")
        inc_cfg = load_yaml(inc_path, (*_seen, p), memo)
        inc_cfg.pop("task_list", None)
        merged.update(inc_cfg)
    merged.update(cfg)
    return merged


@dataclass
class Entry:
    name: str
    kind: str  # task | group | tag
    path: Path | None
    cfg: dict[str, Any] | None = None
    members: list[str] = field(default_factory=list)  # for tags: task names
    unsupported: str | None = None  # why lmeval cannot compile it (listed, refused at compile)


@dataclass
class Index:
    entries: dict[str, Entry]
    broken: dict[str, str]  # yaml path -> why it could not be indexed

    def names(self) -> list[str]:
        return sorted(self.entries)


def _odd_key(cfg: Any) -> tuple[Any, ...]:
    """``(key,)`` for the first mapping key (anywhere in ``cfg``) that is a boolean or null, else ``()``
    (iterative; value_problem has bounded the nesting and size already)."""
    stack = [cfg]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            for k, x in v.items():
                if k is None or isinstance(k, bool):
                    return (k,)
                stack.append(x)
        elif isinstance(v, list):
            stack.extend(v)
    return ()


def build_index(dirs: list[Path]) -> Index:
    entries: dict[str, Entry] = {}
    broken: dict[str, str] = {}
    memo: dict[Path, Any] = {}
    for root in dirs:
        local: dict[str, Entry] = {}
        files = sorted(
            (p for p in root.glob("**/*.yaml") if not any(part in _IGNORE_DIRS for part in p.parts)),
            key=lambda p: p.as_posix(),
        )
        for path in files:
            try:
                cfg = load_yaml(path, memo=memo)
            except Exception as e:  # noqa: BLE001 - lm-eval skips unreadable files while indexing
                broken[str(path)] = str(e)
                continue
            _register(cfg, path, local, broken)
        entries.update(local)
    return Index(entries, broken)


def _register(cfg: dict[str, Any], path: Path, index: dict[str, Entry], broken: dict[str, str]) -> None:
    # lm-eval 0.4.13's TaskIndex.process_cfg: 'class' = Python task, 'group' = group, 'task' = task; the first
    # definition of a name in one folder wins; a tag is created by the first task naming it
    if "group" in cfg and "class" not in cfg:
        name = str(cfg["group"])
        if name not in index:
            index[name] = Entry(name, "group", path, cfg)
        return
    if "task" in cfg or "class" in cfg:
        if "task" not in cfg:
            broken[str(path)] = "a Python class task without a 'task' name"
            return
        name = str(cfg["task"])
        if name in index:
            return
        e = Entry(name, "task", path, cfg)
        if "class" in cfg:
            e.unsupported = "a Python class task ('class:'), which lmeval cannot compile"
        index[name] = e
        tags = cfg.get("tag")
        for tag in tags if isinstance(tags, list) else [tags] if tags else []:
            t = index.setdefault(str(tag), Entry(str(tag), "tag", None))
            if t.kind == "tag" and name not in t.members:
                t.members.append(name)
        return
    broken[str(path)] = f"neither 'task' nor 'group' at the top level (keys: {sorted(cfg)})"
