"""The build cache: compiled tasks (``part``: the ``TaskPart`` entry and its bytes) stored by key (``key``: a
sha256 over everything that shapes a task's bytes, the compiler's sources included) in a bounded folder
(``store``), and the memo of Hydra's composition (``compose``). Names are imported lazily (PEP 562).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lmeval.common import lazy_face

if TYPE_CHECKING:
    from lmeval.compiler.cache.compose import blank_slots as blank_slots
    from lmeval.compiler.cache.compose import compose_key as compose_key
    from lmeval.compiler.cache.compose import fill_slots as fill_slots
    from lmeval.compiler.cache.compose import load_composed as load_composed
    from lmeval.compiler.cache.compose import split_slots as split_slots
    from lmeval.compiler.cache.compose import store_composed as store_composed
    from lmeval.compiler.cache.key import task_key as task_key
    from lmeval.compiler.cache.key import tokenizer_key as tokenizer_key
    from lmeval.compiler.cache.key import workers_from_env as workers_from_env
    from lmeval.compiler.cache.part import TaskPart as TaskPart
    from lmeval.compiler.cache.part import entry_digest as entry_digest
    from lmeval.compiler.cache.part import pack_part as pack_part
    from lmeval.compiler.cache.part import part_of as part_of
    from lmeval.compiler.cache.part import records_of as records_of
    from lmeval.compiler.cache.part import unpack_part as unpack_part
    from lmeval.compiler.cache.store import BuildCache as BuildCache
    from lmeval.compiler.cache.store import CacheStats as CacheStats
    from lmeval.compiler.cache.store import default_dir as default_dir
    from lmeval.compiler.cache.store import enabled_from_env as enabled_from_env
    from lmeval.compiler.cache.store import max_bytes_from_env as max_bytes_from_env
    from lmeval.compiler.cache.store import plan_hash_key as plan_hash_key

__all__, __getattr__, __dir__ = lazy_face(__name__)
