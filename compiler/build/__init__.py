"""Rendering and Instance building: one task's documents (``documents``) rendered through its templates
(``render``, ``plaintemplate``, bounded by ``bounded``; null fields counted by ``nullfields``), as chat messages
where a chat template applies (``messages``), with the run's seeds (``seeds``), into the requests of
``records`` (``builder``: lm-eval 0.4.13's ConfigurableTask, over the task's documents of ``taskdocs``, each
document's requests by output type in ``construct``). Names are imported lazily (``lmeval.common.lazyface``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lmeval.common import lazy_face

if TYPE_CHECKING:
    from lmeval.compiler.build.bounded import TASK_RENDER_SECONDS as TASK_RENDER_SECONDS
    from lmeval.compiler.build.bounded import Bounded as Bounded
    from lmeval.compiler.build.bounded import ImmutableBoundedEnvironment as ImmutableBoundedEnvironment
    from lmeval.compiler.build.bounded import render_bounded as render_bounded
    from lmeval.compiler.build.builder import TaskBuilder as TaskBuilder
    from lmeval.compiler.build.documents import DataSource as DataSource
    from lmeval.compiler.build.documents import local_name as local_name
    from lmeval.compiler.build.nullfields import NullField as NullField
    from lmeval.compiler.build.records import BuildOptions as BuildOptions
    from lmeval.compiler.build.records import BuiltTask as BuiltTask
    from lmeval.compiler.build.records import ChatFn as ChatFn
    from lmeval.compiler.build.records import budgeted as budgeted
    from lmeval.compiler.build.seeds import DEFAULT_SEED_MODE as DEFAULT_SEED_MODE
    from lmeval.compiler.build.seeds import Seeds as Seeds
    from lmeval.compiler.build.seeds import fewshot_seed as fewshot_seed
    from lmeval.compiler.build.seeds import has_python as has_python
    from lmeval.compiler.build.seeds import parse_seed as parse_seed
    from lmeval.compiler.build.seeds import parse_seed_mode as parse_seed_mode
    from lmeval.compiler.build.seeds import seeded_globals as seeded_globals

__all__, __getattr__, __dir__ = lazy_face(__name__)
