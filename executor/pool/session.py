"""Many engines on one plan: ``lmeval execute --workers N`` (one machine) and ``--ray ADDRESS`` (a cluster).

Ray Core only (imported here, never by ``import executor``). The driver (the ``lmeval execute`` process)
cuts the pending Instances into deterministic chunks (executor/pool/chunks.py) and starts one long-lived actor
per engine (``EngineWorker``: one GPU, one tensor-parallel group, or one CPU engine), which loads the model
once and then runs chunk after chunk; the driver keeps ``DEPTH`` chunks queued per worker, so a worker
never waits for the next one. Workers return each chunk's rows as Parquet bytes; the driver checks them
against the plan and commits them atomically as one part (executor/pool/chunkstore.py). The driver is the only
writer, so a worker that dies mid-chunk leaves nothing behind: its chunks go back to the queue (Ray restarts
the actor, up to ``MAX_RESTARTS`` times), each chunk at most ``max_attempts`` times, after which the run
stops with a one-line error naming the chunk and the cause, every committed chunk kept. A killed driver
takes its actors with it (on one machine, every process of its Ray instance: executor/pool/guard.py);
rerunning the same command resumes from the committed parts.

Here: connecting to Ray, sizing the pool and starting it (``PoolSession``); the worker is executor/pool/worker.py,
the driver's dispatch loop executor/pool/dispatch.py.
"""

from __future__ import annotations

import logging
import os
import socket
from collections import deque
from pathlib import Path
from typing import Any

from lmeval.executor import faults
from lmeval.executor.errors import ExecuteError, first_line
from lmeval.executor.jobloop import RunStats
from lmeval.executor.modelconf import ModelSpec
from lmeval.executor.options import PoolOptions
from lmeval.executor.pool.chunks import Chunk, default_chunk_size, make_chunks
from lmeval.executor.pool.chunkstore import check_chunk_parts, check_complete
from lmeval.executor.pool.dispatch import MAX_RESTARTS, DispatchJob, Worker, drive
from lmeval.executor.pool.guard import Guard, start_guard
from lmeval.executor.pool.worker import EngineWorker, parallel_size
from lmeval.executor.progress import Progress
from lmeval.plans import InstanceRecord, RunManifest, find_backend


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ExecuteError("--workers/--ray run on Ray, which is not installed: pip install 'lmeval[ray]'") from None
    return ray


def connect(ray: Any, opts: PoolOptions) -> bool:
    """Connect to the cluster (or start a local instance); True when this call started it."""
    if ray.is_initialized():
        return False
    kw: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.WARNING}
    if opts.address is None:
        # one machine: a Ray instance of our own (never a cluster that happens to run here), as many CPU
        # slots as workers asked for (CPU engines), the GPUs Ray finds
        kw["num_cpus"] = max(os.cpu_count() or 1, opts.workers or 1)
        ray.init(address="local", **kw)
        return True
    _reachable(opts.address)
    try:
        ray.init(address=opts.address, **kw)
    except Exception as e:
        raise ExecuteError(f"--ray {opts.address}: cannot connect to a Ray cluster ({first_line(e)})") from None
    return False


