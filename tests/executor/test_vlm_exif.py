"""EXIF-rotated images reach the model upright (#64): lm-eval's ``chartqa`` on two charts stored sideways (a JPEG
with EXIF Orientation 6, a PNG with 8) gives, through lmeval's ``hf`` backend on the tiny offline LLaVA
(tests/vlmmodel.py), the answers ``lm_eval --model hf-multimodal`` gives on the same weights and data, whose
``datasets`` turns them upright (before the fix, lmeval showed them sideways and the answers differed). About
a minute and a half on 2 CPU cores."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from lmeval.compiler import compile_to_file
from lmeval.executor import execute
from lmeval.plans.results import read_results
from tests.imagedata import exif_image, lm_eval_generations, make_chartqa
from tests.vlmmodel import ensure_tiny_vlm

pytest.importorskip("torch")
MAX_TOKENS = 16


def test_exif_rotated_charts_get_lm_evals_answers(tmp_path: Path) -> None:
    model = ensure_tiny_vlm(tmp_path)
    data = make_chartqa(tmp_path / "data", n=2)
    folder = data / "ChartQA"
    rows = [json.loads(line) for line in (folder / "test.jsonl").read_text().splitlines()]
    for i, (fmt, orientation) in enumerate([("JPEG", 6), ("PNG", 8)]):
        rel = f"images/exif-{i}.{fmt.lower()}"
        exif_image(folder / rel, fmt, orientation, seed=10 + i)
        rows[i]["image"] = {"bytes": None, "path": rel}
    (folder / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    args = ["+task=chartqa", f"run.data_dir={data}", f"model.path={model}",
            f"run.gen_kwargs={{max_gen_toks: {MAX_TOKENS}}}"]  # fmt: skip
    plan = compile_to_file(args, str(tmp_path / "chartqa.msgpack"))
    out = tmp_path / "hf"
    execute(str(plan), out=str(out), overrides=["model.backend=hf", f"model.path={model}"], progress=False)
    ours = read_results(out).sort("doc_id")["response"].to_list()
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    theirs, _ = lm_eval_generations("chartqa", data, model, 2, MAX_TOKENS)
    assert len(ours) == 2 and ours == theirs
