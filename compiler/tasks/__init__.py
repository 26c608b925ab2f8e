"""Task discovery and selection: which tasks a compile covers. ``+task=`` nodes and ``run.tasks`` names are
looked up in ``run.include_path``, ``conf/task`` and lm-eval's installed catalog (``lookup``, ``lm_eval_catalog``,
``yamls``), groups and tags expanded (``select``: the one module that answers "which tasks"), each task's config
resolved with lm-eval's defaults (``taskconfig``) and its ``!function`` references recorded as data
(``functions``). Names are imported lazily (PEP 562), so importing this face loads nothing else.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lmeval.compiler.tasks.functions import SHIPPED_TASKLIB, FunctionRef, as_data, forget_loaded, locate, resolve
    from lmeval.compiler.tasks.lm_eval_catalog import catalog
    from lmeval.compiler.tasks.select import GroupInfo, Selection, find_names, select_tasks
    from lmeval.compiler.tasks.taskconfig import DEFAULT_MAX_GEN_TOKS, TaskConfig
    from lmeval.compiler.tasks.yamls import QUALIFIER, load_yaml

__all__ = [
    "DEFAULT_MAX_GEN_TOKS",
    "FunctionRef",
    "GroupInfo",
    "QUALIFIER",
    "SHIPPED_TASKLIB",
    "Selection",
    "TaskConfig",
    "as_data",
    "catalog",
    "find_names",
    "forget_loaded",
    "load_yaml",
    "locate",
    "resolve",
    "select_tasks",
]

_WHERE = {
    "DEFAULT_MAX_GEN_TOKS": "lmeval.compiler.tasks.taskconfig",
    "FunctionRef": "lmeval.compiler.tasks.functions",
    "GroupInfo": "lmeval.compiler.tasks.select",
    "QUALIFIER": "lmeval.compiler.tasks.yamls",
    "SHIPPED_TASKLIB": "lmeval.compiler.tasks.functions",
    "Selection": "lmeval.compiler.tasks.select",
    "TaskConfig": "lmeval.compiler.tasks.taskconfig",
    "as_data": "lmeval.compiler.tasks.functions",
    "catalog": "lmeval.compiler.tasks.lm_eval_catalog",
    "find_names": "lmeval.compiler.tasks.select",
    "forget_loaded": "lmeval.compiler.tasks.functions",
    "load_yaml": "lmeval.compiler.tasks.yamls",
    "locate": "lmeval.compiler.tasks.functions",
    "resolve": "lmeval.compiler.tasks.functions",
    "select_tasks": "lmeval.compiler.tasks.select",
}


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use (PEP 562)."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(module), name)
