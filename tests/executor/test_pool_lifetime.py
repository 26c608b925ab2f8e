"""A one-machine pool (``lmeval execute --workers N``, its own local Ray) lives no longer than its driver: a
SIGKILLed driver leaves no process of its run (Ray's GCS, raylet, agents, workers) alive after 10 s.

A process "of the run" is any process that inherited the driver's environment: the test marks the driver's
environment with a token of its own and looks for it in every process's environment, so it does not depend
on how the pool cleans up."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest

from tests.executor.conftest import REPO

MARK = "LMEVAL_TEST_RUN_MARK"
SLOW = ["model.backend=fake", "model.engine.delay_s=0.004"]  # chunks take long enough to be killed mid-run


def _marked(token: str) -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter():
        try:
            if p.environ().get(MARK) == token:
                found.append(p)
        except (psutil.Error, OSError):
            continue  # gone, a zombie, or another user's
    return found


def _describe(procs: list[psutil.Process]) -> list[str]:
    out = []
    for p in procs:
        try:
            out.append(f"{p.pid} {' '.join(p.cmdline())[:120]}")
        except psutil.Error:
            out.append(f"{p.pid} (gone)")
    return out


AGENTS = ("dashboard/agent.py", "runtime_env/agent")  # what the raylet starts before any worker


def _agents_up(token: str) -> bool:
    text = " ".join(_describe(_marked(token)))
    return all(a in text for a in AGENTS)


# "agents": SIGKILLed the moment Ray's two agents are up, as Ray starts (they outlived the driver by 13-15 s,
# 3 runs of 3 before the guard); "chunk-part:2": mid-run, once two chunks are committed
@pytest.mark.parametrize("when", ["agents", "chunk-part:2"])
def test_a_sigkilled_driver_leaves_no_process_of_its_run_alive(when: str, mixed_plan: Path, tmp_path: Path) -> None:
    token = uuid.uuid4().hex
    env = {**os.environ, "PYTHONPATH": str(REPO), MARK: token}
    if when != "agents":
        env["LMEVAL_EXECUTOR_FAULT"] = when
    cmd = [sys.executable, "-m", "lmeval", "execute", str(mixed_plan), *SLOW, "--no-progress", "--workers", "2",
           "--chunk-size", "8", "--out", str(tmp_path / "r")]  # fmt: skip
    with open(tmp_path / "stderr", "wb") as err:
        driver = subprocess.Popen(cmd, env=env, cwd=REPO, stdin=subprocess.DEVNULL, stdout=err, stderr=err)
        try:
            if when == "agents":
                deadline = time.monotonic() + 240
                while not _agents_up(token) and driver.poll() is None and time.monotonic() < deadline:
                    time.sleep(0.05)
                assert driver.poll() is None, "the run ended before Ray's agents were seen"
                assert _agents_up(token), f"no Ray agents {AGENTS} seen: {_describe(_marked(token))}"
                driver.send_signal(signal.SIGKILL)
            rc = driver.wait(timeout=300)
        finally:
            driver.kill()
    assert rc == -signal.SIGKILL, (rc, (tmp_path / "stderr").read_text()[-3000:])
    deadline = time.monotonic() + 10
    left = _marked(token)
    while left and time.monotonic() < deadline:
        time.sleep(0.25)
        left = _marked(token)
    try:
        assert not left, f"alive 10 s after the driver's SIGKILL: {_describe(left)}"
    finally:
        for p in _marked(token):  # never leak a Ray instance into the rest of the session
            try:
                p.kill()
            except psutil.Error:
                pass
