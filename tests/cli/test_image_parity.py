"""Image tasks from the command line on data made here (#64): lm-eval 0.4.13's ``pisa_en`` and ``pisa_ch``,
whose text-only questions show no image, compile into lm-eval's own requests and show, execute, score and diff;
``diff`` calls a palette image whose palette changed a changed picture, not a new encoding."""

from __future__ import annotations

import json
import os
from pathlib import Path

import polars as pl
import pytest

from lmeval.plans import read_plan
from tests.compiler.test_image_parity import INDICES, PALETTE_A, PALETTE_B, _palette_png
from tests.imagedata import lm_eval_requests, make_chartqa, make_pisa
from tests.support import cli_in_process


@pytest.fixture(scope="module")
def pisa(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_pisa(tmp_path_factory.mktemp("pisa") / "data")


@pytest.mark.parametrize("task", ["pisa_en", "pisa_ch"])
def test_pisa_compiles_shows_executes_and_scores_with_lm_evals_requests(task: str, pisa: Path, tmp_path: Path) -> None:
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    plan = tmp_path / f"{task}.msgpack"
    rc, _, err = cli_in_process("compile", f"+task={task}", f"run.data_dir={pisa}", "--out", str(plan))
    assert rc == 0, err
    theirs = lm_eval_requests(task, pisa)
    ours = read_plan(plan).instances
    assert [(o.doc_id, o.idx, o.context) for o in ours] == [(t["doc_id"], t["idx"], t["context"]) for t in theirs]
    assert [t["visual"] is None for t in theirs] == [False, True, False, True]  # text-only questions included
    for o, t in zip(ours, theirs, strict=True):
        if t["visual"] is None:  # lm-eval's request shows nothing: ours is a text request
            assert o.media is None
        else:
            assert o.media is not None
            assert [m["sha256"] for m in o.media] == t["sha256"] and [m["pixels"] for m in o.media] == t["pixels"]
    rc, out, err = cli_in_process("show", str(plan), "--media")
    assert rc == 0, err
    assert f"{task} doc 0 idx 0" in out and f"{task} doc 1 idx 0" not in out  # only the documents with images
    rc, out, err = cli_in_process("show", str(plan), "-n", "4")
    assert rc == 0 and "Which bar is tallest in figure 1?" in out, err
    rc, out, err = cli_in_process("show", str(plan), "--jsonl")
    lines = [json.loads(line) for line in out.splitlines()]
    assert rc == 0 and ["media" in x for x in lines] == [True, False, True, False], err
    res = tmp_path / "res"
    rc, _, err = cli_in_process("execute", str(plan), "model.backend=fake", "--out", str(res), "--no-progress")
    assert rc == 0, err
    rc, _, err = cli_in_process("score", str(res), "--plan", str(plan), "--trust-code", "--quiet")
    assert rc == 0, err
    acc = json.loads((res / "results.json").read_text())["results"][task]["acc,none"]
    per_doc = pl.read_parquet(res / "samples.parquet")
    assert per_doc["doc_id"].to_list() == [0, 1, 2, 3] and set(per_doc["acc"].to_list()) <= {0.0, 1.0}
    assert acc == pytest.approx(per_doc["acc"].mean())


@pytest.mark.parametrize("backend", ["hf", "vllm"])
def test_a_local_model_refuses_an_image_placeholder_without_an_image_in_one_line(
    backend: str, pisa: Path, tmp_path: Path
) -> None:
    """PISA's text-only prompts keep their ``<image>`` placeholder, which a local model's processor turns into its
    image token with nothing to fill it (a traceback deep in the vision tower before): one line, before any
    engine starts. The fake backend and chat endpoints run them (above)."""
    from lmeval.executor.errors import ExecuteError
    from lmeval.executor.media import check_plan_media

    plan = tmp_path / "p.msgpack"
    assert cli_in_process("compile", "+task=pisa_en", f"run.data_dir={pisa}", "--out", str(plan))[0] == 0
    instances = read_plan(plan).instances
    with pytest.raises(ExecuteError) as e:
        check_plan_media(str(plan), instances, backend)
    assert "\n" not in str(e.value) and "(task pisa_en doc 1) shows no image" in str(e.value)
    assert str(plan) in str(e.value) and f"model.backend={backend} cannot run" in str(e.value)
    check_plan_media(str(plan), instances, "openai-chat")  # a chat endpoint gets the text


def test_diff_of_plans_with_image_less_documents(pisa: Path, tmp_path: Path) -> None:
    a = tmp_path / "a.msgpack"
    assert cli_in_process("compile", "+task=pisa_en", f"run.data_dir={pisa}", "--out", str(a))[0] == 0
    other = make_pisa(tmp_path / "data")
    rows = [json.loads(line) for line in (other / "pisa-bench/en.jsonl").read_text().splitlines()]
    rows[1]["question"] += " (reworded)"  # a text-only question
    rows[3]["image"] = rows[0]["image"]  # a text-only question that now shows a picture
    (other / "pisa-bench/en.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    b = tmp_path / "b.msgpack"
    assert cli_in_process("compile", "+task=pisa_en", f"run.data_dir={other}", "--out", str(b))[0] == 0
    rc, out, err = cli_in_process("diff", str(a), str(b))
    assert "Traceback" not in err and "error" not in err, err
    assert "pisa_en doc 1" in out and "pisa_en doc 3" in out and "pisa_en doc 0" not in out
    assert "idx 0 image 0: none → " in out and "(added)" in out


def test_diff_calls_a_changed_palette_a_changed_picture(tmp_path: Path) -> None:
    plans = []
    for name, colours in (("a", PALETTE_A), ("b", PALETTE_B)):  # the same indices, red and blue swapped
        data = make_chartqa(tmp_path / name, n=2)
        (data / "ChartQA/images/test-0.png").write_bytes(_palette_png(INDICES, colours))
        plans.append(tmp_path / f"{name}.msgpack")
        assert cli_in_process("compile", "+task=chartqa", f"run.data_dir={data}", "--out", str(plans[-1]))[0] == 0
    rc, out, err = cli_in_process("diff", *map(str, plans))
    assert "Traceback" not in err, err
    assert "chartqa doc 0" in out and "chartqa doc 1" not in out
    assert "idx 0 image 0: " in out and "(pixels changed)" in out and "(same pixels)" not in out
