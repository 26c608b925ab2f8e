"""The driver's dispatch loop of a Ray pool run (executor/distributed.py sets it up): keep every ready worker
``DEPTH`` chunks deep, check and commit each answer as it arrives, and when a worker dies put its chunks back
(charging the one it was running) and ping it until Ray has restarted it.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lmeval.executor.chunks import Chunk
from lmeval.executor.chunkstore import check_rows, commit_chunk
from lmeval.executor.errors import ExecuteError, first_line
from lmeval.executor.jobloop import RunStats
from lmeval.executor.options import PoolOptions
from lmeval.executor.progress import Progress
from lmeval.plans.results import KernelPath, RunManifest

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


def drive(
    ray: Any,
    actor_error: type[BaseException],
    ray_error: type[BaseException],
    opts: PoolOptions,
    workers: list[Worker],
    chunks: dict[int, Chunk],
    plan_path: str,
    plan_hash: str,
    ident: dict[str, Any],
    out_dir: Path,
    bar: Progress,
    stats: RunStats,
    manifest: RunManifest,
) -> dict[str, Any]:
    """The driver's loop: keep every ready worker ``DEPTH`` chunks deep, commit answers as they come, and
    when a worker dies put its chunks back (charging the one it was running) and ping it until Ray has
    restarted it."""
    queue: deque[int] = deque(sorted(chunks))
    attempts: dict[int, int] = {}
    sent: dict[Any, tuple[Worker, int]] = {}  # chunk -1: a ping
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

    def died(w: Worker, cause: str) -> None:
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
                died(w, f"{type(e).__name__}: {first_line(e)}")
                continue
            except ray_error as e:
                sent.pop(ref)
                w.queue.remove(ref)
                if index < 0:
                    w.probe_at = time.monotonic() + PROBE_EVERY_S
                    continue
                queue.appendleft(index)
                fail(index, f"{type(e).__name__}: {first_line(e)}")
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
            manifest.numerics.add(KernelPath.from_dict(res["kernel_path"]))
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
