"""The execute stage: a compiled plan in, one Parquet row per Instance out (see plans/results.py).

``execute`` never renders a prompt and never runs code from the plan: it feeds the plan's token ids to a
backend (vllm by default; hf, openai, fake) and writes what the model said. Heavy libraries (vllm, torch,
transformers) are imported only by the backend that needs them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from executor.errors import ExecuteError

__all__ = ["ExecuteError", "execute", "merge"]


def execute(
    plan_path: str,
    out: str | None = None,
    overrides: Sequence[str] = (),
    shard: str | None = None,
    reuse: str | None = None,
    progress: bool = True,
    part_size: int | None = None,
    close_backend: bool = True,
    verbose: bool = False,
) -> Path:
    """Run every Instance of a plan (or of shard ``"I/N"``); return the results directory.

    Results go to ``out`` or ``results/<plan_hash12>-<model>[-shardIofN]/``. Rerunning resumes; ``reuse``
    names an earlier results directory whose answers to identical requests (same request hash, same model)
    are copied instead of recomputed. ``close_backend=False`` skips shutting the engine down at the end
    (for a process that exits next). Unless ``verbose``, the engine's own output goes to
    ``<results>/engine.log`` instead of the terminal.
    """
    from executor.run import execute as _execute

    return _execute(plan_path, out=out, overrides=overrides, shard=shard, reuse=reuse, progress=progress,
                    part_size=part_size, close_backend=close_backend, verbose=verbose)  # fmt: skip


def merge(dirs: Sequence[str], out: str) -> Path:
    """Combine the results directories of all shards of one plan into ``out``."""
    from executor.merge import merge as _merge

    return _merge(dirs, out)
