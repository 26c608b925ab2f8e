"""Compiler: Hydra-composed task/model/run configs → a hashed, reproducible msgpack plan.

Public API (imports are lazy so ``import compiler`` stays light: no torch, no vllm):
``compile_plan(overrides) -> (PlanHeader, records)``, ``compile_to_file(overrides, out=None) -> Path``,
``expand_sweep(overrides) -> list[list[str]]``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lmeval.plans.records import DocRecord, InstanceRecord, PlanHeader

__all__ = ["compile_plan", "compile_to_file", "expand_sweep"]


def compile_plan(overrides: list[str]) -> tuple[PlanHeader, list[DocRecord | InstanceRecord]]:
    from lmeval.compiler.api import compile_plan as _compile_plan

    return _compile_plan(overrides)


def compile_to_file(overrides: list[str], out: str | None = None) -> Path:
    from lmeval.compiler.api import compile_to_file as _compile_to_file

    return _compile_to_file(overrides, out)


def expand_sweep(overrides: list[str]) -> list[list[str]]:
    from lmeval.compiler.config import expand_sweep as _expand_sweep

    return _expand_sweep(overrides)


def __getattr__(name: str) -> Any:
    raise AttributeError(name)
