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
- ``load_model_info(model_cfg, apply_chat_template) -> (tokenizer, ModelInfo, chat function)`` (the judge plan's
  compile, ``compiler/judge``)
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lmeval.compiler.parallel import BuildSettings
    from lmeval.compiler.pipeline import Compiled
    from lmeval.plans.records import DocRecord, InstanceRecord, ModelInfo, PlanHeader

__all__ = ["compile_located", "compile_plan", "compile_sweep", "compile_to_file", "expand_sweep", "load_model_info"]


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


def load_model_info(model_cfg: dict[str, Any] | None, apply_chat_template: bool) -> tuple[Any, ModelInfo, Any]:
    from lmeval.compiler.modelinfo import load_model_info as _load_model_info

    return _load_model_info(model_cfg, apply_chat_template)
