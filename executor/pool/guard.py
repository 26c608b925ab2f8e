"""A one-machine pool's Ray instance (``lmeval execute --workers N``) lives no longer than its driver.

Ray ties the processes the driver starts (GCS, raylet, monitor, dashboard) to it with the kernel's parent-death
signal, but not what the raylet starts: its agents and workers notice their raylet's death on their own, which
took over 10 s (45 s seen, issue #42) when the driver was SIGKILLed while they started up. So before the driver
starts Ray it marks its environment with a token of its own (``RUN_ENV``), which every process of the run
inherits, and starts this guard: a process in its own session (a SIGKILL of the driver's process group spares
it) whose stdin is a pipe only the driver holds. When the pipe closes (the driver closed it after
``ray.shutdown``, or the driver died), the guard SIGKILLs every process whose environment carries the token
until none is left (at most ``REAP_S`` seconds), and exits.

Linux only (``/proc``); elsewhere no guard starts. This file runs as a script (``python guard.py TOKEN``) and
imports nothing but the standard library, so it starts in milliseconds.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from typing import IO

RUN_ENV = "LMEVAL_POOL_RUN"
REAP_S = 8.0  # the guard gives up after this long (a process it cannot kill is not its to kill)
QUIET_SCANS = 3  # scans in a row that find nothing before the guard exits (a worker may be starting)
SCAN_EVERY_S = 0.1


def marked(token: str, skip: frozenset[int] = frozenset()) -> list[int]:
    """The pids whose environment (as they were started) carries ``RUN_ENV=token``."""
    needle = f"{RUN_ENV}={token}".encode()
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in skip:
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                env = f.read()
        except OSError:  # gone, or another user's
            continue
        if needle in env.split(b"\0"):
            pids.append(int(name))
    return pids


def reap_run(token: str, skip: frozenset[int] = frozenset(), limit_s: float = REAP_S) -> int:
    """SIGKILL every process marked with ``token`` until ``QUIET_SCANS`` scans in a row find none; the number
    of processes killed."""
    deadline = time.monotonic() + limit_s
    killed: set[int] = set()
    quiet = 0
    while quiet < QUIET_SCANS and time.monotonic() < deadline:
        pids = marked(token, skip)
        quiet = 0 if pids else quiet + 1
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            except OSError:
                pass
        time.sleep(SCAN_EVERY_S)
    return len(killed)


class Guard:
    """The driver's side: the token set in its environment and the guard process holding the pipe's other end."""

    def __init__(self, proc: subprocess.Popen[bytes], token: str) -> None:
        self.proc = proc
        self.token = token

    def close(self) -> None:
        """After ``ray.shutdown``: the guard kills what is left of the run, and the environment loses the mark."""
        if os.environ.get(RUN_ENV) == self.token:
            del os.environ[RUN_ENV]
        pipe: IO[bytes] | None = self.proc.stdin
        if pipe is not None:
            pipe.close()
        try:
            self.proc.wait(timeout=REAP_S + 2)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def start_guard() -> Guard | None:
    """Mark this process's environment for the processes it is about to start and start their guard; None
    where there is no ``/proc``."""
    if not sys.platform.startswith("linux") or not os.path.isdir("/proc"):
        return None
    token = uuid.uuid4().hex
    proc = subprocess.Popen(
        [sys.executable, "-S", os.path.abspath(__file__), token],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env={k: v for k, v in os.environ.items() if k != RUN_ENV},  # the guard is no process of the run
    )
    os.environ[RUN_ENV] = token
    return Guard(proc, token)


def _main(token: str) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C reaches the driver, which closes the pipe
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        while sys.stdin.buffer.read(65536):
            pass
    except OSError:
        pass
    reap_run(token, frozenset({os.getpid()}))


if __name__ == "__main__":
    _main(sys.argv[1])
