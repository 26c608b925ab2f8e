"""Fault injection for the crash and concurrency tests. Unset, every hook does nothing.

``LMEVAL_EXECUTOR_FAULT=POINT:N`` SIGKILLs the process the N-th time it reaches ``POINT`` (``manifest``,
``part-tmp`` after a part's temporary file is written, ``part`` after it is renamed into place, ``locked``
once the results directory's lock is held, ``chunk-part`` after a worker's chunk is committed, ``worker-rows``
in a worker each time a chunk's rows arrive from the engine).

With ``LMEVAL_EXECUTOR_FAULT_ONCE=FILE`` the fault fires only while FILE does not exist (it is created first):
one kill across processes, e.g. a worker that dies once and runs normally after its restart. A multi-worker
driver hands ``LMEVAL_WORKER_FAULT`` (and the ``_ONCE`` file) to its workers as their
``LMEVAL_EXECUTOR_FAULT``.

``LMEVAL_EXECUTOR_PAUSE=POINT:FILE`` holds the process at ``POINT`` (``done-ids``: the done set of the
results directory has just been read, nothing is written yet) until ``FILE`` exists, after creating
``FILE.reached`` to say it got there (at most 300 s): a test widens that window at will and lets a second
writer run inside it.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

FAULT = "LMEVAL_EXECUTOR_FAULT"
ONCE = "LMEVAL_EXECUTOR_FAULT_ONCE"
WORKER_FAULT = "LMEVAL_WORKER_FAULT"

_counts: dict[str, int] = {}


def point(name: str) -> None:
    spec = os.environ.get(FAULT)
    if not spec:
        return
    want, _, n = spec.partition(":")
    if want != name:
        return
    _counts[name] = _counts.get(name, 0) + 1
    if _counts[name] == int(n or 1):
        once = os.environ.get(ONCE)
        if once:
            try:
                os.close(os.open(once, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                return
        os.kill(os.getpid(), signal.SIGKILL)


def pause(name: str) -> None:
    spec = os.environ.get("LMEVAL_EXECUTOR_PAUSE")
    if not spec:
        return
    want, _, gate = spec.partition(":")
    if want != name or not gate:
        return
    Path(gate + ".reached").touch()
    deadline = time.monotonic() + 300
    while not os.path.exists(gate) and time.monotonic() < deadline:
        time.sleep(0.05)


def worker_env() -> dict[str, str]:
    """The fault settings a driver passes to its workers."""
    out: dict[str, str] = {}
    if os.environ.get(WORKER_FAULT):
        out[FAULT] = os.environ[WORKER_FAULT]
        if os.environ.get(ONCE):
            out[ONCE] = os.environ[ONCE]
    return out
