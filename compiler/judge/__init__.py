"""The judge plan's compile side: a scored run and a judge config (conf/judge/) in, a sealed plan of the
judge's prompts out (design note: JUDGE.md). ``compile_judge`` is the entry point."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from lmeval.compiler.judge.build import JudgeCompiled, compile_judge
from lmeval.compiler.judge.config import JudgeConfig, load_judge_config

if TYPE_CHECKING:
    from lmeval.compiler.judge.build import read_judged


__all__ = ["read_judged", "JudgeCompiled", "JudgeConfig", "compile_judge", "load_judge_config"]

# re-exported on first use (PEP 562), so that importing the face stays light: name -> its module
_LAZY = {
    "read_judged": "lmeval.compiler.judge.build",
}


def __getattr__(name: str) -> Any:
    """A re-exported name, imported from its module on first use (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(module), name)
