"""Many engines on one plan: ``lmeval execute --workers N`` (one machine) and ``--ray ADDRESS`` (a cluster).

Ray Core only (imported here, never by ``import executor``). The driver (the ``lmeval execute`` process)
cuts the pending Instances into deterministic chunks (executor/chunks.py) and starts one long-lived actor
per engine (``EngineWorker``: one GPU, one tensor-parallel group, or one CPU engine), which loads the model
once and then runs chunk after chunk; the driver keeps ``DEPTH`` chunks queued per worker, so a worker
never waits for the next one. Workers return each chunk's rows as Parquet bytes; the driver checks them
against the plan and commits them atomically as one part (executor/chunkstore.py). The driver is the only
writer, so a worker that dies mid-chunk leaves nothing behind: its chunks go back to the queue (Ray restarts
the actor, up to ``MAX_RESTARTS`` times), each chunk at most ``max_attempts`` times, after which the run
stops with a one-line error naming the chunk and the cause, every committed chunk kept. A killed driver
takes its actors with it; rerunning the same command resumes from the committed parts.
"""

from __future__ import annotations

import gc
import logging
import os
import socket
import time
from collections import deque
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from lmeval.executor import faults
from lmeval.executor.chunks import Chunk, default_chunk_size, make_chunks
from lmeval.executor.chunkstore import check_chunk_parts, check_complete, check_rows, commit_chunk, rows_to_parquet
from lmeval.executor.errors import ExecuteError
from lmeval.executor.modelconf import ModelSpec
from lmeval.executor.progress import Progress
from lmeval.plans.errors import UserError
from lmeval.plans.records import InstanceRecord
from lmeval.plans.results import RunManifest

MAX_ATTEMPTS = 3  # a chunk is run at most this often before the run stops
MAX_RESTARTS = 3  # Ray restarts a dead worker (reloading its engine) at most this often
DEPTH = 2  # chunks queued per worker
PROBE_EVERY_S = 0.2  # how often a restarting worker is pinged (and the driver's longest wait)
RESTART_TIMEOUT_S = 900.0  # a worker not back this long after a death counts as dead
CONTENT_KEYS = ("tokenizer_hash", "config_hash")  # what every worker's model must share with the driver's


@dataclass(frozen=True)
class PoolOptions:
    """How to spread a run: ``workers`` engines (None: one per GPU group of the cluster) on a local Ray
    instance (``address`` None) or an existing cluster (``"auto"`` or ``host:port``)."""

    workers: int | None = None
    address: str | None = None
    chunk_size: int | None = None
    gpus_per_worker: float | None = None  # None: the engine's tensor x pipeline parallel size on GPU clusters
    max_attempts: int = MAX_ATTEMPTS


# ------------------------------------------------------------------------------------------ the worker


