"""What a caller of ``execute`` chooses: the run's options and, for runs on Ray, the pool's (light: no Ray here)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lmeval.executor.errors import ExecuteError

DEFAULT_PART_SIZE = 4096
MAX_ATTEMPTS = 3  # a chunk is run at most this often before a pool run stops


@dataclass(frozen=True)
class PoolOptions:
    """How to spread a run: ``workers`` engines (None: one per GPU group of the cluster) on a local Ray
    instance (``address`` None) or an existing cluster (``"auto"`` or ``host:port``)."""

    workers: int | None = None
    address: str | None = None
    chunk_size: int | None = None
    gpus_per_worker: float | None = None  # None: the engine's tensor x pipeline parallel size on GPU clusters
    max_attempts: int = MAX_ATTEMPTS


@dataclass(frozen=True)
class RunOptions:
    """Everything about one ``execute`` call but the plan (see ``lmeval.executor.execute``)."""

    out: str | None = None
    overrides: Sequence[str] = ()
    shard: str | None = None
    reuse: str | None = None
    progress: bool = True
    part_size: int = DEFAULT_PART_SIZE
    close_backend: bool = True
    pool: PoolOptions | None = None  # None: one engine in this process
    verbose: bool = False
    store: str | None = None  # run.store: the result store's folder, "off", or None (the default folder)


def pool_options(
    workers: int | None, ray: str | None, chunk_size: int | None, gpus_per_worker: float | None
) -> PoolOptions | None:
    """The pool ``--workers``/``--ray`` ask for (None: one engine in this process), its flags checked."""
    if ray is None and (workers is None or workers == 1):
        if chunk_size is not None or gpus_per_worker is not None:
            raise ExecuteError("--chunk-size and --gpus-per-worker apply to runs with --workers N (N > 1) or --ray")
        return None
    if workers is not None and workers < 1:
        raise ExecuteError(f"--workers {workers}: must be at least 1")
    return PoolOptions(workers=workers, address=ray, chunk_size=chunk_size, gpus_per_worker=gpus_per_worker)
