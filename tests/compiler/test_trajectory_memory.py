"""#64: what a trajectory file costs to compile is bounded. Each scored step's request holds the whole conversation
before it, so the plan grows with the square of a conversation's length: 200 messages of 20 KB or 1,500 of 10 KB
took ``lmeval compile`` past 3 GB. Past ``plans.limits.MAX_TRAJECTORY_CHARS`` (the scored steps' conversations,
in characters, in all) the file is refused in one line before anything is rendered; under it, token ids are made
in batches of bounded text (compiler/encode/plan_records.py), so a long conversation costs about its packed plan.

Measured structurally: the peak resident memory of the compile subprocess (``RUSAGE_CHILDREN`` of a wrapper that
runs only it), under a 4 GiB address-space cap so that the old behaviour fails (MemoryError) instead of taking the
machine. The bounds are generous (several times what the fixed code needs, well under what the old code took)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lmeval.plans import MAX_TRAJECTORY_CHARS
from tests.hostile.corpus import env

_WRAP = (
    "import json, resource, subprocess, sys\n"
    "def cap():\n"
    "    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))\n"
    "p = subprocess.run(sys.argv[1:], capture_output=True, text=True, preexec_fn=cap)\n"
    "print(json.dumps({'rc': p.returncode, 'stderr': p.stderr, "
    "'maxrss_mb': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))\n"
)


def _conversation(path: Path, n: int, size: int, seed: int = 0) -> Path:
    """One JSONL conversation of ``n`` messages (user and assistant in turn) of ``size`` characters of words."""
    rnd = random.Random(seed)
    msgs = []
    for i in range(n):
        words = " ".join(f"w{rnd.randrange(10000)}" for _ in range(size // 5 + 1))
        msgs.append({"role": "user" if i % 2 == 0 else "assistant", "content": words[:size]})
    path.write_text(json.dumps({"id": "long", "messages": msgs}) + "\n", encoding="utf-8")
    return path


def _compile(tmp: Path, traj: Path) -> dict[str, Any]:
    argv = [sys.executable, "-m", "lmeval", "compile", "+task=trajectory", f"task.trajectory.path={traj}",
            "run.apply_chat_template=true", "--no-cache", "--out", str(tmp / "out.msgpack")]  # fmt: skip
    p = subprocess.run(
        [sys.executable, "-c", _WRAP, *argv], env=env(), cwd=tmp, capture_output=True, text=True, timeout=300
    )
    assert p.returncode == 0, p.stderr
    out: dict[str, Any] = json.loads(p.stdout)
    return out


@pytest.mark.parametrize(("n", "size"), [(200, 20_000), (1500, 10_000)], ids=["200x20KB", "1500x10KB"])
def test_a_trajectory_past_the_limit_is_refused_before_it_is_built(tmp_path: Path, n: int, size: int) -> None:
    traj = _conversation(tmp_path / "long.jsonl", n, size)
    got = _compile(tmp_path, traj)
    assert got["rc"] == 2 and "Traceback" not in got["stderr"], got["stderr"][-2000:]
    (line,) = got["stderr"].splitlines()
    assert str(traj) in line and "trajectory 'long'" in line and f"{MAX_TRAJECTORY_CHARS} characters" in line, line
    assert not (tmp_path / "out.msgpack").exists()
    assert got["maxrss_mb"] < 600, got  # the file is 4 to 15 MB: refused having read it, nothing rendered


def test_a_long_trajectory_under_the_limit_compiles_in_bounded_memory(tmp_path: Path) -> None:
    # 80 messages of 10 KB: 40 scored steps whose conversations hold ~16M characters in all (the old code
    # peaked at ~1.5 GB, holding every step's token ids as Python lists; now ~0.5 GB)
    traj = _conversation(tmp_path / "long.jsonl", 80, 10_000)
    got = _compile(tmp_path, traj)
    assert got["rc"] == 0, got["stderr"][-2000:]
    assert (tmp_path / "out.msgpack").is_file()
    assert got["maxrss_mb"] < 1000, got


def test_batches_of_bounded_text_give_the_same_plan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Cutting the token batches by text (one doc a batch here) changes nothing in the plan, threaded or not."""
    from lmeval.compiler import compile_located
    from lmeval.compiler.encode import plan_records
    from lmeval.compiler.encode.tokenizer import ModelTokenizer
    from lmeval.compiler.parallel import BuildSettings

    traj = _conversation(tmp_path / "t.jsonl", 12, 2_000)
    ov = ["+task=trajectory", f"task.trajectory.path={traj}", "run.apply_chat_template=true"]
    plans, batches = [], []
    tokenize = plan_records._token_ids
    for chars, threaded in ((1 << 30, False), (1, False), (1, True)):
        calls: list[int] = []
        monkeypatch.setattr(plan_records, "_token_ids", lambda *a, c=calls: c.append(1) or tokenize(*a))
        monkeypatch.setattr(plan_records, "_CHUNK_CHARS", chars)
        monkeypatch.setattr(ModelTokenizer, "threaded", property(lambda self, t=threaded: t))
        c = compile_located(ov, BuildSettings(cache=False, workers=1))
        plans.append(c.write(str(tmp_path / f"p{chars}{threaded}.msgpack")).read_bytes())
        batches.append(len(calls))
    assert plans[0] == plans[1] == plans[2]
    assert batches == [1, 6, 6]  # six scored steps: one batch, then one a step
