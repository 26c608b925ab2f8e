"""``model.backend=openai-chat`` against a real ``vllm serve`` of SmolLM2 (#39 acceptance 1): gsm8k, 5 docs,
compiled with the model's chat template, run through the server's ``/v1/chat/completions`` (the plan's
messages) and through its ``/v1/completions`` (``model.backend=openai``: the plan's rendered prompt) scores the
same and generates the same text.

One server per module (a random free port, a bounded start-up wait, killed at teardown even when a test
fails): float32 (``--dtype float32``) and one request at a time (``concurrency=1``), so the two paths see the
same numerics, and the text must be exactly equal (no tolerance). 0-shot and ``max_gen_toks=48`` keep the
module to 87-136 s on a loaded 2-core machine (server start 52-83 s of it); at 48 tokens SmolLM2 scores 0.0
on both paths, so the equal generations are the check with teeth, the equal scores the acceptance's."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from lmeval.executor import execute
from lmeval.plans.plan import read_plan
from lmeval.plans.results import read_results
from lmeval.scorer import score
from tests.e2e import realmodel
from tests.executor import plantools as pt

START_TIMEOUT_S = 240.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/models", timeout=2) as r:
            return bool(r.status == 200)
    except OSError:
        return False


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``vllm serve`` of the converted SmolLM2 folder; the base URL (``.../v1``)."""
    model = realmodel.smollm2_dir()
    port = _free_port()
    log = tmp_path_factory.mktemp("vllm-serve") / "server.log"
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "TORCHDYNAMO_DISABLE": "1", "VLLM_TARGET_DEVICE": "cpu"}
    # the API server module, not the ``vllm`` CLI: the CLI asks for the ``vllm`` distribution's version,
    # which vllm-cpu does not install (/work/shared/docs/vllm-cpu.md)
    cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model), "--host", "127.0.0.1",
           "--port", str(port), "--served-model-name", "smollm2", "--dtype", "float32", "--enforce-eager",
           "--max-model-len", "2048", "--seed", "0"]  # fmt: skip
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _ready(url):
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = log.read_text(errors="replace")[-2000:]
                pytest.fail(f"vllm serve did not start in {START_TIMEOUT_S:.0f} s (rc {proc.poll()}):\n{tail}")
            time.sleep(1)
        yield url
    finally:
        os.killpg(proc.pid, 15)  # its engine core is a child process: the whole group
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()


def _run(plan: Path, out: Path, backend: str, url: str) -> Path:
    overrides = ["model=smollm2", f"model.backend={backend}", f"model.engine.base_url={url}",
                 "model.engine.model=smollm2", "model.engine.concurrency=1", "model.engine.timeout_s=300"]  # fmt: skip
    execute(str(plan), out=str(out), overrides=overrides, progress=False)
    score(str(out))
    return out


def test_chat_endpoint_scores_as_completions(server: str, tmp_path: Path) -> None:
    settings = ["model=smollm2", "+task=gsm8k", "run.limit=5", "run.num_fewshot=0", "run.apply_chat_template=true",
                "+run.gen_kwargs.max_gen_toks=48"]  # fmt: skip
    plan_path = pt.compiled(tmp_path / "gsm8k.msgpack", *settings)
    plan = read_plan(plan_path)
    assert len(plan.instances) == 5 and all(i.messages for i in plan.instances)
    chat = _run(plan_path, tmp_path / "chat", "openai-chat", server)
    cmpl = _run(plan_path, tmp_path / "cmpl", "openai", server)
    a, b = read_results(chat).sort("instance_id"), read_results(cmpl).sort("instance_id")
    assert a["response"].to_list() == b["response"].to_list()  # greedy, fp32, one request at a time: equal text
    assert all(r.strip() for r in a["response"])
    res_a = json.loads((chat / "results.json").read_text())["results"]["gsm8k"]
    res_b = json.loads((cmpl / "results.json").read_text())["results"]["gsm8k"]
    em = {k: v for k, v in res_a.items() if k.startswith("exact_match")}
    assert em and em == {k: v for k, v in res_b.items() if k.startswith("exact_match")}  # exactly equal