class _Rows:
    """The sink ``run_scoring``/``run_generation`` write to inside a worker: rows kept for the chunk."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self.tokens = 0

    def add(self, rows: list[dict[str, Any]], tokens: int) -> None:
        self.rows.extend(rows)
        self.tokens += tokens
        faults.point("worker-rows")

    def flush(self, full_only: bool = False) -> None:
        pass


def _content_identity(model_dir: Path | None) -> dict[str, Any]:
    from lmeval.plans.modelref import config_hash, tokenizer_hash

    return {"tokenizer_hash": tokenizer_hash(model_dir), "config_hash": config_hash(model_dir)}


class EngineWorker:
    """One engine that runs chunks (a Ray actor). It resolves the model on its own node and reports what it
    loaded with every answer, so the driver can refuse a node whose model differs. A failure to start is
    kept and reported with the first chunk (start failures are not worth retrying)."""

    def __init__(self, spec: ModelSpec, plan_path: str, env: dict[str, str]) -> None:
        for k in (faults.FAULT, faults.ONCE):  # a local Ray instance's workers inherit the driver's environment
            os.environ.pop(k, None)
        os.environ.update(env)
        self.spec = spec
        self.plan_path = plan_path
        self.host = socket.gethostname()
        self.start_error: str | None = None
        self.backend: Any = None
        self.ident: dict[str, Any] = {}
        self.versions: dict[str, str] = {}
        self.load_ms = 0
        try:
            import ray

            self.node = ray.get_runtime_context().get_node_id()
        except Exception:
            self.node = self.host
        try:
            self._start()
        except UserError as e:
            self.start_error = str(e)
        except Exception as e:
            self.start_error = f"{type(e).__name__}: {_first_line(e)}"

    def _start(self) -> None:
        from lmeval.executor.backends import load_backend
        from lmeval.executor.modelconf import resolve_model_dir

        spec = self.spec
        tp = int(spec.engine.get("tensor_parallel_size") or 1) * int(spec.engine.get("pipeline_parallel_size") or 1)
        if spec.backend == "vllm" and tp > 1 and "distributed_executor_backend" not in spec.engine:
            # inside an actor, vLLM would otherwise plan its own Ray placement for the GPUs this actor holds
            self.spec = spec = replace(spec, engine={**spec.engine, "distributed_executor_backend": "mp"})
        from lmeval.executor.run import versions

        self.versions = versions(spec.backend)
        model_dir = resolve_model_dir(spec)
        self.ident = _content_identity(model_dir)
        t = time.monotonic()
        was = gc.isenabled()
        gc.disable()
        try:
            self.backend = load_backend(spec, model_dir)
        finally:
            if was:
                gc.enable()
        self.load_ms = int((time.monotonic() - t) * 1000)

    def ping(self) -> bool:
        return True

    def run_chunk(self, index: int, instances: list[InstanceRecord]) -> dict[str, Any]:
        """The rows of one chunk as Parquet bytes, with stats; ``{"error": ...}`` for bad input (not retried)."""
        from lmeval.executor.run import RunStats, run_generation, run_scoring

        where = {"node": self.node, "host": self.host, "pid": os.getpid()}
        if self.start_error is not None:
            return {"error": f"worker on {self.host} could not start its engine: {self.start_error}", **where}
        faults.point(f"chunk-{index}")
        stats = RunStats()
        sink = _Rows()
        cache0 = dict(getattr(self.backend, "cache_stats", None) or {})
        scoring = [i for i in instances if i.request_type != "generate_until"]
        generation = [i for i in instances if i.request_type == "generate_until"]
        try:
            t0 = time.monotonic()
            if scoring:
                run_scoring(self.backend, self.spec, self.plan_path, scoring, sink, stats)  # type: ignore[arg-type]
            t1 = time.monotonic()
            if generation:
                run_generation(self.backend, self.spec, self.plan_path, generation, sink, stats)  # type: ignore[arg-type]
            t2 = time.monotonic()
        except UserError as e:
            return {"error": str(e), **where}
        stats.scoring_ms = int((t1 - t0) * 1000)
        stats.generation_ms = int((t2 - t1) * 1000)
        busy = int((t2 - t0) * 1000)
        cache1 = getattr(self.backend, "cache_stats", None) or {}
        for k in ("cached_prompt_tokens", "rescored"):
            setattr(stats, k, int(cache1.get(k, 0)) - int(cache0.get(k, 0)))
        return {
            "parquet": rows_to_parquet(sink.rows),
            "rows": len(sink.rows),
            "tokens": sink.tokens,
            "stats": stats.as_dict(),
            "busy_ms": busy,
            "ident": self.ident,
            "versions": self.versions,
            "engine_args": self.backend.engine_args(),
            "load_ms": self.load_ms,
            **where,
        }


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


# ------------------------------------------------------------------------------------------ the driver


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
        raise ExecuteError(f"--ray {opts.address}: cannot connect to a Ray cluster ({_first_line(e)})") from None
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
        tp = int(spec.engine.get("tensor_parallel_size") or 1) * int(spec.engine.get("pipeline_parallel_size") or 1)
        g = float(tp) if gpus > 0 and spec.backend != "openai" else 0.0
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


@dataclass
class _Worker:
    index: int
    actor: Any
    queue: deque[Any]  # object refs of the chunks sent, oldest first
    deaths: int = 0
    state: str = "ready"  # ready | probing (restarting: a ping is out or due at probe_at) | dead
    probe_at: float = 0.0
    down_since: float = 0.0


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
        self.started = connect(self.ray, opts)
        try:
            self.n, self.g, self.c = plan_resources(spec, opts, self.ray.cluster_resources())
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if self.started:
            self.ray.shutdown()
            self.started = False

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
        stats: Any,
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
        workers = [_Worker(k, actor_cls.remote(self.spec, plan_path, env), deque()) for k in range(n)]
        try:
            bar.phase(f"executing on {n} workers")
            record = _drive(ray, RayActorError, RayError, opts, workers, chunks, plan_path, plan_hash, ident,
                            out_dir, bar, stats, manifest)  # fmt: skip
        finally:
            for w in workers:
                try:
                    ray.kill(w.actor)
                except Exception:
                    pass
        check_complete(out_dir, instances)  # the whole directory, parts of earlier runs included
        manifest.execution = {
            "workers": n,
            "gpus_per_worker": self.g,
            "cpus_per_worker": self.c,
            "ray_address": opts.address or "local",
            "chunk_size": size,
            **record,
        }


def _drive(
    ray: Any,
    actor_error: type[BaseException],
    ray_error: type[BaseException],
    opts: PoolOptions,
    workers: list[_Worker],
    chunks: dict[int, Chunk],
    plan_path: str,
    plan_hash: str,
    ident: dict[str, Any],
    out_dir: Path,
    bar: Progress,
    stats: Any,
    manifest: RunManifest,
) -> dict[str, Any]:
    """The driver's loop: keep every ready worker ``DEPTH`` chunks deep, commit answers as they come, and
    when a worker dies put its chunks back (charging the one it was running) and ping it until Ray has
    restarted it."""
    queue: deque[int] = deque(sorted(chunks))
    attempts: dict[int, int] = {}
    sent: dict[Any, tuple[_Worker, int]] = {}  # chunk -1: a ping
    committed: set[int] = set()
    by_node: dict[str, int] = {}
    retries = 0
    busy_ms = 0
    load_ms = 0
    last_death = ""
    want = {k: ident.get(k) for k in CONTENT_KEYS}
    t0 = time.monotonic()
    # per worker: chunks, engine time, and when it was first ready (its first answer less that answer's
    # engine time), in seconds since dispatch began (driver clock)
    detail: dict[int, dict[str, Any]] = {}

    def fail(index: int, cause: str) -> None:
        nonlocal retries
        attempts[index] = attempts.get(index, 0) + 1
        if attempts[index] >= opts.max_attempts:
            raise ExecuteError(
                f"{plan_path}: {chunks[index].describe()} failed {attempts[index]} times, last: {cause}; "
                f"the {len(committed)} chunks committed in this run are kept in {out_dir}, rerun to resume"
            )
        retries += 1

    def died(w: _Worker, cause: str) -> None:
        """A death seen on one of ``w``'s calls: take all its chunks back, charge the oldest, probe it."""
        nonlocal last_death
        lost = [sent.pop(r)[1] for r in w.queue if r in sent]
        w.queue.clear()
        w.deaths += 1
        last_death = f"worker {w.index} died ({cause})"
        now = time.monotonic()
        w.state, w.probe_at, w.down_since = "probing", now, now
        if w.deaths > MAX_RESTARTS:
            w.state = "dead"
        queue.extendleft(sorted((c for c in lost if c >= 0), reverse=True))
        if lost and lost[0] >= 0:
            fail(lost[0], last_death)

    while queue or any(c >= 0 for _, c in sent.values()):
        now = time.monotonic()
        for w in workers:
            if w.state == "probing" and not w.queue and now >= w.probe_at:
                if now - w.down_since > RESTART_TIMEOUT_S:
                    w.state = "dead"
                    continue
                ref = w.actor.ping.remote()
                sent[ref] = (w, -1)
                w.queue.append(ref)
            while w.state == "ready" and len(w.queue) < DEPTH and queue:
                index = queue.popleft()
                ref = w.actor.run_chunk.remote(index, list(chunks[index].instances))
                sent[ref] = (w, index)
                w.queue.append(ref)
        if all(w.state == "dead" for w in workers):
            raise ExecuteError(
                f"{plan_path}: every worker died (each restarted up to {MAX_RESTARTS} times), last: "
                f"{last_death}; the {len(committed)} chunks committed in this run are kept in {out_dir}, rerun "
                f"to resume"
            )
        if not sent:
            time.sleep(PROBE_EVERY_S)
            continue
        ready, _ = ray.wait(list(sent), num_returns=1, timeout=PROBE_EVERY_S)
        for ref in ready:
            if ref not in sent:
                continue
            w, index = sent[ref]
            try:
                res = ray.get(ref)
            except actor_error as e:
                if index < 0 and type(e).__name__ == "ActorUnavailableError":  # still restarting
                    sent.pop(ref)
                    w.queue.remove(ref)
                    w.probe_at = time.monotonic() + PROBE_EVERY_S
                    continue
                died(w, f"{type(e).__name__}: {_first_line(e)}")
                continue
            except ray_error as e:
                sent.pop(ref)
                w.queue.remove(ref)
                if index < 0:
                    w.probe_at = time.monotonic() + PROBE_EVERY_S
                    continue
                queue.appendleft(index)
                fail(index, f"{type(e).__name__}: {_first_line(e)}")
                continue
            sent.pop(ref)
            w.queue.remove(ref)
            if index < 0:
                w.state = "ready"
                continue
            if "error" in res:
                raise ExecuteError(res["error"])
            have = {k: res["ident"].get(k) for k in CONTENT_KEYS}
            if have != want:
                k = next(k for k in CONTENT_KEYS if have[k] != want[k])
                raise ExecuteError(
                    f"worker on {res['host']}: its model's {k} is {str(have[k])[:12]}, the driver's "
                    f"{str(want[k])[:12]}; every node needs the same model files"
                )
            if res["versions"] != manifest.versions:
                k = next(k for k in {**manifest.versions, **res["versions"]} if
                         res["versions"].get(k) != manifest.versions.get(k))  # fmt: skip
                raise ExecuteError(
                    f"worker on {res['host']}: {k} {res['versions'].get(k)}, the driver has "
                    f"{manifest.versions.get(k)}; every node needs the same versions"
                )
            what = f"{plan_path}: {chunks[index].describe()}"
            rows = check_rows(res["parquet"], chunks[index].instances, what)
            commit_chunk(out_dir, plan_hash, index, res["parquet"], rows)
            if not committed:
                manifest.engine_args = res["engine_args"]
            committed.add(index)
            bar.advance(rows, int(res["tokens"]))
            for k, v in res["stats"].items():
                setattr(stats, k, getattr(stats, k) + int(v))
            busy_ms += int(res["busy_ms"])
            load_ms = max(load_ms, int(res["load_ms"]))
            by_node[res["node"]] = by_node.get(res["node"], 0) + 1
            arrived = time.monotonic() - t0
            d = detail.setdefault(w.index, {"worker": w.index, "node": res["node"], "chunks": 0, "busy_s": 0.0,
                                            "ready_s": arrived})  # fmt: skip
            d["chunks"] += 1
            d["busy_s"] = round(d["busy_s"] + res["busy_ms"] / 1000, 3)
            d["ready_s"] = round(min(d["ready_s"], arrived - res["busy_ms"] / 1000), 3)
    stats.load_ms = load_ms
    return {
        "chunks": len(committed),
        "chunks_by_node": by_node,
        "retries": retries,
        "worker_busy_ms": busy_ms,
        "span_s": round(time.monotonic() - t0, 3),
        "per_worker": [detail[k] for k in sorted(detail)],
    }
