"""Recorded conversations as a task (#56, compiler/trajectories.py): the JSONL and ATIF forms, one document per
recorded assistant step, each a loglikelihood request of the reply given everything before it through the chat
template (the tiny model's ChatML); one-line refusals; per-trajectory scores computed from given steps."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from lmeval.compiler import compile_plan
from lmeval.compiler.errors import CompileError
from lmeval.compiler.trajectories import read_trajectories, step_docs
from lmeval.scorer.trajectories import StepScore, trajectory_scores

CONV = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Hi"},
    {"role": "assistant", "content": "Hello."},
    {"role": "user", "content": "2+2?"},
    {"role": "assistant", "content": "4"},
]
ATIF = {
    "schema_version": "ATIF-v1.4",
    "session_id": "s1",
    "agent": {"name": "a", "version": "1"},
    "steps": [
        {"step_id": 1, "source": "user", "message": "Weather in Paris?"},
        {
            "step_id": 2,
            "source": "agent",
            "message": "Let me check.",
            "tool_calls": [{"tool_call_id": "c1", "function_name": "weather", "arguments": {"city": "Paris"}}],
            "observation": {"results": [{"source_call_id": "c1", "content": "18C, sunny"}]},
        },
        {"step_id": 3, "source": "agent", "message": "It is 18C and sunny."},
    ],
}


def _write(tmp: Path, name: str, text: str) -> Path:
    p = tmp / name
    p.write_text(text)
    return p


def test_jsonl_steps(tmp_path: Path) -> None:
    f = _write(tmp_path, "t.jsonl", json.dumps({"id": "a", "messages": CONV}) + "\n\n" + json.dumps(CONV[1:3]) + "\n")
    form, sha, trajs = read_trajectories(str(f))
    assert form == "jsonl" and len(sha) == 64 and [t for t, _ in trajs] == ["a", "3"]
    docs = step_docs(trajs)
    assert [(d["trajectory"], d["step"]) for d in docs] == [("a", 2), ("a", 4), ("3", 1)]
    assert docs[1]["messages"] == CONV


def test_atif_mapping(tmp_path: Path) -> None:
    form, _, [(tid, msgs)] = read_trajectories(str(_write(tmp_path, "t.json", json.dumps(ATIF))))
    assert form == "atif" and tid == "s1"
    call = '<tool_call>{"name": "weather", "arguments": {"city": "Paris"}}</tool_call>'
    assert msgs == [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "Let me check.\n" + call},
        {"role": "user", "content": "18C, sunny"},
        {"role": "assistant", "content": "It is 18C and sunny."},
    ]


def test_compiled_steps_are_the_reply_after_the_rendered_prompt(tmp_path: Path) -> None:
    f = _write(tmp_path, "t.jsonl", json.dumps({"id": "a", "messages": CONV}) + "\n")
    header, records = compile_plan(["+task=trajectory", f"task.trajectory.path={f}", "run.apply_chat_template=true"])
    insts = [r for r in records if getattr(r, "request_type", None)]
    assert [i.request_type for i in insts] == ["loglikelihood", "loglikelihood"]
    assert insts[0].context == (
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    )
    assert insts[0].continuation == "Hello."
    assert insts[1].context.endswith("<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n")
    assert insts[1].continuation == "4"
    meta = header.task("trajectory").config["metadata"]
    assert (
        meta["trajectory_file"] == "t.jsonl"
        and meta["form"] == "jsonl"
        and str(tmp_path) not in json.dumps(header.config)
    )  # the plan keeps the file's name and sha256, not where it lives
    f.write_text(json.dumps({"id": "a", "messages": CONV[:-1] + [{"role": "assistant", "content": "5"}]}) + "\n")
    other, _ = compile_plan(["+task=trajectory", f"task.trajectory.path={f}", "run.apply_chat_template=true"])
    assert other.plan_hash != header.plan_hash


@pytest.mark.parametrize(
    ("text", "extra", "match"),
    [
        ("not json\n", [], "t.jsonl:1: not JSON"),
        (json.dumps([{"role": "robot", "content": "x"}]) + "\n", [], "is not one of system, user, assistant"),
        (json.dumps([{"role": "user", "content": "x"}]) + "\n", [], "no assistant reply after a prompt"),
        (json.dumps(CONV) + "\n" + json.dumps(CONV) + "\n", [], None),  # ids are line numbers: fine
        (json.dumps({"id": 1, "messages": CONV}) + "\n" + json.dumps({"id": 1, "messages": CONV}) + "\n", [],
         "trajectory ids repeat"),
        (json.dumps(CONV) + "\n", ["run.apply_chat_template=false"], "needs run.apply_chat_template=true"),
    ],
)  # fmt: skip
def test_refusals_are_one_line(tmp_path: Path, text: str, extra: list[str], match: str | None) -> None:
    f = _write(tmp_path, "t.jsonl", text)
    args = ["+task=trajectory", f"task.trajectory.path={f}", "run.apply_chat_template=true", *extra]
    if match is None:
        compile_plan(args)
        return
    with pytest.raises(CompileError) as e:
        compile_plan(args)
    assert match in str(e.value) and "\n" not in str(e.value)


def test_missing_path_is_named() -> None:
    with pytest.raises(CompileError, match=r"set task.trajectory.path=FILE"):
        compile_plan(["+task=trajectory", "run.apply_chat_template=true"])


def test_per_trajectory_scores() -> None:
    steps = [
        StepScore("t", "a", 2, 0, -3.0, 2, True),
        StepScore("t", "a", 4, 1, -1.5, 1, False),
        StepScore("t", "b", 1, 2, -0.25, 5, True),
    ]
    a, b = trajectory_scores(steps)
    assert (a.trajectory, a.steps, a.loglikelihood, a.n_tokens, a.loglikelihood_per_token, a.greedy) == (
        "a",
        2,
        -4.5,
        3,
        -1.5,
        0.5,
    )
    assert (b.loglikelihood, b.loglikelihood_per_token, b.greedy) == (-0.25, -0.05, 1.0)
    assert not math.isnan(b.loglikelihood_per_token)


def test_a_template_that_does_not_put_the_reply_after_the_prompt_is_refused() -> None:
    from lmeval.compiler.build.conversation import step_request

    def where(field: str, msg: str) -> Exception:
        return ValueError(f"{field}: {msg}")

    def chat(msgs: list[dict[str, str]], gen: bool) -> str:  # drops earlier replies, as thinking templates do
        return "".join(m["content"] + "|" for m in msgs if m["role"] != "assistant" or not gen) + ("A:" if gen else "")

    with pytest.raises(ValueError, match="does not render the reply right after the prompt"):
        step_request(chat, CONV[1:3], where)
    assert step_request(lambda m, g: "P:" if g else "P:" + m[-1]["content"], CONV[1:3], where) == ("P:", "Hello.")


def test_atif_optional_fields_may_be_null_or_absent(tmp_path: Path) -> None:
    """ATIF's optional fields (as a pydantic dump writes them: null) are absent, not wrong (#64 checks types)."""
    steps = [
        {"step_id": 1, "source": "system", "message": "Be brief.", "tool_calls": None, "observation": None},
        {"step_id": 2, "source": "user", "message": "Weather?"},
        {"step_id": 3, "source": "agent", "message": "", "tool_calls": [{"function_name": "w", "tool_call_id": None}],
         "observation": {"results": [{"source_call_id": None, "content": None}, {"content": "18C"}]}},
        {"step_id": 4, "source": "agent", "message": "18C.", "reasoning_content": None, "metrics": None},
    ]  # fmt: skip
    f = _write(tmp_path, "t.json", json.dumps({"session_id": None, "steps": steps}))
    _, _, [(tid, msgs)] = read_trajectories(str(f))
    assert tid == "t" and msgs == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": '<tool_call>{"name": "w", "arguments": {}}</tool_call>'},
        {"role": "user", "content": "18C"},
        {"role": "assistant", "content": "18C."},
    ]


def test_the_depth_scanner_reads_strings_as_strings() -> None:
    from lmeval.plans import path_text, too_deep_at

    text = '{"a\\"[": "[[[{{{", "b": [1, "]", {"c": ' + "[" * 70 + "]" * 70 + "}]}"
    found = too_deep_at(text, 64)
    assert found is not None and path_text(found[1], keep=3) == "b[2].c..."
    assert too_deep_at('{"x": "' + "[" * 100 + '"}', 64) is None
    assert too_deep_at("[\n[\n" + "[" * 70, 64) == (3, [0, 0] + [0] * 62)
