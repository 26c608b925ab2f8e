"""Which tasks a composed config selects: ``+task=NAME`` nodes (conf/task files, inline task configs,
``kind: jsonl_spec`` nodes) and ``run.tasks`` names, looked up in ``run.include_path``, conf/task and, only
when some name needs it, lm-eval's installed catalog; groups and tags expanded (``compiler.task_tree``)."""

from __future__ import annotations

import fnmatch
from pathlib import Path
from typing import Any

from lmeval.compiler.catalog import QUALIFIER, Listed, catalog, listing
from lmeval.compiler.config import CONF_DIR, RunConfig
from lmeval.compiler.errors import fail
from lmeval.compiler.task_tree import (
    Expander,
    Selection,
    chain_lookups,
    conf_lookup,
    hydra_found,
    include_index,
    index_lookup,
    unqualified,
)


def select_tasks(cfg: dict[str, Any], run: RunConfig) -> Selection:
    task_dir = CONF_DIR / "task"
    conf = conf_lookup(task_dir)
    index = include_index(run.include_path) if run.include_path else None
    lookups = [unqualified(index_lookup(index), QUALIFIER)] if index is not None else []
    lookups.append(unqualified(conf, QUALIFIER))
    broken = dict(index.broken) if index is not None else {}
    cat = catalog() if _needs_catalog(cfg, run, index, conf) else None
    if cat is not None:
        lookups.append(index_lookup(cat.index, QUALIFIER))
    lookup = chain_lookups(*lookups)

    def known() -> list[str]:
        names = sorted(p.stem for p in task_dir.glob("*.yaml"))
        return (index.names() if index is not None else []) + names + (cat.index.names() if cat else [])

    ex = Expander(lookup, known, broken)
    hydra_tasks = cfg.get("task") or {}
    if not isinstance(hydra_tasks, dict):
        raise fail("the 'task' config must map task names to task configs (use +task=NAME)")
    for key in sorted(hydra_tasks):
        body = hydra_tasks[key]
        if not isinstance(body, dict):
            raise fail(f"task.{key} must be a task config mapping, got {type(body).__name__}")
        src = task_dir / f"{key}.yaml"
        if body.get("kind") == "jsonl_spec":
            ex.sel.top += _jsonl_spec_task(ex, key, body)
            continue
        found = hydra_found(key, body, task_dir, str(src) if src.is_file() else f"task.{key}")
        if found.kind == "group":
            ex.sel.top.append(ex.add_group(str(found.cfg["group"]), found.cfg, found.source, None, [], False))
        else:
            ex.sel.top += ex.add_task(found.cfg, found.source, [], default_name=key)
    for name in run.tasks or []:
        ex.sel.top += ex.add_named(name, [], where="run.tasks")
    if not ex.sel.tasks:
        raise fail("no task selected: pass +task=NAME (e.g. +task=arith) or run.tasks=[...]")
    ex.sel.load_order = [s.name for s in ex.sel.tasks]
    ex.sel.tasks.sort(key=lambda s: s.name)
    return ex.sel


def _needs_catalog(cfg: dict[str, Any], run: RunConfig, index: Any, conf: Any) -> bool:
    """Whether some selected name is neither in run.include_path nor conf/task (so the ~14,000-file catalog
    index is only read when it is needed). Group members are resolved later and may need it too: any
    name that is not a plain conf/task file name turns it on."""
    for name in run.tasks or []:
        if name.startswith(QUALIFIER):
            return True
        if index is not None and name in index.entries:
            continue
        if not (CONF_DIR / "task" / f"{name}.yaml").is_file():
            return True
    return False


def _jsonl_spec_task(ex: Expander, key: str, body: dict[str, Any]) -> list[str]:
    """A ``kind: jsonl_spec`` task node (compiler/spec): validated docs + a task config for the normal path."""
    from lmeval.compiler.spec import load_spec_task

    path = body.get("path")
    if not isinstance(path, str) or not path or path == "???":
        raise fail(f"set task.{key}.path=FILE (the JSONL task spec)", field=f"task.{key}.path")
    allow = body.get("allow_bad_tasks", False)
    if not isinstance(allow, bool):
        raise fail(f"must be true or false, got {allow!r}", field=f"task.{key}.allow_bad_tasks")
    st = load_spec_task(path, allow, name=key)
    # the plan keeps the file's name, not where it lives (plans/identity.py)
    ex.sel.bad_lines += [_portable_line(line, path) for line in st.bad_lines]
    names = ex.add_task(dict(st.task_config), path, [], default_name=key)
    spec = ex.sel.tasks[-1]
    split = spec.test_split if spec.test_split is not None else spec.validation_split
    assert split is not None
    spec.preloaded = {split: st.docs}
    spec.per_doc_generation_kwargs = True
    return names


def _portable_line(line: str, path: str) -> str:
    return Path(path).name + line[len(path) :] if line.startswith(path + ":") else line


def find_names(
    include_path: list[str], kind: str | None = None, source: str | None = None, pattern: str | None = None
) -> list[Listed]:
    """``lmeval ls``: every name ``run.tasks``/``+task`` can compile (``catalog.listing``: include path
    folders, conf/task, lm-eval's catalog), of one ``kind`` (task, group, tag) and ``source`` when given,
    whose name (or the name without ``lm_eval:``) matches ``pattern``: a shell-style glob or a substring."""
    inc = include_index(include_path) if include_path else None
    return [
        r
        for r in listing(CONF_DIR / "task", inc)
        if (kind is None or r.kind == kind) and (source is None or r.source == source) and _match(r.name, pattern)
    ]


def _match(name: str, pattern: str | None) -> bool:
    if pattern is None:
        return True
    names = {name, name.removeprefix(QUALIFIER)}
    if any(c in pattern for c in "*?["):
        return any(fnmatch.fnmatchcase(n, pattern) for n in names)
    return any(pattern in n for n in names)