def _reachable(address: str) -> None:
    """Fail fast on a ``host:port`` nobody listens on (Ray itself retries for a minute or more)."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or "://" in address:
        return
    try:
        socket.create_connection((host, int(port)), timeout=10).close()
    except OSError as e:
        raise ExecuteError(f"--ray {address}: cannot connect to a Ray cluster ({e.strerror or e})") from None


def plan_resources(spec: ModelSpec, opts: PoolOptions, cluster: dict[str, float]) -> tuple[int, float, float]:
    """(workers, GPUs per worker, CPUs per worker), checked against what the cluster has."""
    gpus = float(cluster.get("GPU", 0.0))
    cpus = float(cluster.get("CPU", 0.0))
    g = opts.gpus_per_worker
    if g is None:
        entry = find_backend(spec.backend)
        g = float(parallel_size(spec)) if gpus > 0 and not (entry is not None and entry.http) else 0.0
    if g < 0:
        raise ExecuteError(f"--gpus-per-worker {g}: must not be negative")
    n = opts.workers
    if n is None:
        if g <= 0:
            raise ExecuteError("--ray: the cluster has no GPUs for one engine each; say how many with --workers N")
        n = int(gpus // g)
    if n < 1:
        raise ExecuteError(f"--workers {n}: need at least one worker (the cluster has {gpus:g} GPUs)")
    c = 0.0 if g > 0 else 1.0
    if n * g > gpus:
        raise ExecuteError(f"--workers {n} with {g:g} GPU(s) each needs {n * g:g} GPUs; the Ray cluster has {gpus:g}")
    if n * c > cpus:
        raise ExecuteError(f"--workers {n} CPU engines need {n * c:g} CPUs; the Ray cluster has {cpus:g}")
    return n, g, c


class PoolSession:
    """A connection to Ray with the pool's size checked against the cluster: opened before anything is
    written, so a bad request leaves the results directory untouched."""

    def __init__(self, opts: PoolOptions, spec: ModelSpec, out_dir: Path, plan_hash: str) -> None:
        self.opts = opts
        self.spec = spec
        self.ray = _import_ray()
        if out_dir.is_dir():
            check_chunk_parts(out_dir, plan_hash)
        if opts.chunk_size is not None and opts.chunk_size < 1:
            raise ExecuteError(f"--chunk-size {opts.chunk_size}: must be at least 1")
        self.started = False
        # a Ray instance of our own dies with this process, SIGKILLed or not (executor/pool/guard.py)
        self.guard: Guard | None = None
        if opts.address is None and not self.ray.is_initialized():
            self.guard = start_guard()
        try:
            self.started = connect(self.ray, opts)
            self.n, self.g, self.c = plan_resources(spec, opts, self.ray.cluster_resources())
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if self.started:
            self.ray.shutdown()
            self.started = False
        if self.guard is not None:
            self.guard.close()
            self.guard = None

    def run(
        self,
        *,
        plan_path: str,
        plan_hash: str,
        ident: dict[str, Any],
        instances: list[InstanceRecord],
        todo: list[InstanceRecord],
        out_dir: Path,
        bar: Progress,
        stats: RunStats,
        manifest: RunManifest,
    ) -> None:
        """Run ``todo`` (the pending part of ``instances``) on the pool, committing chunk parts into
        ``out_dir`` (whose lock the caller holds); fills ``stats``, the manifest's engine args and its
        ``execution`` record."""
        ray, opts = self.ray, self.opts
        from ray.exceptions import RayActorError, RayError

        size = int(opts.chunk_size or default_chunk_size(len(instances)))
        pending_ids = {i.instance_id for i in todo}
        chunks: dict[int, Chunk] = {}
        for ch in make_chunks(instances, size):
            left = tuple(i for i in ch.instances if i.instance_id in pending_ids)
            if left:
                chunks[ch.index] = Chunk(ch.index, left)
        n = max(1, min(self.n, len(chunks)))
        actor_cls = ray.remote(EngineWorker).options(
            num_gpus=self.g, num_cpus=self.c, max_restarts=MAX_RESTARTS, max_task_retries=0
        )
        env = faults.worker_env()
        workers = [Worker(k, actor_cls.remote(self.spec, plan_path, env), deque()) for k in range(n)]
        try:
            bar.phase(f"executing on {n} workers")
            job = DispatchJob(
                ray,
                RayActorError,
                RayError,
                opts,
                workers,
                chunks,
                plan_path,
                plan_hash,
                ident,
                out_dir,
                bar,
                stats,
                manifest,
            )
            record = drive(job)
        finally:
            for w in workers:
                try:
                    ray.kill(w.actor)
                except Exception:
                    pass
        check_complete(out_dir, instances)  # the whole directory, parts of earlier runs included
        manifest.numerics.workers, manifest.numerics.chunk_size = n, size
        manifest.execution = {
            "workers": n,
            "gpus_per_worker": self.g,
            "cpus_per_worker": self.c,
            "ray_address": opts.address or "local",
            "chunk_size": size,
            **record,
        }
