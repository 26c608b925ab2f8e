"""The ``openai`` backend against a real ``vllm serve`` (OpenAI-compatible server) started here on loopback
with the tiny model, cross-checked against the ``hf`` backend on the same plan."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import polars as pl
import pytest

from lmeval.executor import execute
from lmeval.plans.results.manifest import read_manifest
from tests.executor import plantools as pt
from tests.executor.conftest import frame

pytestmark = pytest.mark.vllm

MAX_LEN = 4096


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[], str]]:
    """``vllm serve`` started now; the fixture gives ``ready()``, which waits until it answers and returns its URL
    (the test runs its hf side meanwhile: the server's start-up is mostly one core's work, CI has two)."""
    port = _free_port()
    log = tmp_path_factory.mktemp("serve") / "serve.log"
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "TORCHDYNAMO_DISABLE": "1", "HF_HUB_OFFLINE": "1"}
    with open(log, "w") as logf:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "vllm.entrypoints.openai.api_server",
                "--model",
                str(tiny_model),
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--enforce-eager",
                "--dtype",
                "float32",
                "--max-model-len",
                str(MAX_LEN),
            ],
            env=env,
            stdout=logf,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}/v1"
    up = False

    def ready() -> str:
        nonlocal up
        deadline = time.monotonic() + 240
        while not up:
            if proc.poll() is not None:
                pytest.fail(f"vllm serve exited ({proc.returncode}):\n{log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(url + "/models", timeout=2) as r:
                    up = bool(json.loads(r.read())["data"])
            except OSError:
                pass
            if not up and time.monotonic() > deadline:
                pytest.fail(f"vllm serve did not come up:\n{log.read_text()[-3000:]}")
            if not up:
                time.sleep(1)
        return url

    try:
        yield ready
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory, tiny_model: Path) -> Path:
    path = tmp_path_factory.mktemp("oa") / "plan.msgpack"
    pt.build(path, [pt.arc_easy(8, start=50), pt.gsm8k(4, max_gen_toks=32, fewshot=2), pt.rolling(2), pt.winogrande(6)])
    return path


def test_openai_backend_matches_hf(server: Callable[[], str], plan: Path, tmp_path: Path) -> None:
    hf = execute(
        str(plan),
        out=str(tmp_path / "hf"),
        progress=False,
        overrides=["model.backend=hf", f"model.max_model_len={MAX_LEN}"],
    )
    url = server()
    oa = execute(
        str(plan),
        out=str(tmp_path / "oa"),
        progress=False,
        overrides=[
            "model.backend=openai",
            f"model.engine.base_url={url}",
            f"model.max_model_len={MAX_LEN}",
            "model.engine.score_batch=8",
        ],
    )
    m = read_manifest(oa)
    assert m.backend == "openai" and m.engine_args["base_url"] == url
    j = frame(oa).join(frame(hf), on="instance_id", suffix="_hf")
    assert j.height == frame(hf).height == 32 + 4 + 2 + 12
    ll = j.filter(pl.col("request_type") == "loglikelihood")
    assert (ll["loglikelihood"] - ll["loglikelihood_hf"]).abs().max() < 1e-4
    assert (ll["is_greedy"] == ll["is_greedy_hf"]).all()
    roll = j.filter(pl.col("request_type") == "loglikelihood_rolling")
    assert ((roll["loglikelihood"] - roll["loglikelihood_hf"]).abs() / roll["n_continuation_tokens"]).max() < 1e-4
    gen = j.filter(pl.col("request_type") == "generate_until")
    assert gen["response"].to_list() == gen["response_hf"].to_list()
    assert gen["n_continuation_tokens"].to_list() == gen["n_continuation_tokens_hf"].to_list()
