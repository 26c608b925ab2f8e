"""The pool driver's dispatch loop (executor/pool/dispatch.py) against a simulated Ray: actors run their calls
in order, one per step, each reply arriving a step later; a "killer" chunk kills the actor that starts it,
and the death also loses the reply of the chunk that worker had just finished (still in flight when the
process went), as Ray reports it: ``ActorUnavailableError ... may or may not have been executed``. The loop
must blame the chunk that kills, never a neighbour whose answer died with the worker, and commit every other
chunk exactly once. The real-Ray version of these runs is tests/executor/test_distributed.py.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from lmeval.executor.errors import ExecuteError
from lmeval.executor.jobloop import RunStats
from lmeval.executor.options import PoolOptions
from lmeval.executor.pool import dispatch
from lmeval.executor.pool.chunks import Chunk
from lmeval.executor.pool.dispatch import DispatchJob, Worker


class ActorDied(Exception):
    pass


class ActorUnavailableError(ActorDied):  # the loop tells a restarting worker's ping by this name
    pass


class CallFailed(Exception):
    pass


@dataclass(eq=False)  # refs are dict keys by identity, as Ray's are
class Ref:
    actor: FakeActor
    chunk: int  # -1: a ping
    state: str = "pending"  # pending | done | error
    value: Any = None


@dataclass(eq=False)
class FakeActor:
    killers: set[int]
    once: bool = False  # a killer kills only the first time
    alive: bool = True
    calls: deque[Ref] = field(default_factory=deque)
    in_flight: Ref | None = None  # run, its reply not yet arrived

    @property
    def run_chunk(self) -> Any:
        return _Method(self, lambda index, _instances: index)

    @property
    def ping(self) -> Any:
        return _Method(self, lambda: -1)

    def step(self) -> None:
        """Run the next call; the previous call's reply arrives now, unless this call kills the worker
        first (the reply was still in flight when the process went)."""
        head = self.calls[0] if self.alive and self.calls else None
        if head is not None and head.chunk in self.killers:
            if self.once:
                self.killers.discard(head.chunk)
            for r in [*self.calls, *([self.in_flight] if self.in_flight else [])]:
                r.state, r.value = "error", ActorDied("The actor died unexpectedly; socket closed")
            self.calls.clear()
            self.in_flight, self.alive = None, False
            return
        if self.in_flight is not None:
            self.in_flight.state = "done"
            self.in_flight = None
        if head is not None:
            self.calls.popleft()
            head.value = {"chunk": head.chunk}
            self.in_flight = head


@dataclass
class _Method:
    actor: FakeActor
    make: Any

    def remote(self, *args: Any) -> Ref:
        ref = Ref(self.actor, self.make(*args))
        if not self.actor.alive:  # the first call after a death finds it restarting; the next runs
            ref.state, ref.value = "error", ActorUnavailableError("restarting")
            self.actor.alive = True
        else:
            self.actor.calls.append(ref)
        return ref


class FakeRay:
    def __init__(self, actors: list[FakeActor]) -> None:
        self.actors = actors

    def wait(self, refs: list[Ref], num_returns: int, timeout: float) -> tuple[list[Ref], list[Ref]]:
        ready = [r for r in refs if r.state != "pending"]
        while not ready:
            for a in self.actors:
                a.step()
            ready = [r for r in refs if r.state != "pending"]
        return ready[:num_returns], [r for r in refs if r not in ready[:num_returns]]

    def get(self, ref: Ref) -> Any:
        if ref.state == "error":
            raise ref.value
        return ref.value


def _run(actors: list[FakeActor], n_chunks: int, monkeypatch: pytest.MonkeyPatch) -> tuple[list[int], dict[str, Any]]:
    committed: list[int] = []
    monkeypatch.setattr(dispatch._Loop, "_check_answer", lambda self, res: None)
    monkeypatch.setattr(
        dispatch._Loop, "_commit", lambda self, w, index, res: (committed.append(index), self.committed.add(index))
    )
    monkeypatch.setattr(dispatch, "PROBE_EVERY_S", 0.0)
    job = DispatchJob(
        ray=FakeRay(actors), actor_error=ActorDied, ray_error=CallFailed, opts=PoolOptions(),
        workers=[Worker(i, a, deque()) for i, a in enumerate(actors)],
        chunks={i: Chunk(i, ()) for i in range(n_chunks)}, plan_path="plan.msgpack", plan_hash="h", ident={},
        out_dir=Path("out"), bar=None, stats=RunStats(), manifest=None,  # type: ignore[arg-type]
    )  # fmt: skip
    return committed, dispatch.drive(job)


def test_the_killing_chunk_is_blamed_not_a_neighbour(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    actors = [FakeActor(killers={5}) for _ in range(2)]
    with pytest.raises(ExecuteError) as e:
        _run(actors, 12, monkeypatch)
    msg = str(e.value)
    assert msg.startswith("plan.msgpack: chunk 5 ") and "failed 3 times" in msg and "died" in msg, msg


def test_a_worker_killed_once_loses_and_repeats_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    killers = {5}  # shared: the first worker to start chunk 5 dies, the chunk then runs
    actors = [FakeActor(killers, once=True), FakeActor(killers, once=True)]
    committed, ex = _run(actors, 12, monkeypatch)
    assert sorted(committed) == list(range(12)) and len(committed) == 12
    assert ex["retries"] >= 2  # chunk 5 and the neighbour whose answer was lost were both sent again
