"""Real models as users deploy them (issue #10), on a second checkpoint that is not ``model=tiny``: a Qwen2 with
2048 positions, bfloat16 weights and its own vocabulary (``tests/othermodel.py``).

- ``lmeval run`` on it with the vLLM backend (given as a directory) and the hf backend (given as a Hub id
  from an offline cache laid out by the test) agree per Instance within 1e-4;
- the engine settings are derived from the model and the platform (2048 positions, not tiny's 16384);
- 32-shot ARC contexts longer than the window are left-truncated and counted in one line, as lm-eval does;
- the Hub id compiles to the same Instances as the directory, with the commit recorded and no machine path;
- ``lmeval run +task=arith`` shows no third-party warning lines without ``-v`` (they go to engine.log).
"""

from __future__ import annotations

import json
import os
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from lmeval.plans.plan import read_plan
from lmeval.plans.results import read_manifest, read_results
from tests.bounds import VS_LM_EVAL
from tests.executor.conftest import run_cli
from tests.executor.plantools import data_dir
from tests.othermodel import HUB_ID, MAX_POSITIONS, build_other_model, lay_out_hub_cache

pytestmark = pytest.mark.vllm

TASK = ["+task=arc_easy", "run.limit=10", "run.num_fewshot=32"]

# what lmeval itself prints during `lmeval run` (everything else would be a library talking)
OWN_LINE = re.compile(
    r"^(plan: .*|pre-flight: .*|executed \d+ instances .*|[┏┃┡│└].*|/.*|results/.*"
    r"|(\x1b\[[0-9;]*m|\\x1b\[[0-9;]*m)?\s*Clustered stderr and 95% intervals\s*(\x1b\[[0-9;]*m|\\x1b\[[0-9;]*m)?"
    r"|run\.limit=\d+: scores of the first documents of each task only, .*)$"
)  # fmt: skip


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("other")
    ckpt = build_other_model(base / "qwenlet")
    sha = lay_out_hub_cache(ckpt, base / "hf")
    env = {"HF_HOME": str(base / "hf"), "HF_HUB_OFFLINE": "1"}
    return {"base": base, "ckpt": ckpt, "sha": sha, "env": env, "data": f"run.data_dir={data_dir()}"}


@pytest.fixture(scope="module")
def plans(models: dict[str, Any]) -> dict[str, Path]:
    base = models["base"]
    out = {"dir": base / "dir.msgpack", "hub": base / "hub.msgpack"}
    # the two compiles are independent child processes: both at once (CI has two cores)
    with ThreadPoolExecutor(2) as pool:
        jobs = [pool.submit(run_cli, "compile", *TASK, models["data"], f"model.path={path}", f"run.out={out[key]}",
                            env=models["env"], cwd=base)
                for key, path in (("dir", models["ckpt"]), ("hub", HUB_ID))]  # fmt: skip
    for job in jobs:
        assert job.result().returncode == 0, job.result().stderr
    return out


def test_hub_id_from_an_offline_cache_gives_the_same_plan(models: dict[str, Any], plans: dict[str, Path]) -> None:
    a, b = read_plan(plans["dir"]), read_plan(plans["hub"])
    assert a.instances == b.instances and a.docs == b.docs  # same prompts, token ids, request hashes
    assert [t.task_hash for t in a.header.tasks] == [t.task_hash for t in b.header.tasks]
    ma, mb = a.header.model, b.header.model
    assert (ma.tokenizer_hash, ma.config_hash) == (mb.tokenizer_hash, mb.config_hash)
    assert (mb.path, mb.revision, mb.tokenizer) == (HUB_ID, models["sha"], f"{HUB_ID}@{models['sha']}")
    assert (ma.path, ma.revision, ma.tokenizer, ma.name) == (None, None, "qwenlet", "qwenlet")
    for m in (ma, mb):  # the model identity holds no machine path
        assert str(models["base"]) not in json.dumps(m.to_dict())


def _truncated(plan: Path, max_len: int) -> tuple[int, int]:
    inst = read_plan(plan).instances
    n = sum(1 for i in inst if len(i.context_ids or []) + len(i.continuation_ids or []) > max_len - 1)
    return n, len(inst)


@pytest.fixture(scope="module")
def runs(models: dict[str, Any], plans: dict[str, Path]) -> dict[str, Any]:
    base = models["base"]
    out: dict[str, Any] = {}
    # the two runs are independent child processes (own output folders): both at once (CI has two cores)
    with ThreadPoolExecutor(2) as pool:
        for backend, path in (("vllm", str(models["ckpt"])), ("hf", HUB_ID)):
            res, plan = base / f"r-{backend}", base / f"{backend}.msgpack"
            job = pool.submit(run_cli, "run", *TASK, models["data"], f"model.path={path}", f"model.backend={backend}",
                              "--out", str(res), "--plan-out", str(plan), "--no-progress",
                              env=models["env"], cwd=base)  # fmt: skip
            out[backend] = {"job": job, "out": res, "plan": plan}
    for r in out.values():
        r["proc"] = r.pop("job").result()
    return out


