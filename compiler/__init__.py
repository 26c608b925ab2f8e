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
``find_names``, ``validate_file``, ...) are re-exported here, imported on first use (PEP 562,
``lmeval.common.lazyface``: each name is spelt once, in the ``TYPE_CHECKING`` block).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lmeval.common import lazy_face

if TYPE_CHECKING:
    from lmeval.compiler.chain import StageCompiled as StageCompiled
    from lmeval.compiler.chain import compile_next as compile_next
    from lmeval.compiler.config import CONF_DIR as CONF_DIR
    from lmeval.compiler.config import execute_model_overrides as execute_model_overrides
    from lmeval.compiler.config import expand_sweep as expand_sweep
    from lmeval.compiler.encode import load_model_info as load_model_info
    from lmeval.compiler.errors import CompileError as CompileError
    from lmeval.compiler.jsonl_spec import SpecReadError as SpecReadError
    from lmeval.compiler.jsonl_spec import load_spec_task as load_spec_task
    from lmeval.compiler.jsonl_spec import validate_file as validate_file
    from lmeval.compiler.judge import compile_judge as compile_judge
    from lmeval.compiler.judge import load_judge_config as load_judge_config
    from lmeval.compiler.judge import read_judged as read_judged
    from lmeval.compiler.parallel import BuildSettings as BuildSettings
    from lmeval.compiler.pipeline import Compiled as Compiled
    from lmeval.compiler.pipeline import compile_located as compile_located
    from lmeval.compiler.pipeline import compile_plan as compile_plan
    from lmeval.compiler.pipeline import compile_sweep as compile_sweep
    from lmeval.compiler.pipeline import compile_to_file as compile_to_file
    from lmeval.compiler.tasks import catalog as catalog
    from lmeval.compiler.tasks import find_names as find_names

__all__, __getattr__, __dir__ = lazy_face(__name__)
