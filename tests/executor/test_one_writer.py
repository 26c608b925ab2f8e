"""One writer per results directory: the lock is taken before the directory's done set is read.

Two ``lmeval execute`` processes on one ``--out``: the first is held (``LMEVAL_EXECUTOR_PAUSE``, see
executor/faults.py) right after it read the done set, the moment before it writes; the second runs to the
end inside that window. It must exit with one line and write nothing; the first then finishes. The
directory never holds more rows than the plan has Instances. (With the lock taken after the done set was
read, as before, the second run wrote every row and the first wrote them all again.)
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lmeval.plans.plan import read_header
from lmeval.plans.results import part_files, read_manifest, read_results
from tests.executor.conftest import REPO, run_cli

FAKE = ["model.backend=fake"]


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), **extra}
    env.pop("LMEVAL_EXECUTOR_FAULT", None)
    return env


def _wait_for(path: Path, proc: subprocess.Popen[str], timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"the held run ended before reaching the hook: rc {proc.returncode}\n{out}\n{err}")
        assert time.monotonic() < deadline, "the held run never reached the hook"
        time.sleep(0.05)


def _held_writer(args: list[str], gate: Path) -> subprocess.Popen[str]:
    """An ``lmeval execute`` that pauses (holding the lock) once it has read the done set, until ``gate`` exists."""
    return subprocess.Popen(
        [sys.executable, "-m", "lmeval", *args],
        env=_env(LMEVAL_EXECUTOR_PAUSE=f"done-ids:{gate}"),
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize("start", ["fresh", "resume"])
def test_two_executes_on_one_out_never_write_more_rows_than_instances(
    start: str, mixed_plan: Path, tmp_path: Path
) -> None:
    out = tmp_path / "r"
    args = ["execute", str(mixed_plan), *FAKE, "--no-progress", "--part-size", "7", "--out", str(out)]
    n = read_header(mixed_plan).n_instances
    if start == "resume":  # a killed run left some parts: both writers see the same unfinished directory
        r = run_cli(*args, env={"LMEVAL_EXECUTOR_FAULT": "part:3"})
        assert r.returncode < 0
        assert 0 < sum(1 for _ in part_files(out)) < n
    gate = tmp_path / "gate"
    held = _held_writer(args, gate)
    try:
        _wait_for(Path(f"{gate}.reached"), held)  # the held run has read the done set and writes nothing yet
        second = subprocess.run(
            [sys.executable, "-m", "lmeval", *args], env=_env(), cwd=REPO, capture_output=True, text=True, timeout=300
        )
        assert second.returncode == 2, second.stderr
        lines = second.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0] == (
            f"lmeval execute: error: {out}: another lmeval execute is writing to this directory; wait for it to "
            f"finish (rerunning then resumes) or choose another --out"
        )
        gate.touch()
        _, err = held.communicate(timeout=300)
        assert held.returncode == 0, err
    finally:
        if held.poll() is None:
            held.kill()
            held.wait()
    df = read_results(out)  # raises on an instance id that occurs twice
    assert df.height == n and df["instance_id"].n_unique() == n
    assert read_manifest(out).finished
    # a writer that comes after the first has finished resumes: nothing left to do, nothing written
    before = sorted(p.name for p in part_files(out))
    r = run_cli(*args)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in part_files(out)) == before


def test_a_refused_run_leaves_no_directory_behind(mixed_plan: Path, tmp_path: Path) -> None:
    """A refused run (here: --reuse of results of another model) creates no directory, lock file or parent."""
    first = tmp_path / "first"
    r = run_cli("execute", str(mixed_plan), *FAKE, "--no-progress", "--out", str(first))
    assert r.returncode == 0, r.stderr
    out = tmp_path / "a" / "b" / "new"
    r = run_cli("execute", str(mixed_plan), *FAKE, "model.max_model_len=333", "--reuse", str(first), "--out", str(out))
    assert r.returncode == 2 and "max_model_len" in r.stderr
    assert not (tmp_path / "a").exists()


def test_deleting_the_lock_file_does_not_let_a_second_writer_in(mixed_plan: Path, tmp_path: Path) -> None:
    """The lock is an flock on the results directory's own descriptor too: ``rm DIR/.lock`` while a run holds
    it (then a second execute creates a new ``.lock`` and locks that) still leaves the second one out."""
    out = tmp_path / "r"
    args = ["execute", str(mixed_plan), *FAKE, "--no-progress", "--part-size", "7", "--out", str(out)]
    n = read_header(mixed_plan).n_instances
    gate = tmp_path / "gate"
    held = _held_writer(args, gate)
    try:
        _wait_for(Path(f"{gate}.reached"), held)
        (out / ".lock").unlink()
        second = subprocess.run(
            [sys.executable, "-m", "lmeval", *args], env=_env(), cwd=REPO, capture_output=True, text=True, timeout=300
        )
        assert second.returncode == 2, second.stderr
        assert "another lmeval execute is writing to this directory" in second.stderr
        gate.touch()
        _, err = held.communicate(timeout=300)
        assert held.returncode == 0, err
    finally:
        if held.poll() is None:
            held.kill()
            held.wait()
    df = read_results(out)
    assert df.height == n and df["instance_id"].n_unique() == n
