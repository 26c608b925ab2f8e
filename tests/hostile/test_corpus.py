"""Hostile input, one test per case (``tests/hostile/cases.py``): a one-line error, exit status 2 (1 for a
line ``lmeval validate`` reports), no traceback, nothing already written lost, no silent acceptance.

The commands run as subprocesses (``python -m lmeval``), four at a time, once per session; each test checks
its own outcome. Cases that need a read-only or full file system mount one in a private mount namespace
(root; CI runs as root).
"""

from __future__ import annotations

import importlib
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.hostile.corpus import CASES, DATA, FAKE, IS_ROOT, MINI_ROWS, MINI_YAML, PY, Base, Case, env, snapshot

# every ``cases*.py`` module beside this file registers its cases on import (a new family is one new file)
for _module in sorted(Path(__file__).parent.glob("cases*.py")):
    importlib.import_module(f"tests.hostile.{_module.stem}")

FAMILIES = sorted({f for f, _ in CASES.values()})


@dataclass
class Outcome:
    case: Case
    proc: subprocess.CompletedProcess[str] | None
    before: dict[Path, dict[str, bytes]]
    error: str = ""
    seconds: float = 0.0


def _base(root: Path) -> Base:
    import json

    plan, results = root / "arith.msgpack", root / "results"
    tasks, data = root / "tasks", root / "data"
    tasks.mkdir()
    (tasks / "mini.yaml").write_text(MINI_YAML, encoding="utf-8")
    (data / "mini").mkdir(parents=True)
    (data / "mini" / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in MINI_ROWS), encoding="utf-8")
    for argv in (
        ["compile", "+task=arith", "run.limit=4", f"run.data_dir={DATA}", "--out", str(plan)],
        ["execute", str(plan), FAKE, "--out", str(results), "--no-progress"],
    ):
        p = subprocess.run(
            [PY, "-m", "lmeval", *argv], env=env(), cwd=root, capture_output=True, text=True, timeout=300
        )
        assert p.returncode == 0, p.stderr
    return Base(plan=plan, results=results, tasks=tasks, data=data)


def _run(name: str, root: Path, base: Base) -> Outcome:
    tmp = root / name
    tmp.mkdir()
    c = CASES[name][1](tmp, base)
    before = {k: snapshot(k) for k in c.keep}
    if c.shell is not None:
        if not IS_ROOT or shutil.which("unshare") is None:
            return Outcome(c, None, before, "needs root and unshare for a private mount namespace")
        cmd = ["unshare", "-m", "sh", "-c", c.shell]
    else:
        cmd = [PY, "-m", "lmeval", *c.argv]
    t0 = time.monotonic()
    try:
        proc = subprocess.run(cmd, env=env(), cwd=tmp, capture_output=True, text=True, timeout=c.timeout)
    except subprocess.TimeoutExpired:
        return Outcome(c, None, before, f"did not return within {c.timeout} s", time.monotonic() - t0)
    return Outcome(c, proc, before, seconds=time.monotonic() - t0)


@pytest.fixture(scope="session")
def outcomes(request: pytest.FixtureRequest) -> Iterator[dict[str, Outcome]]:
    calls = [getattr(i, "callspec", None) for i in request.session.items]
    selected = {c.params["name"] for c in calls if c is not None and "name" in c.params}
    root = Path(tempfile.mkdtemp(prefix="lmeval-hostile-"))
    try:
        base = _base(root)
        with ThreadPoolExecutor(max_workers=4) as pool:  # only the cases this session runs (-k)
            futures = {n: pool.submit(_run, n, root, base) for n in CASES if n in selected}
            yield {n: f.result() for n, f in futures.items()}
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_corpus_is_large_and_spans_every_family() -> None:
    assert len(CASES) >= 60
    assert set(FAMILIES) >= {"jinja", "yaml", "data", "spec", "overrides", "plans", "results", "forged", "parts"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_input(name: str, outcomes: dict[str, Outcome]) -> None:
    out = outcomes[name]
    assert out.proc is not None, out.error
    c, p = out.case, out.proc
    assert "Traceback" not in p.stderr and "Traceback" not in p.stdout, p.stderr[-3000:]
    assert p.returncode == c.rc, f"exit {p.returncode} (expected {c.rc}): {p.stdout[-800:]!r} {p.stderr[-800:]!r}"
    if c.rc == 2:
        lines = p.stderr.splitlines()
        assert len(lines) == 1, p.stderr[-3000:]
        text = lines[0]
        assert text.startswith("lmeval ") and ": error: " in text, text
    else:  # `lmeval validate` lists invalid lines on stdout, with a summary
        assert p.stderr == "", p.stderr
        text = p.stdout
    for needle in c.needles:
        assert needle in text, f"{needle!r} not in {text!r}"
    for path in c.absent:
        assert not path.exists(), f"{path} was written"
    for path, snap in out.before.items():
        if c.shell is not None and "tmpfs" in c.shell:  # full disk: compare what the tmpfs held afterwards
            after = snapshot(Path(str(path) + ".after"))
            assert {k: v for k, v in after.items() if k in snap} == snap, f"{path}: earlier files changed"
        else:
            assert snapshot(path) == snap, f"{path}: changed"
