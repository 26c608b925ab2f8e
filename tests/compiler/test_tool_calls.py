"""Tool-call tasks (#56, acceptance 2, compile side): BFCL's tools reach the prompt exactly as transformers'
``apply_chat_template(messages, tools=...)`` renders them for the model (a Hermes/Qwen-style template with tool
support, tests/fixtures/chat/hermes_tools.jinja, and SmolLM2's own), are kept in the plan (``InstanceRecord.tools``),
shown by ``lmeval show`` and named by ``lmeval diff``; bad settings are one-line errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from lmeval.common.tinymodel import ensure_tiny_model
from lmeval.compiler import compile_plan
from lmeval.compiler.errors import CompileError
from lmeval.diff import diff_plans, render_text
from lmeval.plans import read_plan, template_tools
from lmeval.plans.plan import write_plan
from tests.support import cli_in_process, data_dir, jsonl_rows

HERMES = Path(__file__).resolve().parents[1] / "fixtures" / "chat" / "hermes_tools.jinja"
N = 3


def hermes_model(dest: Path) -> Path:
    """The tiny model with the Hermes-style tool template as its chat template."""
    src = ensure_tiny_model()
    dest.mkdir(parents=True, exist_ok=True)
    for f in src.iterdir():
        if f.name != "lmeval_tiny.json":
            shutil.copyfile(f, dest / f.name)
    cfg = json.loads((src / "tokenizer_config.json").read_text())
    cfg["chat_template"] = HERMES.read_text()
    (dest / "tokenizer_config.json").write_text(json.dumps(cfg))
    return dest


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return hermes_model(tmp_path_factory.mktemp("hermes") / "model")


def _plan(
    tmp: Path, name: str, model_args: list[str], *extra: str, out_name: str = "plan", data: Path | None = None
) -> Path:
    out = tmp / f"{out_name}.msgpack"
    args = [f"+task={name}", f"run.limit={N}", "run.apply_chat_template=true", f"run.data_dir={data or data_dir()}"]
    write_plan(out, *compile_plan([*args, *model_args, *extra]))
    return out


def _check_rendered(plan: Path, tok_dir: Path, split: str) -> list[str]:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tok_dir))
    p = read_plan(plan)
    rows = jsonl_rows("bfcl", split, N)
    answers = jsonl_rows("bfcl", f"{split}_answers", N)
    contexts = []
    for inst, doc, row, ans in zip(p.instances, p.docs, rows, answers, strict=True):
        messages = row["question"][0]
        tools = template_tools(row["function"])
        want = tok.apply_chat_template(messages, tools=tools, tokenize=False, add_generation_prompt=True)
        assert inst.context == want
        assert inst.tools == tools and inst.messages == messages
        assert doc.doc["ground_truth"] == ans["ground_truth"]  # doc_join: the answers joined by id
        assert json.loads(doc.target) == {"calls": ans["ground_truth"]}
        contexts.append(inst.context)
    return contexts


def test_tools_are_rendered_as_transformers_renders_them(model: Path, tmp_path: Path) -> None:
    plan = _plan(tmp_path, "bfcl_multiple", [f"model.path={model}"])
    contexts = _check_rendered(plan, model, "multiple")
    first = jsonl_rows("bfcl", "multiple", 1)[0]["function"]
    assert "<tools>" in contexts[0] and all(json.dumps(f["name"]) in contexts[0] for f in first)
    assert '"type": "object"' in contexts[0] and '"type": "dict"' not in contexts[0]  # BFCL's types made JSON Schema's


def test_smollm2_template_as_transformers_renders_it(tmp_path: Path) -> None:
    from tests.e2e.realmodel import smollm2_dir

    plan = _plan(tmp_path, "bfcl_simple_python", ["model=smollm2"])
    contexts = _check_rendered(plan, smollm2_dir(), "simple_python")
    assert contexts[0].endswith("<|im_start|>assistant\n")


def test_show_and_diff_name_the_tools(model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = _plan(tmp_path, "bfcl_parallel", [f"model.path={model}"])
    rc, out, err = cli_in_process("show", str(plan))
    assert rc == 0, err
    name = jsonl_rows("bfcl", "parallel", 1)[0]["function"][0]["name"]
    assert f"⟦tools: {name} (schemas " in out and "replies read by hermes⟧" in out
    rc, out, err = cli_in_process("show", str(plan), "--jsonl")
    assert json.loads(out.splitlines()[0])["tools"][0]["function"]["name"] == name
    moved = _plan(
        tmp_path, "bfcl_parallel", [f"model.path={model}"], "task.bfcl_parallel.tool_parser=json", out_name="other"
    )
    text = render_text(diff_plans(str(plan), str(moved)))
    assert "tool_parser" in text and "scoring" in text
    p = read_plan(plan)
    assert p.header.plan_hash != read_plan(moved).header.plan_hash
    from lmeval.executor.backends.openai_chat import chat_refusal

    refusal = chat_refusal(p.header, p.instances, "plan.msgpack")  # a chat endpoint would answer calls as data
    assert refusal is not None and "tool-call task" in refusal and "vllm or hf" in refusal


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        (["run.apply_chat_template=false"], "run.apply_chat_template=true"),  # the template renders the tools
        (["task.bfcl_multiple.tool_parser=xml"], "tool_parser"),
        (["task.bfcl_multiple.doc_join={split: multiple_answers, key: nope}"], "doc_join"),
    ],
)
def test_bad_settings_are_one_line_errors(model: Path, tmp_path: Path, extra: list[str], field: str) -> None:
    with pytest.raises(CompileError) as e:
        _plan(tmp_path, "bfcl_multiple", [f"model.path={model}"], *extra)
    msg = str(e.value)
    assert "\n" not in msg and field in msg and "bfcl_multiple" in msg


def test_diff_names_a_changed_tool(model: Path, tmp_path: Path) -> None:
    """One tool description changed in the data: the diff counts that Instance under the cause ``tools``."""
    data = tmp_path / "data" / "bfcl"
    data.mkdir(parents=True)
    rows = jsonl_rows("bfcl", "multiple", N)
    (data / "multiple_answers.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in jsonl_rows("bfcl", "multiple_answers", N))
    )
    (data / "multiple.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    args = [f"model.path={model}"]
    old = _plan(tmp_path, "bfcl_multiple", args, out_name="old", data=data.parent)
    rows[1]["function"][0]["description"] += " Changed."
    (data / "multiple.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    new = _plan(tmp_path, "bfcl_multiple", args, out_name="new", data=data.parent)
    report = diff_plans(str(old), str(new))
    (td,) = report.tasks
    assert "tools" in {c.cause for c in td.causes} and td.instances_changed == 1
    assert "tools (function schemas given to the chat template)" in render_text(report)