def test_vllm_and_hf_agree_on_the_other_model(runs: dict[str, Any]) -> None:
    for backend in ("vllm", "hf"):
        r = runs[backend]["proc"]
        assert r.returncode == 0, r.stderr[-3000:]
    a = read_results(runs["vllm"]["out"]).sort("instance_id")
    b = read_results(runs["hf"]["out"]).sort("instance_id")
    assert a["instance_id"].to_list() == b["instance_id"].to_list() and a.height == 40
    # vLLM's kernels against transformers' (what lm-eval's hf backend runs): the bound against lm-eval
    assert VS_LM_EVAL.outside(a["loglikelihood"].to_list(), b["loglikelihood"].to_list()) == []
    assert a["is_greedy"].to_list() == b["is_greedy"].to_list()


def test_engine_settings_are_derived_from_the_model_and_recorded(models: dict[str, Any], runs: dict[str, Any]) -> None:
    m = read_manifest(runs["vllm"]["out"])
    args = m.engine_args
    assert args["max_model_len"] == MAX_POSITIONS  # from config.json, not tiny's 16384
    assert (args["dtype"], args["enforce_eager"], args["kv_cache_memory_bytes"]) == ("float32", True, 1 << 30)
    assert m.platform["kind"] == "cpu" and m.platform["device_count"] == 0 and m.platform["device_names"]
    assert m.model["max_model_len"] == MAX_POSITIONS
    hub = read_manifest(runs["hf"]["out"])
    assert hub.model["hub_id"] == HUB_ID and hub.model["revision"] == models["sha"]
    assert hub.engine_args["dtype"] == "float32" and hub.platform["kind"] == "cpu"


def test_contexts_longer_than_the_window_are_truncated_and_counted(runs: dict[str, Any]) -> None:
    for backend in ("vllm", "hf"):
        r = runs[backend]["proc"]
        n, total = _truncated(runs[backend]["plan"], MAX_POSITIONS)
        assert n > 0
        lines = [ln for ln in r.stderr.splitlines() if ln.startswith("pre-flight:")]
        assert len(lines) == 1 and lines[0].startswith(
            f"pre-flight: {n} of {total} loglikelihood Instances exceed max_model_len={MAX_POSITIONS} "
        )
        assert read_manifest(runs[backend]["out"]).stats["truncated"] == n
        assert "Traceback" not in r.stderr


def test_runs_are_quiet_and_the_engine_log_is_kept(runs: dict[str, Any]) -> None:
    r = runs["vllm"]["proc"]
    noise = [ln for ln in (r.stdout + r.stderr).splitlines() if ln.strip() and not OWN_LINE.match(ln)]
    assert noise == []
    log = (runs["vllm"]["out"] / "engine.log").read_text()
    assert "WARNING" in log  # vLLM did talk: into the log, not the terminal


def _run_on_a_terminal(args: list[str], cwd: Path, timeout: float = 600) -> tuple[int, str]:
    """``lmeval ARGS`` with stdout and stderr on a pseudo-terminal (so the progress bar is drawn), and
    everything it wrote there, ANSI codes removed, one line per screen update."""
    import pty
    import select
    import subprocess
    import sys
    import time

    from tests.executor.conftest import REPO

    master, slave = pty.openpty()
    # a user's shell: not the logging settings an in-process engine of an earlier test left in os.environ
    env = {k: v for k, v in os.environ.items() if not k.startswith("VLLM_LOGGING")}
    env.update(PYTHONPATH=str(REPO), COLUMNS="100", TERM="xterm")
    cmd = [sys.executable, "-m", "lmeval", *args]
    proc = subprocess.Popen(cmd, stdout=slave, stderr=slave, stdin=subprocess.DEVNULL, cwd=cwd, env=env)
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 1.0)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    rc = proc.wait(timeout=60)
    os.close(master)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", b"".join(chunks).decode("utf-8", "replace"))
    return rc, text


def test_lmeval_run_arith_prints_no_third_party_warnings(tmp_path: Path) -> None:
    """On a terminal, with the progress bar drawn: lmeval's own lines only; vLLM's and torch's go to the log."""
    rc, text = _run_on_a_terminal(["run", "+task=arith", "run.limit=3", "--out", str(tmp_path / "r")], tmp_path)
    assert rc == 0, text[-3000:]
    lines = [ln.strip() for ln in re.split(r"[\r\n]+", text) if ln.strip()]
    bar = re.compile(r"^(execute|loading model|scoring|generating|reuse) .*tok/s")
    assert any(bar.match(ln) and "inst/s" in ln and "eta" in ln for ln in lines)  # the progress bar was drawn
    noise = [ln for ln in lines if not OWN_LINE.match(ln) and not bar.match(ln)]
    assert noise == []
    assert "WARNING" in (tmp_path / "r" / "engine.log").read_text()


def test_vllm_argument_errors_are_one_line_naming_the_setting(
    models: dict[str, Any], plans: dict[str, Path], tmp_path: Path
) -> None:
    """More positions than the model has: vLLM's own check refuses it; the user sees one line, no traceback."""
    r = run_cli("execute", str(plans["dir"]), f"model.path={models['ckpt']}", "model.max_model_len=4096",
                "--out", str(tmp_path / "r"), cwd=tmp_path)  # fmt: skip
    assert r.returncode == 2, r.stderr[-3000:]
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("lmeval execute: error: model.max_model_len=4096: vLLM rejects it (")
    assert "max_model_len" in lines[0] and "4096" in lines[0]
