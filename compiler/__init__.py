"""Compiler: Hydra-composed task/model/run configs → a hashed, reproducible msgpack plan.

Public API (imports are lazy so ``import lmeval.compiler`` stays light: no torch, no vllm, no Hydra until
a compile runs):

Each takes ``settings`` (``compiler.parallel.BuildSettings``: build cache on/off, worker count; default from
the environment).

- ``compile_plan(overrides) -> (PlanHeader, records)``
- ``compile_located(overrides) -> Compiled`` (header, records, their bytes, the locations it was given;
  ``Compiled.write(out=None, codec=...)`` writes it where ``lmeval compile`` would)
- ``compile_to_file(overrides, out=None) -> Path``
- ``compile_sweep(overrides, out=None) -> [(combo, Compiled)]`` (``lmeval compile -m``)
- ``expand_sweep(overrides) -> list[list[str]]``
- ``compile_next(plan, results, located=None) -> (results_hash, StageCompiled | None)``: a chained plan's
  next stage from this stage's plan and results (``compiler/chain``, plans/plan/chain.py)
- ``load_model_info(model_cfg, apply_chat_template) -> (tokenizer, ModelInfo, chat function)`` (the judge plan's
  compile, ``compiler/judge``)

Its subsystems, each behind its own face: ``tasks`` (which tasks a compile covers), ``build`` (rendering and
Instance building), ``encode`` (token ids and plan encoding), ``cache`` (the build cache) and ``jsonl_spec``
(the frozen JSONL task spec). The names code outside the compiler needs from them (``catalog``,
``find_names``, ``validate_file``, ...) are re-exported here, imported on first use (PEP 562).
"""

from __future__ import annotations

from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lmeval.compiler.chain import StageCompiled, compile_next
    from lmeval.compiler.config import CONF_DIR, execute_model_overrides
    from lmeval.compiler.encode import load_model_info
    from lmeval.compiler.errors import CompileError
    from lmeval.compiler.jsonl_spec import SpecReadError, load_spec_task, validate_file
    from lmeval.compiler.judge import compile_judge, load_judge_config, read_judged
    from lmeval.compiler.parallel import BuildSettings
    from lmeval.compiler.pipeline import Compiled
    from lmeval.compiler.tasks import catalog, find_names
    from lmeval.plans import DocRecord, InstanceRecord, PlanHeader

__all__ = [
    "StageCompiled",
    "compile_next",
    "compile_judge",
    "load_judge_config",
    "read_judged",
    "CONF_DIR",
    "BuildSettings",
    "CompileError",
    "Compiled",
    "SpecReadError",
    "catalog",
    "compile_located",
    "compile_plan",
    "compile_sweep",
    "compile_to_file",
    "execute_model_overrides",
    "expand_sweep",
    "find_names",
    "load_model_info",
    "load_spec_task",
    "validate_file",
]

# names re-exported from the compiler's modules and subsystem faces, imported on first use
_WHERE = {
    "StageCompiled": "lmeval.compiler.chain",
    "compile_next": "lmeval.compiler.chain",
    "compile_judge": "lmeval.compiler.judge",
    "load_judge_config": "lmeval.compiler.judge",
    "read_judged": "lmeval.compiler.judge",
    "CONF_DIR": "lmeval.compiler.config",
    "BuildSettings": "lmeval.compiler.parallel",
    "CompileError": "lmeval.compiler.errors",
    "Compiled": "lmeval.compiler.pipeline",
    "SpecReadError": "lmeval.compiler.jsonl_spec",
    "catalog": "lmeval.compiler.tasks",
    "execute_model_overrides": "lmeval.compiler.config",
    "find_names": "lmeval.compiler.tasks",
    "load_model_info": "lmeval.compiler.encode",
    "load_spec_task": "lmeval.compiler.jsonl_spec",
    "validate_file": "lmeval.compiler.jsonl_spec",
}


def __getattr__(name: str) -> Any:
    """A re-exported name, imported from its module on first use (PEP 562)."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(module), name)


def compile_plan(
    overrides: list[str], settings: BuildSettings | None = None
) -> tuple[PlanHeader, list[DocRecord | InstanceRecord]]:
    from lmeval.compiler.pipeline import compile_plan as _compile_plan

    return _compile_plan(overrides, settings)


def compile_located(overrides: list[str], settings: BuildSettings | None = None) -> Compiled:
    from lmeval.compiler.pipeline import compile_located as _compile_located

    return _compile_located(overrides, settings)


def compile_to_file(overrides: list[str], out: str | None = None, settings: BuildSettings | None = None) -> Path:
    from lmeval.compiler.pipeline import compile_to_file as _compile_to_file

    return _compile_to_file(overrides, out, settings)


def compile_sweep(
    overrides: list[str], out: str | None = None, settings: BuildSettings | None = None
) -> list[tuple[list[str], Compiled]]:
    from lmeval.compiler.pipeline import compile_sweep as _compile_sweep

    return _compile_sweep(overrides, out, settings)


def expand_sweep(overrides: list[str]) -> list[list[str]]:
    from lmeval.compiler.config import expand_sweep as _expand_sweep

    return _expand_sweep(overrides)
