"""Task discovery and selection: which tasks a compile covers. ``+task=`` nodes and ``run.tasks`` names are
looked up in ``run.include_path``, ``conf/task`` and lm-eval's installed catalog (``lookup``, ``lm_eval_catalog``,
``yamls``), groups and tags expanded (``select``: the one module that answers "which tasks", through the
``expander``), the names ``lmeval ls`` lists (``names``), each task's config
resolved with lm-eval's defaults (``taskconfig``) and its ``!function`` references recorded as data
(``functions``). Names are imported lazily (PEP 562), so importing this face loads nothing else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lmeval.common import lazy_face

if TYPE_CHECKING:
    from lmeval.compiler.tasks.expander import GroupInfo as GroupInfo
    from lmeval.compiler.tasks.expander import Selection as Selection
    from lmeval.compiler.tasks.functions import SHIPPED_TASKLIB as SHIPPED_TASKLIB
    from lmeval.compiler.tasks.functions import FunctionRef as FunctionRef
    from lmeval.compiler.tasks.functions import as_data as as_data
    from lmeval.compiler.tasks.functions import forget_loaded as forget_loaded
    from lmeval.compiler.tasks.functions import locate as locate
    from lmeval.compiler.tasks.functions import resolve as resolve
    from lmeval.compiler.tasks.lm_eval_catalog import catalog as catalog
    from lmeval.compiler.tasks.names import find_names as find_names
    from lmeval.compiler.tasks.select import select_tasks as select_tasks
    from lmeval.compiler.tasks.taskconfig import DEFAULT_MAX_GEN_TOKS as DEFAULT_MAX_GEN_TOKS
    from lmeval.compiler.tasks.taskconfig import TaskConfig as TaskConfig
    from lmeval.compiler.tasks.yamls import QUALIFIER as QUALIFIER
    from lmeval.compiler.tasks.yamls import load_yaml as load_yaml

__all__, __getattr__, __dir__ = lazy_face(__name__)
