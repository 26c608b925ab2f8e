"""Rendering and Instance building: one task's documents (``documents``) rendered through its templates
(``render``, ``plaintemplate``, bounded by ``bounded``; null fields counted by ``nullfields``), as chat messages
where a chat template applies (``messages``), with the run's seeds (``seeds``), into the requests of
``records`` (``builder``: lm-eval 0.4.13's ConfigurableTask). Names are imported lazily (PEP 562).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lmeval.compiler.build.bounded import (
        TASK_RENDER_SECONDS,
        Bounded,
        ImmutableBoundedEnvironment,
        render_bounded,
    )
    from lmeval.compiler.build.builder import TaskBuilder
    from lmeval.compiler.build.documents import DataSource, local_name
    from lmeval.compiler.build.nullfields import NullField
    from lmeval.compiler.build.records import BuildOptions, BuiltTask, ChatFn, budgeted
    from lmeval.compiler.build.seeds import (
        DEFAULT_SEED_MODE,
        Seeds,
        fewshot_seed,
        has_python,
        parse_seed,
        parse_seed_mode,
        seeded_globals,
    )

__all__ = [
    "Bounded",
    "ImmutableBoundedEnvironment",
    "TASK_RENDER_SECONDS",
    "render_bounded",
    "BuildOptions",
    "BuiltTask",
    "ChatFn",
    "DEFAULT_SEED_MODE",
    "DataSource",
    "NullField",
    "Seeds",
    "TaskBuilder",
    "budgeted",
    "fewshot_seed",
    "has_python",
    "local_name",
    "parse_seed",
    "parse_seed_mode",
    "seeded_globals",
]

_WHERE = {
    "Bounded": "lmeval.compiler.build.bounded",
    "ImmutableBoundedEnvironment": "lmeval.compiler.build.bounded",
    "TASK_RENDER_SECONDS": "lmeval.compiler.build.bounded",
    "render_bounded": "lmeval.compiler.build.bounded",
    "BuildOptions": "lmeval.compiler.build.records",
    "BuiltTask": "lmeval.compiler.build.records",
    "ChatFn": "lmeval.compiler.build.records",
    "DEFAULT_SEED_MODE": "lmeval.compiler.build.seeds",
    "DataSource": "lmeval.compiler.build.documents",
    "NullField": "lmeval.compiler.build.nullfields",
    "Seeds": "lmeval.compiler.build.seeds",
    "TaskBuilder": "lmeval.compiler.build.builder",
    "budgeted": "lmeval.compiler.build.records",
    "fewshot_seed": "lmeval.compiler.build.seeds",
    "has_python": "lmeval.compiler.build.seeds",
    "local_name": "lmeval.compiler.build.documents",
    "parse_seed": "lmeval.compiler.build.seeds",
    "parse_seed_mode": "lmeval.compiler.build.seeds",
    "seeded_globals": "lmeval.compiler.build.seeds",
}


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use (PEP 562)."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(module), name)
