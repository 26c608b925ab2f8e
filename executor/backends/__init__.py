"""Execution backends, one module each, all with the interface of ``executor.backends.base.Backend``.

Modules are imported only when their backend is chosen, so ``import executor`` stays light.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from lmeval.common.gcpause import gc_paused
from lmeval.executor.backends.base import Backend
from lmeval.executor.modelconf import ModelSpec


def load_backend(spec: ModelSpec, model_dir: Path | None) -> Backend:
    if spec.backend == "fake":
        from lmeval.executor.backends.fake import FakeBackend

        return FakeBackend(spec, model_dir)
    if spec.backend == "openai":
        from lmeval.executor.backends.openai_api import OpenAIBackend

        return OpenAIBackend(spec, model_dir)
    if spec.backend == "openai-chat":
        from lmeval.executor.backends.openai_chat import OpenAIChatBackend

        return OpenAIChatBackend(spec, model_dir)
    assert model_dir is not None
    if spec.backend == "hf":
        from lmeval.executor.backends.hf import HFBackend

        return HFBackend(spec, model_dir)
    from lmeval.executor.backends.vllm_engine import VLLMBackend

    return VLLMBackend(spec, model_dir)


def start_backend(
    spec: ModelSpec, model_dir: Path | None, factory: Callable[[ModelSpec, Path | None], Backend] = load_backend
) -> Backend:
    """``factory(spec, model_dir)`` with the cyclic garbage collector off: starting a backend (vLLM: its
    imports and the engine) allocates millions of long-lived objects and no garbage, and the collector's
    passes over them took ~3.5 s of a 40 s run."""
    with gc_paused():
        return factory(spec, model_dir)
