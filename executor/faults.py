"""Fault injection for the crash and concurrency tests. Unset, both hooks do nothing.

``LMEVAL_EXECUTOR_FAULT=POINT:N`` SIGKILLs the process the N-th time it reaches ``POINT`` (``manifest``,
``part-tmp`` after a part's temporary file is written, ``part`` after it is renamed into place, ``locked``
once the results directory's lock is held).

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

_counts: dict[str, int] = {}


def point(name: str) -> None:
    spec = os.environ.get("LMEVAL_EXECUTOR_FAULT")
    if not spec:
        return
    want, _, n = spec.partition(":")
    if want != name:
        return
    _counts[name] = _counts.get(name, 0) + 1
    if _counts[name] == int(n or 1):
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
