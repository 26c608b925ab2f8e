"""Which tasks a compile selects: ``+task=NAME`` nodes (conf/task files, inline task configs,
``kind: jsonl_spec`` and ``kind: trajectory`` nodes) and ``run.tasks`` names, looked up in ``run.include_path``,
conf/task and, only when some name needs it, lm-eval's installed catalog (``lookup``); groups and tags expanded
by the ``Expander`` (``expander``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from lmeval.common import CONF_DIR
from lmeval.compiler.errors import fail
from lmeval.compiler.formats import Sweep
from lmeval.compiler.tasks.expander import Expander, Selection
from lmeval.compiler.tasks.lm_eval_catalog import QUALIFIER, catalog
from lmeval.compiler.tasks.lookup import (
    chain_lookups,
    conf_lookup,
    hydra_found,
    include_index,
    index_lookup,
    unqualified,
)


class TaskOptions(Protocol):
    """The run options a selection reads (``compiler.runconfig.RunConfig`` holds them)."""

    @property
    def include_path(self) -> str | list[str] | None: ...

    @property
    def tasks(self) -> list[str] | None: ...

    @property
    def format(self) -> str | None: ...

    @property
    def sweep(self) -> Sweep | None: ...

    @property
    def sampler_seed(self) -> int | None: ...


def select_tasks(cfg: dict[str, Any], run: TaskOptions) -> Selection:
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

    ex = Expander(lookup, known, broken, run.format, run.sweep, run.sampler_seed)
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
        if body.get("kind") == "trajectory":
            ex.sel.top += _trajectory_task(ex, key, body)
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
    if run.sweep is not None and not ex.swept:
        raise fail("no task is selected as NAME@sweep (e.g. +task=arc_easy@sweep)", field="run.sweep")
    ex.finish()
    ex.sel.load_order = [s.name for s in ex.sel.tasks]
    ex.sel.tasks.sort(key=lambda s: s.name)
    return ex.sel


def _needs_catalog(cfg: dict[str, Any], run: TaskOptions, index: Any, conf: Any) -> bool:
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
    """A ``kind: jsonl_spec`` task node (compiler/jsonl_spec): validated docs + a task config for the normal path."""
    from lmeval.compiler.jsonl_spec import load_spec_task

    path = body.get("path")
    if not isinstance(path, str) or not path or path == "???":
        raise fail(f"set task.{key}.path=FILE (the JSONL task spec)", field=f"task.{key}.path")
    allow = body.get("allow_bad_tasks", False)
    if not isinstance(allow, bool):
        raise fail(f"must be true or false, got {allow!r}", field=f"task.{key}.allow_bad_tasks")
    st = load_spec_task(path, allow, name=key)
    # the plan keeps the file's name, not where it lives (plans/plan/identity.py)
    ex.sel.bad_lines += [_portable_line(line, path) for line in st.bad_lines]
    names = ex.add_task(dict(st.task_config), path, [], default_name=key)
    spec = ex.sel.tasks[-1]
    split = spec.test_split if spec.test_split is not None else spec.validation_split
    assert split is not None
    spec.preloaded = {split: st.docs}
    spec.per_doc_generation_kwargs = True
    return names


def _trajectory_task(ex: Expander, key: str, body: dict[str, Any]) -> list[str]:
    """A ``kind: trajectory`` task node (compiler/trajectories.py): recorded conversations, one document per step."""
    from lmeval.compiler.trajectories import trajectory_task

    path = body.get("path")
    if not isinstance(path, str) or not path or path == "???":
        raise fail(
            f"set task.{key}.path=FILE (recorded conversations: JSONL or an ATIF trajectory)", field=f"task.{key}.path"
        )
    config, docs = trajectory_task(path, key)
    names = ex.add_task(config, path, [], default_name=key)
    ex.sel.tasks[-1].preloaded = {"test": docs}
    return names


def _portable_line(line: str, path: str) -> str:
    return Path(path).name + line[len(path) :] if line.startswith(path + ":") else line
