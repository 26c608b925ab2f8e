"""Execution backends, one module each, all with the interface of ``executor.backends.base.Backend``.

The backend table (``plans/vocab/backends.py``) names each backend's module and class and its capability flags;
``load_backend`` imports the module only when its backend is chosen, so ``import executor`` stays light.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, cast

from lmeval.common import gc_paused, lazy_face
from lmeval.executor.backends.base import Backend as Backend
from lmeval.executor.errors import ExecuteError, failed
from lmeval.executor.modelconf import ModelSpec
from lmeval.plans import (
    BackendEntry,
    InstanceRecord,
    PlanHeader,
    UserError,
    built_in_backend,
    find_backend,
    unknown_backend,
)

if TYPE_CHECKING:  # re-exported on first use (common/lazyface.py), so that importing the face stays light
    from lmeval.executor.backends.base import load_hf_tokenizer as load_hf_tokenizer
    from lmeval.executor.backends.base import samples_to_run as samples_to_run
    from lmeval.executor.backends.hf_vision import is_vision_model as is_vision_model
    from lmeval.executor.backends.http import RequestFailed as RequestFailed
    from lmeval.executor.backends.http import destination as destination
    from lmeval.executor.backends.http import destination_notice as destination_notice
    from lmeval.executor.backends.openai_api import completion_body as completion_body
    from lmeval.executor.backends.openai_api import completion_output as completion_output
    from lmeval.executor.backends.openai_chat import chat_body as chat_body
    from lmeval.executor.backends.openai_chat import chat_output as chat_output
    from lmeval.executor.backends.openai_chat import chat_refusal as chat_refusal
    from lmeval.executor.backends.vllm_engine import MAX_TOKEN_IDS as MAX_TOKEN_IDS
    from lmeval.executor.backends.vllm_engine import next_token_groups as next_token_groups
    from lmeval.executor.backends.vllm_engine import reuse_order as reuse_order


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
    if built_in_backend(entry.name):
        factory: Callable[[ModelSpec, Path | None], Backend] = getattr(import_module(entry.module), entry.cls)
        return factory(spec, model_dir)
    return _start_plugin(entry, spec, model_dir)


def _start_plugin(entry: BackendEntry, spec: ModelSpec, model_dir: Path | None) -> Backend:
    """A registered backend's module imported, its class found and called: whatever fails there is the
    plugin's, one line naming it and what failed."""
    where = f"model.backend={entry.name} (a plugin backend, {entry.module}:{entry.cls})"
    try:
        module = import_module(entry.module)
    except Exception as e:
        name = e.name if isinstance(e, ModuleNotFoundError) else None
        missing = name is not None and (entry.module + ".").startswith(name + ".")  # not one it imports
        raise ExecuteError(f"{where}: {f'no module {name!r}' if missing else failed('import', e)}") from None
    factory = getattr(module, entry.cls, None)
    if not callable(factory):
        raise ExecuteError(f"{where}: module {entry.module!r} has no class {entry.cls!r}")
    try:
        backend = factory(spec, model_dir)
    except UserError:
        raise
    except Exception as e:
        raise ExecuteError(f"{where}: {failed('start', e)}") from None
    problem = _interface_problem(backend)
    if problem is not None:
        raise ExecuteError(f"{where}: {problem}")
    return cast(Backend, backend)


def _interface_problem(backend: object) -> str | None:
    """What ``backend`` lacks of ``base.Backend`` (methods, a positive integer ``max_length``, a ``tokenizer``
    attribute: None or one that encodes and decodes), or None."""
    missing = [m for m in ("score", "generate", "engine_args", "close") if not callable(getattr(backend, m, None))]
    if missing:
        return f"{type(backend).__name__} has no method {', '.join(missing)}"
    length = getattr(backend, "max_length", None)
    if not isinstance(length, int) or isinstance(length, bool) or length <= 0:
        return f"max_length {length!r} is not a positive integer"
    tok = getattr(backend, "tokenizer", "absent")
    if tok is not None and not all(callable(getattr(tok, m, None)) for m in ("encode", "decode")):
        return "tokenizer is neither None nor one with encode and decode"
    return None


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


__all__, __getattr__, __dir__ = lazy_face(__name__)
