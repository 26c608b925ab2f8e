"""The judge plan's compile side: a scored run and a judge config (conf/judge/) in, a sealed plan of the
judge's prompts out (design note: JUDGE.md). ``compile_judge`` is the entry point."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lmeval.common import lazy_face
from lmeval.compiler.judge.build import JudgeCompiled as JudgeCompiled
from lmeval.compiler.judge.build import compile_judge as compile_judge
from lmeval.compiler.judge.config import JudgeConfig as JudgeConfig
from lmeval.compiler.judge.config import load_judge_config as load_judge_config

if TYPE_CHECKING:
    from lmeval.compiler.judge.build import read_judged as read_judged

__all__, __getattr__, __dir__ = lazy_face(__name__)
