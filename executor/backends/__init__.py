"""Execution backends, one module each, all with the interface of ``executor.backends.base.Backend``.

The backend table (``plans/backends.py``) names each backend's module and class and its capability flags;
``load_backend`` imports the module only when its backend is chosen, so ``import executor`` stays light.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lmeval.common import gc_paused
from lmeval.executor.backends.base import Backend
from lmeval.executor.errors import ExecuteError
from lmeval.executor.modelconf import ModelSpec
from lmeval.plans import BackendEntry, InstanceRecord, PlanHeader, find_backend, unknown_backend

if TYPE_CHECKING:
    from lmeval.executor.backends.base import load_hf_tokenizer
    from lmeval.executor.backends.hf_vision import is_vision_model
    from lmeval.executor.backends.http import RequestFailed, destination_notice
    from lmeval.executor.backends.openai_api import completion_body, completion_output
    from lmeval.executor.backends.openai_chat import chat_body, chat_output, chat_refusal


def backend_entry(spec: ModelSpec) -> BackendEntry:
    """The table's entry of ``spec.backend`` (``model_spec`` refused unknown names)."""
    entry = find_backend(spec.backend)
    if entry is None:
        raise ExecuteError(unknown_backend(spec.backend))
    return entry


def load_backend(spec: ModelSpec, model_dir: Path | None) -> Backend:
    """Start the backend the table names for ``spec.backend`` (its module is imported now, not before)."""
    entry = backend_entry(spec)
    if entry.needs_weights and model_dir is None:
        raise ExecuteError(f"model.backend={entry.name}: needs a local model directory (model.path=DIR)")
    factory: Callable[[ModelSpec, Path | None], Backend] = getattr(import_module(entry.module), entry.cls)
    return factory(spec, model_dir)


def plan_refusal(
    spec: ModelSpec, header: PlanHeader, instances: Sequence[InstanceRecord], plan_path: str
) -> str | None:
    """Why the backend cannot run these Instances (its entry's ``plan_check``: one line), or None."""
    entry = backend_entry(spec)
    if entry.plan_check is None:
        return None
    module, _, name = entry.plan_check.partition(":")
    check: Callable[[PlanHeader, Sequence[InstanceRecord], str], str | None] = getattr(import_module(module), name)
    return check(header, instances, plan_path)


def start_backend(
    spec: ModelSpec, model_dir: Path | None, factory: Callable[[ModelSpec, Path | None], Backend] = load_backend
) -> Backend:
    """``factory(spec, model_dir)`` with the cyclic garbage collector off: starting a backend (vLLM: its
    imports and the engine) allocates millions of long-lived objects and no garbage, and the collector's
    passes over them took ~3.5 s of a 40 s run."""
    with gc_paused():
        return factory(spec, model_dir)


# re-exported on first use (PEP 562), so that importing the face stays light: name -> its module
_LAZY = {
    "RequestFailed": "lmeval.executor.backends.http",
    "destination_notice": "lmeval.executor.backends.http",
    "chat_body": "lmeval.executor.backends.openai_chat",
    "chat_output": "lmeval.executor.backends.openai_chat",
    "chat_refusal": "lmeval.executor.backends.openai_chat",
    "completion_body": "lmeval.executor.backends.openai_api",
    "completion_output": "lmeval.executor.backends.openai_api",
    "load_hf_tokenizer": "lmeval.executor.backends.base",
    "is_vision_model": "lmeval.executor.backends.hf_vision",
}


def __getattr__(name: str) -> Any:
    """A re-exported name, imported from its module on first use (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(module), name)


__all__ = [
    "Backend",
    "RequestFailed",
    "backend_entry",
    "load_backend",
    "plan_refusal",
    "start_backend",
    "chat_body",
    "chat_output",
    "chat_refusal",
    "completion_body",
    "completion_output",
    "destination_notice",
    "load_hf_tokenizer",
    "is_vision_model",
]
