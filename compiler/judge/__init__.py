"""The judge plan's compile side: a scored run and a judge config (conf/judge/) in, a sealed plan of the
judge's prompts out (design note: JUDGE.md). ``compile_judge`` is the entry point."""

from __future__ import annotations

from lmeval.compiler.judge.build import JudgeCompiled, compile_judge
from lmeval.compiler.judge.config import JudgeConfig, load_judge_config

__all__ = ["JudgeCompiled", "JudgeConfig", "compile_judge", "load_judge_config"]
