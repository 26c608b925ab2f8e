"""The execute stage: a compiled plan in, one Parquet row per Instance out (see plans/results/manifest.py).

``execute`` never renders a prompt and never runs code from the plan: it feeds the plan's token ids to a
backend (vllm by default; hf, openai, fake) and writes what the model said. Heavy libraries (vllm, torch,
transformers) are imported only by the backend that needs them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from lmeval.common import lazy_face
from lmeval.executor.batch import export_batch as export_batch
from lmeval.executor.batch import import_batch as import_batch
from lmeval.executor.cost import cost_lines as cost_lines
from lmeval.executor.cost import plan_cost as plan_cost
from lmeval.executor.errors import ExecuteError as ExecuteError
from lmeval.executor.options import DEFAULT_PART_SIZE, RunOptions, pool_options

if TYPE_CHECKING:  # the estimate (#63), imported on first use: ``import lmeval.executor`` stays as light
    from lmeval.executor.calibrate import rates_of as rates_of
    from lmeval.executor.calibrate import run_slice as run_slice
    from lmeval.executor.estimate import Rates as Rates
    from lmeval.executor.estimate import StoredLookup as StoredLookup
    from lmeval.executor.estimate import TokenEstimate as TokenEstimate
    from lmeval.executor.estimate import block_size_of as block_size_of
    from lmeval.executor.estimate import estimate_lines as estimate_lines
    from lmeval.executor.estimate import estimate_tokens as estimate_tokens
    from lmeval.executor.estimate import no_store as no_store
    from lmeval.executor.estimate import on_gpu as on_gpu
    from lmeval.executor.estimate import price_line as price_line
    from lmeval.executor.estimate import request_key as request_key
    from lmeval.executor.storeuse import answered_ids as answered_ids


def execute(
    plan_path: str,
    out: str | None = None,
    overrides: Sequence[str] = (),
    shard: str | None = None,
    reuse: str | None = None,
    progress: bool = True,
    part_size: int | None = None,
    close_backend: bool = True,
    workers: int | None = None,
    ray: str | None = None,
    chunk_size: int | None = None,
    gpus_per_worker: float | None = None,
    verbose: bool = False,
    store: str | None = None,
) -> Path:
    """Run every Instance of a plan (or of shard ``"I/N"``); return the results directory.

    Results go to ``out`` or ``results/<plan_hash12>-<model>[-shardIofN]/``. Rerunning resumes; ``reuse``
    names an earlier results directory whose answers to identical requests (same request hash, same model)
    are copied instead of recomputed. ``close_backend=False`` skips shutting the engine down at the end
    (for a process that exits next).

    ``workers`` (more than one) or ``ray`` spread the run over that many engines on Ray (``pip install
    'lmeval[ray]'``): a local Ray instance, or the cluster at ``ray`` (``"auto"`` or ``host:port``), whose
    default is one engine per GPU (per ``gpus_per_worker``). The plan is cut into chunks of ``chunk_size``
    Instances (default: about 128 chunks); the results directory is the same as a single-process run's.

    Unless ``verbose``, the engine's own output goes to ``<results>/engine.log`` instead of the terminal.

    ``store`` (``run.store``): the result store's folder, ``"off"``, or None for the default
    (``$LMEVAL_STORE_DIR``, else ``$LMEVAL_CACHE/store``): answers it holds are not computed again, and every
    answer computed is added (executor/ANSWERSTORE.md).
    """
    from lmeval.executor.run import run_plan

    pool = pool_options(workers, ray, chunk_size, gpus_per_worker)
    opts = RunOptions(out=out, overrides=overrides, shard=shard, reuse=reuse, progress=progress,
                      part_size=int(part_size or DEFAULT_PART_SIZE), close_backend=close_backend, pool=pool,
                      verbose=verbose, store=store)  # fmt: skip
    return run_plan(plan_path, opts)


def cache(
    action: str,
    store: str | None = None,
    max_size: str | None = None,
    older_than: str | None = None,
    remove: bool = False,
) -> list[str]:
    """``lmeval cache ls|prune``: the result store's summary, or bound it (executor/storeadmin.py)."""
    from lmeval.executor.storeadmin import cache_command

    return cache_command(action, store, max_size, older_than, remove)


def merge(dirs: Sequence[str], out: str, plan: str | None = None) -> Path:
    """Combine the results directories of all shards of one plan into ``out``, after checking every row
    against the plan (``plan``, default: the one the manifests name)."""
    from lmeval.executor.merging import merge as _merge

    return _merge(dirs, out, plan)


__all__, __getattr__, __dir__ = lazy_face(__name__)
