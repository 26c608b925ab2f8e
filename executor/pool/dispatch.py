"""The driver's dispatch loop of a Ray pool run (executor/pool/ sets it up): keep every ready worker
``DEPTH`` chunks deep, check and commit each answer as it arrives, and when a worker dies put its chunks back
and ping it until Ray has restarted it.

Which chunk killed a worker is known only when it held one: a death with several chunks queued (or one whose
answer was lost in flight as the worker died) charges none of them; they become suspects, each sent next to a
worker holding nothing else, so the next death is attributed exactly. Charging the oldest instead blamed a
chunk that had finished but whose answer died with the worker, and stopped the run on the wrong chunk.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lmeval.executor.errors import ExecuteError, first_line
from lmeval.executor.jobloop import RunStats
from lmeval.executor.options import PoolOptions
from lmeval.executor.pool.chunks import Chunk
from lmeval.executor.pool.chunkstore import check_chunk_rows, commit_chunk
from lmeval.executor.progress import Progress
from lmeval.plans import KernelPath, RunManifest

MAX_RESTARTS = 3  # Ray restarts a dead worker (reloading its engine) at most this often
DEPTH = 2  # chunks queued per worker
PROBE_EVERY_S = 0.2  # how often a restarting worker is pinged (and the driver's longest wait)
RESTART_TIMEOUT_S = 900.0  # a worker not back this long after a death counts as dead
CONTENT_KEYS = ("tokenizer_hash", "config_hash")  # what every worker's model must share with the driver's


@dataclass
class Worker:
    index: int
    actor: Any
    queue: deque[Any]  # object refs of the chunks sent, oldest first
    deaths: int = 0
    state: str = "ready"  # ready | probing (restarting: a ping is out or due at probe_at) | dead
    probe_at: float = 0.0
    down_since: float = 0.0


@dataclass
class DispatchJob:
    """What one dispatch loop works on: Ray's handles, the pool's options and workers, the chunks to run,
    and where their answers go."""

    ray: Any  # the ray module
    actor_error: type[BaseException]  # ray.exceptions.RayActorError: the worker died
    ray_error: type[BaseException]  # ray.exceptions.RayError: the call failed, the worker lives
    opts: PoolOptions
    workers: list[Worker]
    chunks: dict[int, Chunk]
    plan_path: str
    plan_hash: str
    ident: dict[str, Any]  # the driver's model identity (CONTENT_KEYS must match every worker's)
    out_dir: Path
    bar: Progress
    stats: RunStats
    manifest: RunManifest


def drive(job: DispatchJob) -> dict[str, Any]:
    """The driver's loop: keep every ready worker ``DEPTH`` chunks deep, commit answers as they come, and
    when a worker dies put its chunks back (charging the one it was running) and ping it until Ray has
    restarted it. Returns the manifest's ``execution`` figures of the loop."""
    return _Loop(job).run()


