"""Token ids and plan encoding: the model a plan is compiled for (``modelinfo``), its tokenizer at compile time
(``tokenizer``, with ``bytelevel`` pre-tokenization), a built task's plan records as bytes (``plan_records``), the
plan header's compile-time parts (``header``) and where a plan file is written (``destination``). Names are
imported lazily (PEP 562).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lmeval.compiler.encode.destination import plan_path
    from lmeval.compiler.encode.header import plain_data, plan_header, task_summary
    from lmeval.compiler.encode.modelinfo import load_model_info
    from lmeval.compiler.encode.plan_records import Record, task_records
    from lmeval.compiler.encode.tokenizer import ModelTokenizer

__all__ = [
    "ModelTokenizer",
    "Record",
    "load_model_info",
    "plain_data",
    "plan_header",
    "plan_path",
    "task_records",
    "task_summary",
]

_WHERE = {
    "ModelTokenizer": "lmeval.compiler.encode.tokenizer",
    "Record": "lmeval.compiler.encode.plan_records",
    "load_model_info": "lmeval.compiler.encode.modelinfo",
    "plain_data": "lmeval.compiler.encode.header",
    "plan_header": "lmeval.compiler.encode.header",
    "plan_path": "lmeval.compiler.encode.destination",
    "task_records": "lmeval.compiler.encode.plan_records",
    "task_summary": "lmeval.compiler.encode.header",
}


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use (PEP 562)."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(module), name)
