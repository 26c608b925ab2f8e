"""A thinking model end to end through vLLM (#28): ``lmeval run`` on gsm8k (local data, 3 documents) with the
tiny thinking model of ``tests/thinkmodel.py``, whose greedy answer to every question is
``<think> Let me think. #### 7</think> #### 18`` (18 is document 0's gold answer). One engine serves every run
of the module (``lmeval run`` in process, its backend loader pointed at a shared ``VLLMBackend``).

- with ``run.reasoning`` strict-match scores the answer part (1/3, exactly) and the Parquet keeps the whole
  response; without the setting the same responses (same request hashes) score as before: strict-match takes
  the reasoning's ``#### 7`` (0).
- ``run.thinking_budget=3``: every block is cut after 3 tokens, the end marker forced, and the answer still
  comes (1/3); a budget the model stays under changes no response; ``run.answer_budget=1`` cuts the answer.
- samples.parquet, ``lmeval compare`` and the report give the reasoning's length in tokens.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

from lmeval.plans import read_plan
from lmeval.plans.results.manifest import read_results
from tests.bounds import ARITHMETIC
from tests.executor.vllm_plan import SharedEngine
from tests.support import cli_in_process as cli
from tests.support import data_dir
from tests.thinkmodel import RESPONSE, build_think_model

THINK = ["run.reasoning.end=['</think>']", "run.reasoning.start='<think>'"]
BASE = ["+task=gsm8k", "run.limit=3", "run.num_fewshot=0"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    import lmeval.executor.run as run_module

    tmp = tmp_path_factory.mktemp("thinking")
    model = build_think_model(tmp / "model")
    engine = SharedEngine()
    settings = {
        "reasoning": THINK,
        "plain": [],
        "forced": [*THINK, "run.thinking_budget=3"],
        "roomy": [*THINK, "run.thinking_budget=20"],
        "short": [*THINK, "run.thinking_budget=20", "run.answer_budget=1"],
    }
    mp = pytest.MonkeyPatch()
    mp.setattr(run_module, "_load_backend", engine)
    out: dict[str, Path] = {}
    try:
        for name, extra in settings.items():
            d = tmp / name
            argv = [*BASE, f"run.data_dir={data_dir()}", f"model.path={model}", *extra]
            rc, _, err = cli("run", *argv, "--out", str(d), "--plan-out", str(tmp / f"{name}.msgpack"), "--no-progress")
            assert rc == 0, err
            (d / "stderr.txt").write_text(err)
            out[name] = d
        yield out
    finally:
        mp.undo()
        if engine.backend is not None:
            engine.backend.close()


def _strict(d: Path) -> float:
    return float(json.loads((d / "results.json").read_text())["results"]["gsm8k"]["exact_match,strict-match"])


def _rows(d: Path) -> pl.DataFrame:
    return read_results(d).sort("doc_id")


def _samples(d: Path) -> pl.DataFrame:
    return pl.read_parquet(d / "samples.parquet").filter(pl.col("filter") == "strict-match").sort("doc_id")


@pytest.mark.vllm
def test_thinking_answers_score_with_the_setting_and_as_before_without(runs: dict[str, Path]) -> None:
    r, p = runs["reasoning"], runs["plain"]
    assert _rows(r)["response"].to_list() == [RESPONSE] * 3  # the raw output is kept whole
    assert _rows(p)["response"].to_list() == [RESPONSE] * 3
    assert _rows(r)["request_hash"].to_list() == _rows(p)["request_hash"].to_list()  # the setting moves none
    assert _strict(r) == pytest.approx(1 / 3, abs=ARITHMETIC.atol) and _strict(p) == 0.0
    s = _samples(r)
    assert s["answer"].to_list() == [" #### 18"] * 3 and s["filtered"].to_list() == ["18"] * 3
    assert s["reasoning"].to_list() == [" Let me think. #### 7"] * 3
    # tokens before the end marker: <think> Let me think . Ġ #### Ġ7
    assert s["reasoning_tokens"].to_list() == [8] * 3 and s["reasoning_chars"].to_list() == [21] * 3
    assert _rows(r)["thinking_forced"].to_list() == [None] * 3  # no budget: nothing forced
    assert (
        read_plan(p.parent / "plain.msgpack").header.plan_hash
        != read_plan(r.parent / "reasoning.msgpack").header.plan_hash
    )


@pytest.mark.vllm
def test_thinking_budget_forces_the_end_marker_and_the_answer_still_comes(runs: dict[str, Path]) -> None:
    f = runs["forced"]
    rows = _rows(f)
    assert rows["response"].to_list() == ["<think> Let me</think> #### 18"] * 3
    assert rows["thinking_forced"].to_list() == [True] * 3 and rows["reasoning_tokens"].to_list() == [3] * 3
    assert rows["finish_reason"].to_list() == ["stop"] * 3
    assert _strict(f) == pytest.approx(1 / 3, abs=ARITHMETIC.atol)
    assert (
        "3 of 3 responses ran out of run.thinking_budget (end marker forced, then answered)"
        in (f / "stderr.txt").read_text()
    )
    # a budget the model stays under: the responses of the run without budgets, nothing forced
    roomy = _rows(runs["roomy"])
    assert roomy["response"].to_list() == [RESPONSE] * 3 and roomy["thinking_forced"].to_list() == [False] * 3
    assert roomy["request_hash"].to_list() != _rows(runs["reasoning"])["request_hash"].to_list()  # budgets do move


@pytest.mark.vllm
def test_answer_budget_cuts_the_answer_only(runs: dict[str, Path]) -> None:
    s = runs["short"]
    rows = _rows(s)
    assert rows["response"].to_list() == ["<think> Let me think. #### 7</think> ####"] * 3
    assert rows["finish_reason"].to_list() == ["length"] * 3 and rows["thinking_forced"].to_list() == [False] * 3
    assert _strict(s) == 0.0


@pytest.mark.vllm
def test_compare_and_report_show_reasoning_tokens(runs: dict[str, Path], tmp_path: Path) -> None:
    rc, out, err = cli("compare", str(runs["plain"]), str(runs["reasoning"]))
    assert rc == 0, err
    assert "B reasoning 21 chars, 8 tokens; answer '#### 18'" in out, out
    rc, _, err = cli("report", str(runs["reasoning"]), str(runs["forced"]), "-o", str(tmp_path / "rep.html"))
    assert rc == 0, err
    html = (tmp_path / "rep.html").read_text()
    assert '"reasoning_tokens"' in html and "thinking budget ran out" in html