class _Loop:
    def __init__(self, job: DispatchJob) -> None:
        self.job = job
        self.queue: deque[int] = deque(sorted(job.chunks))
        self.attempts: dict[int, int] = {}
        self.suspects: set[int] = set()  # in a dead worker's queue with others: each next runs alone
        self.sent: dict[Any, tuple[Worker, int]] = {}  # chunk -1: a ping
        self.committed: set[int] = set()
        self.by_node: dict[str, int] = {}
        self.retries = 0
        self.busy_ms = 0
        self.load_ms = 0
        self.last_death = ""
        self.want = {k: job.ident.get(k) for k in CONTENT_KEYS}
        self.t0 = time.monotonic()
        # per worker: chunks, engine time, and when it was first ready (its first answer less that answer's
        # engine time), in seconds since dispatch began (driver clock)
        self.detail: dict[int, dict[str, Any]] = {}

    def run(self) -> dict[str, Any]:
        job = self.job
        while self.queue or any(c >= 0 for _, c in self.sent.values()):
            self._send()
            if all(w.state == "dead" for w in job.workers):
                raise ExecuteError(
                    f"{job.plan_path}: every worker died (each restarted up to {MAX_RESTARTS} times), last: "
                    f"{self.last_death}; the {len(self.committed)} chunks committed in this run are kept in "
                    f"{job.out_dir}, rerun to resume"
                )
            if not self.sent:
                time.sleep(PROBE_EVERY_S)
                continue
            ready, _ = job.ray.wait(list(self.sent), num_returns=1, timeout=PROBE_EVERY_S)
            for ref in ready:
                if ref in self.sent:
                    self._receive(ref)
        job.stats.load_ms = self.load_ms
        return {
            "chunks": len(self.committed),
            "chunks_by_node": self.by_node,
            "retries": self.retries,
            "worker_busy_ms": self.busy_ms,
            "span_s": round(time.monotonic() - self.t0, 3),
            "per_worker": [self.detail[k] for k in sorted(self.detail)],
        }

    def _send(self) -> None:
        """Ping the workers that are due a ping; fill every ready worker's queue."""
        now = time.monotonic()
        for w in self.job.workers:
            if w.state == "probing" and not w.queue and now >= w.probe_at:
                if now - w.down_since > RESTART_TIMEOUT_S:
                    w.state = "dead"
                    continue
                self._call(w, w.actor.ping.remote(), -1)
            while w.state == "ready" and len(w.queue) < DEPTH and self.queue:
                if self._alone(w) or (self.queue[0] in self.suspects and w.queue):
                    break  # a suspect runs on a worker holding nothing else
                index = self.queue.popleft()
                self._call(w, w.actor.run_chunk.remote(index, list(self.job.chunks[index].instances)), index)

    def _alone(self, w: Worker) -> bool:
        """Whether ``w`` is running a suspect (so takes nothing more)."""
        return any(self.sent[r][1] in self.suspects for r in w.queue)

    def _call(self, w: Worker, ref: Any, index: int) -> None:
        self.sent[ref] = (w, index)
        w.queue.append(ref)

    def _done(self, ref: Any) -> None:
        w, _ = self.sent.pop(ref)
        w.queue.remove(ref)

    def _receive(self, ref: Any) -> None:
        w, index = self.sent[ref]
        try:
            res = self.job.ray.get(ref)
        except self.job.actor_error as e:
            if index < 0 and type(e).__name__ == "ActorUnavailableError":  # still restarting
                self._done(ref)
                w.probe_at = time.monotonic() + PROBE_EVERY_S
            else:
                self._died(w, f"{type(e).__name__}: {first_line(e)}")
            return
        except self.job.ray_error as e:
            self._done(ref)
            if index < 0:
                w.probe_at = time.monotonic() + PROBE_EVERY_S
            else:
                self.queue.appendleft(index)
                self.retries += 1
                self._fail(index, f"{type(e).__name__}: {first_line(e)}")
            return
        self._done(ref)
        if index < 0:
            w.state = "ready"
            return
        self._check_answer(res)
        self._commit(w, index, res)

    def _fail(self, index: int, cause: str) -> None:
        self.attempts[index] = self.attempts.get(index, 0) + 1
        if self.attempts[index] >= self.job.opts.max_attempts:
            raise ExecuteError(
                f"{self.job.plan_path}: {self.job.chunks[index].describe()} failed {self.attempts[index]} times, "
                f"last: {cause}; the {len(self.committed)} chunks committed in this run are kept in "
                f"{self.job.out_dir}, rerun to resume"
            )

    def _died(self, w: Worker, cause: str) -> None:
        """A death seen on one of ``w``'s calls: take all its chunks back and probe it; charge the chunk only
        when it was the worker's one chunk, else make them all suspects (each to run alone next)."""
        lost = [c for c in (self.sent.pop(r)[1] for r in w.queue if r in self.sent) if c >= 0]
        w.queue.clear()
        w.deaths += 1
        self.last_death = f"worker {w.index} died ({cause})"
        now = time.monotonic()
        w.state, w.probe_at, w.down_since = "probing", now, now
        if w.deaths > MAX_RESTARTS:
            w.state = "dead"
        self.queue.extendleft(sorted(lost, reverse=True))
        self.retries += len(lost)
        if len(lost) == 1:
            self._fail(lost[0], self.last_death)
        else:
            self.suspects.update(lost)

    def _check_answer(self, res: dict[str, Any]) -> None:
        """The worker's error, or a model or versions that differ from the driver's: a one-line error."""
        if "error" in res:
            raise ExecuteError(res["error"])
        have = {k: res["ident"].get(k) for k in CONTENT_KEYS}
        if have != self.want:
            k = next(k for k in CONTENT_KEYS if have[k] != self.want[k])
            raise ExecuteError(
                f"worker on {res['host']}: its model's {k} is {str(have[k])[:12]}, the driver's "
                f"{str(self.want[k])[:12]}; every node needs the same model files"
            )
        mine = self.job.manifest.versions
        if res["versions"] != mine:
            k = next(k for k in {**mine, **res["versions"]} if res["versions"].get(k) != mine.get(k))
            raise ExecuteError(
                f"worker on {res['host']}: {k} {res['versions'].get(k)}, the driver has {mine.get(k)}; "
                f"every node needs the same versions"
            )

    def _commit(self, w: Worker, index: int, res: dict[str, Any]) -> None:
        job = self.job
        rows = check_chunk_rows(
            res["parquet"], job.chunks[index].instances, f"{job.plan_path}: {job.chunks[index].describe()}"
        )
        commit_chunk(job.out_dir, job.plan_hash, index, res["parquet"], rows)
        if not self.committed:
            job.manifest.engine_args = res["engine_args"]
        job.manifest.numerics.add(KernelPath.from_dict(res["kernel_path"]))
        self.committed.add(index)
        job.bar.advance(rows, int(res["tokens"]))
        for k, v in res["stats"].items():
            setattr(job.stats, k, getattr(job.stats, k) + int(v))
        self.busy_ms += int(res["busy_ms"])
        self.load_ms = max(self.load_ms, int(res["load_ms"]))
        self.by_node[res["node"]] = self.by_node.get(res["node"], 0) + 1
        arrived = time.monotonic() - self.t0
        d = self.detail.setdefault(
            w.index, {"worker": w.index, "node": res["node"], "chunks": 0, "busy_s": 0.0, "ready_s": arrived}
        )
        d["chunks"] += 1
        d["busy_s"] = round(d["busy_s"] + res["busy_ms"] / 1000, 3)
        d["ready_s"] = round(min(d["ready_s"], arrived - res["busy_ms"] / 1000), 3)
