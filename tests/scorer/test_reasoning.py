"""``run.reasoning`` (plans/vocab/reasoning.py): a thinking model's gsm8k responses scored on their answer part,
planned in the plan (scoring only: request hashes unchanged, ``lmeval diff`` says "scoring"), and
``run.chat_template_kwargs`` reaching the chat template (prompts, hence hashes, change)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest

from lmeval.cli import main
from lmeval.common.tinymodel import ensure_tiny_model
from lmeval.compiler import compile_plan
from lmeval.compiler.errors import CompileError
from lmeval.diff import diff_plans, render_text
from lmeval.plans import read_plan
from lmeval.plans.plan import write_plan
from lmeval.plans.results import RunManifest, polars_schema, write_manifest
from lmeval.plans.scored import read_scored
from lmeval.plans.vocab import Reasoning, parse_reasoning, split_response
from lmeval.scorer.score import score_run
from tests.support import data_dir, jsonl_rows

N = 5
BASE = ["+task=gsm8k", f"run.limit={N}", "run.num_fewshot=0"]
THINK = "run.reasoning.end=['</think>']"
GOLD = [r["answer"].split("#### ")[-1].strip() for r in jsonl_rows("gsm8k", "test", N)]


def _compile(tmp: Path, name: str, *extra: str) -> Path:
    out = tmp / f"{name}.msgpack"
    write_plan(out, *compile_plan([*BASE, f"run.data_dir={data_dir()}", *extra]))
    return out


def _results(plan: Path, rdir: Path, response: Callable[[str], str]) -> Path:
    """A results directory for ``plan`` whose doc ``d`` answered ``response(gold of d)``."""
    p = read_plan(plan)
    rows = []
    for inst in p.instances:
        text = response(GOLD[inst.doc_id])
        rows.append({"instance_id": inst.instance_id, "task": inst.task, "doc_id": inst.doc_id, "idx": inst.idx,
                     "request_type": inst.request_type, "request_hash": inst.request_hash, "response": text,
                     "responses": [text], "finish_reason": "stop"})  # fmt: skip
    rdir.mkdir(parents=True)
    pl.DataFrame(rows, schema=polars_schema()).write_parquet(rdir / "part-00000.parquet")
    write_manifest(rdir, RunManifest(plan_hash=p.header.plan_hash, plan_path=str(plan),
                                     model={"name": "fake"}, backend="fake"))  # fmt: skip
    return rdir


def _scores(rdir: Path) -> dict[str, float]:
    score_run(str(rdir))
    res = json.loads((rdir / "results.json").read_text())["results"]["gsm8k"]
    return {k: res[f"exact_match,{k}"] for k in ("strict-match", "flexible-extract")}


def thinking(gold: str) -> str:
    # the reasoning holds a wrong "#### 1" first (strict-match takes the first match), the answer the gold
    return f"<think>Let me see. #### 1 is wrong, so 2 and 3...</think> The answer is 42.\n#### {gold}"


@pytest.fixture(scope="module")
def plans(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("reasoning")
    return {
        "plain": _compile(tmp, "plain"),
        "null": _compile(tmp, "null", "run.reasoning=null"),
        "think": _compile(tmp, "think", THINK),
        "empty": _compile(tmp, "empty", THINK, "run.reasoning.start='<think>'"),
        "after": _compile(tmp, "after", THINK, "run.reasoning.start='<think>'", "run.reasoning.unclosed=after_last"),
        "several": _compile(tmp, "several", "run.reasoning.end=['</think>','<|end_of_thought|>']"),
    }


def test_thinking_answers_score_with_the_setting_and_as_today_without(plans: dict[str, Path], tmp_path: Path) -> None:
    with_setting = _results(plans["think"], tmp_path / "think", thinking)
    assert _scores(with_setting) == {"strict-match": 1.0, "flexible-extract": 1.0}
    # the same responses without the setting: strict-match finds the reasoning's "#### 1" first
    without = _results(plans["plain"], tmp_path / "plain", thinking)
    assert _scores(without) == {"strict-match": 0.0, "flexible-extract": 1.0}
    # Parquet keeps the whole response; samples.parquet gains the reasoning and its length (chars)
    rows = pl.read_parquet(with_setting / "part-00000.parquet")
    assert rows["response"].to_list() == [thinking(g) for g in GOLD]
    s = read_scored(with_setting).samples.filter(pl.col("filter") == "strict-match").sort("doc_id")
    reasoning = "<think>Let me see. #### 1 is wrong, so 2 and 3..."
    assert s["reasoning"].to_list() == [reasoning] * N
    assert s["reasoning_chars"].to_list() == [len(reasoning)] * N
    assert s["filtered"].to_list() == GOLD
    # without the setting, samples.parquet has no reasoning columns (its files are what they were)
    plain = read_scored(without).samples
    assert "reasoning" not in plain.columns and "reasoning_chars" not in plain.columns


def test_unclosed_block_under_both_policies(plans: dict[str, Path], tmp_path: Path) -> None:
    def ran_out(gold: str) -> str:  # the model ran out of tokens while thinking
        return f"<think>I think it is #### {gold} but let me check"

    assert _scores(_results(plans["empty"], tmp_path / "e", ran_out)) == {"strict-match": 0.0, "flexible-extract": 0.0}
    assert _scores(_results(plans["after"], tmp_path / "a", ran_out)) == {"strict-match": 1.0, "flexible-extract": 1.0}
    # without a start marker (the chat template opened the block) every unclosed response is all reasoning
    assert _scores(_results(plans["think"], tmp_path / "t", ran_out)) == {"strict-match": 0.0, "flexible-extract": 0.0}
    # a response with a start marker that opens no block answers with all of it
    fmt = parse_reasoning({"end": "</think>", "start": "<think>"})
    assert fmt is not None and split_response("#### 7", fmt).answer == "#### 7"
    assert split_response("#### 7", fmt).reasoning is None


def test_several_markers(plans: dict[str, Path], tmp_path: Path) -> None:
    def other_marker(gold: str) -> str:
        return f"thinking #### 1<|end_of_thought|>#### {gold}"

    assert _scores(_results(plans["several"], tmp_path / "s", other_marker))["strict-match"] == 1.0
    assert _scores(_results(plans["think"], tmp_path / "t", other_marker))["strict-match"] == 0.0  # unclosed
    fmt = Reasoning(("</think>", "<|end_of_thought|>"))
    # the answer follows the marker that ends last (a model that thinks twice)
    assert split_response("a</think>b<|end_of_thought|>c</think>d", fmt).answer == "d"
    assert split_response("a<|end_of_thought|>b</think>c<|end_of_thought|>d", fmt).reasoning == (
        "a<|end_of_thought|>b</think>c"
    )


def test_the_setting_changes_the_plan_hash_only_as_designed(plans: dict[str, Path], tmp_path: Path) -> None:
    plain, null, think = (read_plan(plans[k]) for k in ("plain", "null", "think"))
    assert plans["plain"].read_bytes() == plans["null"].read_bytes()  # null is recorded by its absence
    one = _compile(tmp_path, "one", "run.reasoning.end='</think>'", "run.reasoning.unclosed=empty")
    assert one.read_bytes() == plans["think"].read_bytes()  # one spelling per meaning
    assert "reasoning" not in plain.header.config["run"] and null.header.plan_hash == plain.header.plan_hash
    assert think.header.plan_hash != plain.header.plan_hash
    assert think.header.config["run"]["reasoning"] == {"end": ["</think>"], "unclosed": "empty"}
    # no request, task or prompt depends on it: results of one plan answer the other's requests
    assert [i.request_hash for i in think.instances] == [i.request_hash for i in plain.instances]
    assert [t.task_hash for t in think.header.tasks] == [t.task_hash for t in plain.header.tasks]
    r = diff_plans(plans["plain"], plans["think"], show=1)
    assert [(c.path, c.new) for c in r.config] == [("run.reasoning", {"end": ["</think>"], "unclosed": "empty"})]
    assert r.tasks == [] and r.tasks_identical == 1  # nothing to re-execute
    text = render_text(r)
    assert "config: run.reasoning: (absent) → " in text and "(scoring only: no re-execution needed)" in text, text
    r2 = diff_plans(plans["empty"], plans["after"], show=1)
    assert [c.path for c in r2.config] == ["run.reasoning.unclosed"]
    from lmeval.diff.changes import cause_of_path

    assert {cause_of_path(c.path) for c in r.config + r2.config} == {"scoring"}


@pytest.mark.parametrize(
    "override,field",
    [
        ("run.reasoning.end=[]", "run.reasoning.end"),
        ("run.reasoning.unclosed=maybe", "run.reasoning.end"),
        (f"{THINK} run.reasoning.unclosed=maybe", "run.reasoning.unclosed"),
        (f"{THINK} run.reasoning.stop=x", "run.reasoning.stop"),
        ("run.chat_template_kwargs.enable_thinking=false", "run.chat_template_kwargs"),
    ],
)
def test_bad_settings_are_one_line_errors(override: str, field: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(CompileError, match=field.replace(".", r"\.")):
        compile_plan([*BASE, f"run.data_dir={data_dir()}", *override.split()])
    assert main(["compile", *BASE, f"run.data_dir={data_dir()}", *override.split()]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and field in err[0], err


THINKING_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if enable_thinking is defined and not enable_thinking %}<think>\n\n</think>\n\n{% endif %}{% endif %}"
)


def test_chat_template_kwargs_reach_the_template(tmp_path: Path) -> None:
    model = tmp_path / "thinker"
    shutil.copytree(ensure_tiny_model(), model)
    cfg_path = model / "tokenizer_config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["chat_template"] = THINKING_TEMPLATE
    cfg_path.write_text(json.dumps(cfg))
    (model / "chat_template.jinja").unlink(missing_ok=True)
    chat = ["run.apply_chat_template=true", f"model.path={model}", "model.name=thinker"]
    on = _compile(tmp_path, "on", *chat)
    off = _compile(tmp_path, "off", *chat, "run.chat_template_kwargs.enable_thinking=false")
    a, b = read_plan(on), read_plan(off)
    assert all(not i.context.endswith("</think>\n\n") for i in a.instances)
    assert all(i.context.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n") for i in b.instances)
    assert b.header.config["run"]["chat_template_kwargs"] == {"enable_thinking": False}
    assert "chat_template_kwargs" not in a.header.config["run"]
    assert {i.request_hash for i in a.instances}.isdisjoint(i.request_hash for i in b.instances)
    r = diff_plans(on, off, show=1)
    assert {c.cause for t in r.tasks for c in t.causes} == {"chat_template"}, render_text(r)


def test_an_earlier_run_is_rescored_under_the_setting_without_executing(plans: dict[str, Path], tmp_path: Path) -> None:
    """The fake backend answers the plan without the setting; the plan with it reuses every answer (same
    request hashes: nothing is sent to the model) and scores its own way."""
    from lmeval.executor.backends.fake import FakeBackend
    from lmeval.executor.options import RunOptions
    from lmeval.executor.run import run_plan
    from lmeval.plans.results import read_manifest

    sent: list[object] = []

    class Counting(FakeBackend):
        def generate(self, inputs):  # type: ignore[no-untyped-def,override]
            sent.extend(inputs)
            return super().generate(inputs)

    def run(plan: Path, out: Path, reuse: Path | None = None) -> None:
        opts = RunOptions(
            out=str(out),
            overrides=["model.backend=fake"],
            reuse=str(reuse) if reuse else None,
            progress=False,
            store="off",
        )  # fmt: skip  (--reuse alone; the result store does the same)
        run_plan(str(plan), opts, backend_factory=lambda spec, md: Counting(spec, md))

    run(plans["plain"], tmp_path / "old")
    assert len(sent) == N
    sent.clear()
    run(plans["think"], tmp_path / "new", reuse=tmp_path / "old")
    assert sent == [] and read_manifest(tmp_path / "new").stats["reused"] == N
    old_rows = pl.read_parquet(tmp_path / "old" / "part-*.parquet").sort("doc_id")
    new_rows = pl.read_parquet(tmp_path / "new" / "part-*.parquet").sort("doc_id")
    assert new_rows["response"].equals(old_rows["response"])
    score_run(str(tmp_path / "new"))
    assert "reasoning" in read_scored(tmp_path / "new").samples.columns


def test_compare_shows_reasoning_and_answer_of_flipped_docs(
    plans: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from lmeval.diff.runs import compare

    a = _results(plans["plain"], tmp_path / "a", thinking)
    b = _results(plans["think"], tmp_path / "b", thinking)
    for d in (a, b):
        score_run(str(d))
    flips = [f for f in compare(str(a), str(b)).flips if f.filter == "strict-match"]
    assert [(f.doc_id, f.a, f.b) for f in flips] == [(d, 0.0, 1.0) for d in range(N)]
    chars = len("<think>Let me see. #### 1 is wrong, so 2 and 3...")
    assert all(f.a_answer is None and f.a_reasoning_chars is None for f in flips)
    want = [(f" The answer is 42.\n#### {g}", chars) for g in GOLD]
    assert [(f.b_answer, f.b_reasoning_chars) for f in flips] == want
    capsys.readouterr()
    assert main(["compare", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "A (whole response scored: no run.reasoning)" in out
    assert f"B reasoning {chars} chars; answer 'The answer is 42. #### {GOLD[0]}'" in out, out


def test_thinking_budget_and_what_was_cut(plans: dict[str, Path], tmp_path: Path) -> None:
    """``run.thinking_budget=N`` (plans/vocab/budgets.py): each generation carries its budgets and the end marker's
    token ids, compiled in (the tiny tokenizer spells ``</think>`` in 5 tokens), and ``max_gen_toks`` is
    thinking + marker + answer (the answer budget: the task's own, lm-eval's 256 for gsm8k, or
    ``run.answer_budget``); requests change, so hashes do; responses cut are counted per part."""
    budget = _compile(tmp_path, "budget", THINK, "run.thinking_budget=1000")
    plain, b = read_plan(plans["think"]), read_plan(budget)
    want = {"thinking": 1000, "answer": 256, "end": "</think>", "end_ids": [32, 19, 501, 990, 34]}
    assert [i.generation_kwargs["reasoning_budget"] for i in b.instances] == [want] * N
    assert [i.generation_kwargs["max_gen_toks"] for i in b.instances] == [1000 + 5 + 256] * N
    assert all("max_gen_toks" not in (i.generation_kwargs or {}) for i in plain.instances)
    assert {i.request_hash for i in b.instances}.isdisjoint(i.request_hash for i in plain.instances)
    assert b.header.config["run"]["thinking_budget"] == 1000
    assert b.header.tasks[0].config["generation_kwargs"]["reasoning_budget"] == want  # diff and the task hash see it
    r = diff_plans(plans["think"], budget, show=1)
    assert {c.cause for t in r.tasks for c in t.causes} == {"generation_kwargs"}, render_text(r)
    assert _compile(tmp_path, "zero", THINK, "run.thinking_budget=0").read_bytes() == plans["think"].read_bytes()
    ans = read_plan(_compile(tmp_path, "ans", THINK, "run.thinking_budget=1000", "run.answer_budget=32"))
    assert [i.generation_kwargs["reasoning_budget"]["answer"] for i in ans.instances] == [32] * N
    assert [i.generation_kwargs["max_gen_toks"] for i in ans.instances] == [1000 + 5 + 32] * N
    assert {i.request_hash for i in ans.instances}.isdisjoint(i.request_hash for i in b.instances)
    for bad, field in (
        (["run.thinking_budget=10"], "run.thinking_budget"),  # no end marker to force
        ([THINK, "run.answer_budget=10"], "run.answer_budget"),  # no thinking budget to count from
        ([THINK, "run.thinking_budget=-1"], "run.thinking_budget"),
        # over what plans/plan/validate.py lets a generation ask: refused at compile time, never a plan no reader takes
        ([THINK, "run.thinking_budget=100000000"], "run.thinking_budget"),
        ([THINK, "run.thinking_budget=1000000", "run.answer_budget=100000"], "run.thinking_budget"),
    ):
        with pytest.raises(CompileError, match=field):
            _compile(tmp_path, "bad", *bad)
    # what was cut: two responses ran out while thinking, one in its answer
    rdir = _results(plans["think"], tmp_path / "cut", thinking)
    parts = sorted(rdir.glob("part-*.parquet"))
    rows = pl.read_parquet(parts[0])
    texts = ["<think>still going", "<think>and going", f"<think>x</think> #### {GOLD[2]} and", *rows["response"][3:]]
    rows = rows.with_columns(
        response=pl.Series(texts), responses=pl.Series([[t] for t in texts]),
        finish_reason=pl.Series(["length", "length", "length", "stop", "stop"]),
    )  # fmt: skip
    rows.write_parquet(parts[0])
    out = score_run(str(rdir))
    assert out.warnings == [
        "task gsm8k: 3 of 5 responses hit max_gen_toks, 2 inside the reasoning block (run.reasoning.unclosed=empty) "
        "and 1 in the answer; run.thinking_budget=N gives thinking N tokens of its own and the answer max_gen_toks"
    ]
    assert out.run.results["gsm8k"]["exact_match,strict-match"] == 3 / 5
    # and the report's diagnostics say the same
    from lmeval.report.diagnostics import run_findings
    from lmeval.report.inputs import load_run

    found = [f for f in run_findings(load_run(0, str(rdir), {})) if f.kind == "max_gen_toks"]
    assert [(f.count, f.doc_ids, f.detail) for f in found] == [
        (3, [0, 1, 2], "finish_reason = length; 2 inside the reasoning block, 1 in the answer")
    ]
