"""The build cache: compiled tasks (``part``: the ``TaskPart`` entry and its bytes) stored by key (``key``: a
sha256 over everything that shapes a task's bytes, the compiler's sources included) in a bounded folder
(``store``), and the memo of Hydra's composition (``compose``). Names are imported lazily (PEP 562).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lmeval.compiler.cache.compose import (
        blank_slots,
        compose_key,
        fill_slots,
        load_composed,
        split_slots,
        store_composed,
    )
    from lmeval.compiler.cache.key import task_key, tokenizer_key, workers_from_env
    from lmeval.compiler.cache.part import TaskPart, entry_digest, pack_part, part_of, records_of, unpack_part
    from lmeval.compiler.cache.store import (
        BuildCache,
        CacheStats,
        default_dir,
        enabled_from_env,
        max_bytes_from_env,
        plan_hash_key,
    )

__all__ = [
    "BuildCache",
    "CacheStats",
    "TaskPart",
    "blank_slots",
    "compose_key",
    "default_dir",
    "enabled_from_env",
    "entry_digest",
    "fill_slots",
    "load_composed",
    "max_bytes_from_env",
    "pack_part",
    "part_of",
    "plan_hash_key",
    "records_of",
    "split_slots",
    "store_composed",
    "task_key",
    "tokenizer_key",
    "unpack_part",
    "workers_from_env",
]

_WHERE = {
    "BuildCache": "lmeval.compiler.cache.store",
    "CacheStats": "lmeval.compiler.cache.store",
    "TaskPart": "lmeval.compiler.cache.part",
    "blank_slots": "lmeval.compiler.cache.compose",
    "compose_key": "lmeval.compiler.cache.compose",
    "default_dir": "lmeval.compiler.cache.store",
    "enabled_from_env": "lmeval.compiler.cache.store",
    "entry_digest": "lmeval.compiler.cache.part",
    "fill_slots": "lmeval.compiler.cache.compose",
    "load_composed": "lmeval.compiler.cache.compose",
    "max_bytes_from_env": "lmeval.compiler.cache.store",
    "pack_part": "lmeval.compiler.cache.part",
    "part_of": "lmeval.compiler.cache.part",
    "plan_hash_key": "lmeval.compiler.cache.store",
    "records_of": "lmeval.compiler.cache.part",
    "split_slots": "lmeval.compiler.cache.compose",
    "store_composed": "lmeval.compiler.cache.compose",
    "task_key": "lmeval.compiler.cache.key",
    "tokenizer_key": "lmeval.compiler.cache.key",
    "unpack_part": "lmeval.compiler.cache.part",
    "workers_from_env": "lmeval.compiler.cache.key",
}


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use (PEP 562)."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(module), name)
