"""Trajectory files (``+task=trajectory``, compiler/trajectories.py and compiler/atif.py, #64): deeply nested JSON
(a RecursionError traceback before; past the plan's 64 levels but within json's recursion it was accepted) and
ATIF steps whose fields have the wrong type (tracebacks, or silently dropped or rewritten). Each is one line naming
the file, the record (a JSONL line, an ATIF step) and the field; nothing is written. And ``lmeval trajectories``
on a run whose plan's step documents were forged (hashes recomputed): one line naming the document and field."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from tests.hostile.corpus import FAKE, Base, Case, case, lmeval, nested

CONV = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."}]


def _atif(agent: dict[str, Any] | None = None, user: dict[str, Any] | None = None, **root: Any) -> dict[str, Any]:
    step: dict[str, Any] = {"step_id": 2, "source": "agent", "message": "Let me check."}
    step.update(agent or {})
    first: dict[str, Any] = {"step_id": 1, "source": "user", "message": "Weather in Paris?"}
    first.update(user or {})
    return {"schema_version": "ATIF-v1.4", "session_id": "s1", "agent": {"name": "a", "version": "1"},
            "steps": [first, step, {"step_id": 3, "source": "agent", "message": "18C."}], **root}  # fmt: skip


def _compile(tmp: Path, path: Path, *needles: str) -> Case:
    argv = ["compile", "+task=trajectory", f"task.trajectory.path={path}", "run.apply_chat_template=true",
            "--no-cache", "--out", str(tmp / "out.msgpack")]  # fmt: skip
    return Case(argv, (str(path), *needles), absent=[tmp / "out.msgpack"])


@case("trajectories")
def traj_jsonl_messages_nested_100k(tmp: Path, base: Base) -> Case:
    p = tmp / "t.jsonl"
    p.write_text(json.dumps({"messages": CONV}) + "\n" + '{"id": "b", "messages": ' + nested(100_000) + "}\n")
    return _compile(tmp, p, f"{p}:2: messages[0][0]", "nested deeper than 64 levels")


@case("trajectories")
def traj_jsonl_first_line_bare_list_nested_100k(tmp: Path, base: Base) -> Case:
    p = tmp / "t.jsonl"
    p.write_text(nested(100_000) + "\n" + json.dumps(CONV) + "\n")
    return _compile(tmp, p, f"{p}:1: [0][0]", "nested deeper than 64 levels")


@case("trajectories")
def traj_jsonl_messages_nested_100(tmp: Path, base: Base) -> Case:  # within json's recursion: was accepted
    p = tmp / "t.jsonl"
    conv = [CONV[0], {"role": "assistant", "content": json.loads(nested(100))}]
    p.write_text(json.dumps({"id": "a", "messages": conv}) + "\n")
    return _compile(tmp, p, f"{p}:1: messages[1].content[0]", "nested deeper than 64 levels")


@case("trajectories")
def traj_atif_arguments_nested_100k(tmp: Path, base: Base) -> Case:
    p = tmp / "t.json"
    text = json.dumps(_atif({"tool_calls": [{"tool_call_id": "c1", "function_name": "f", "arguments": "@"}]}))
    p.write_text(text.replace('"@"', nested(100_000)))
    return _compile(tmp, p, f"{p}:1: steps[1].tool_calls[0].arguments", "nested deeper than 64 levels")


@case("trajectories")
def traj_atif_pretty_observation_nested_100k(tmp: Path, base: Base) -> Case:
    p = tmp / "t.json"
    text = json.dumps(_atif({"observation": {"results": [{"content": "@"}]}}), indent=1)
    line = text[: text.index('"@"')].count("\n") + 1
    p.write_text(text.replace('"@"', nested(100_000)))
    return _compile(tmp, p, f"{p}:{line}: steps[1].observation.results[0].content", "nested deeper than 64 levels")


@case("trajectories")
def traj_atif_arguments_nested_100(tmp: Path, base: Base) -> Case:  # within json's recursion: was accepted
    p = tmp / "t.json"
    call = {"tool_call_id": "c1", "function_name": "f", "arguments": {"x": json.loads(nested(100))}}
    p.write_text(json.dumps(_atif({"tool_calls": [call]})))
    return _compile(tmp, p, "steps[1].tool_calls[0].arguments.x[0]", "nested deeper than 64 levels")


# ATIF fields of the wrong type (ATIF v1.4's schema): (step edits, needles); "user:" edits the user step
WRONG_TYPES: dict[str, tuple[dict[str, Any], tuple[str, ...]]] = {
    "tool_calls_number": ({"tool_calls": 5}, ("steps[1].tool_calls: must be an array", "got a number")),
    "tool_calls_string": ({"tool_calls": "call f"}, ("steps[1].tool_calls: must be an array", "got a string")),
    "tool_calls_object": ({"tool_calls": {"function_name": "f"}}, ("steps[1].tool_calls: must be an array",)),
    "tool_call_string": ({"tool_calls": ["f()"]}, ("steps[1].tool_calls[0]: a tool call must be an object",)),
    "tool_call_no_name": ({"tool_calls": [{"arguments": {}}]}, ("steps[1].tool_calls[0].function_name",)),
    "tool_call_arguments_string": (
        {"tool_calls": [{"function_name": "f", "arguments": '{"x": 1}'}]},
        ("steps[1].tool_calls[0].arguments: must be an object", "got a string"),
    ),
    "tool_call_arguments_list": (
        {"tool_calls": [{"function_name": "f", "arguments": [1]}]},
        ("steps[1].tool_calls[0].arguments: must be an object", "got an array"),
    ),
    "observation_string": ({"observation": "18C"}, ("steps[1].observation: must be an object", "got a string")),
    "observation_list": ({"observation": [{"content": "18C"}]}, ("steps[1].observation: must be an object",)),
    "observation_number": ({"observation": 3}, ("steps[1].observation: must be an object", "got a number")),
    "observation_without_results": ({"observation": {}}, ("steps[1].observation.results: must be an array",)),
    "results_string": ({"observation": {"results": "18C"}}, ("steps[1].observation.results: must be an array",)),
    "results_object": (
        {"observation": {"results": {"content": "18C"}}},
        ("steps[1].observation.results: must be an array", "got an object"),
    ),
    "results_number": ({"observation": {"results": 2}}, ("steps[1].observation.results: must be an array",)),
    "result_string": (
        {"observation": {"results": ["18C"]}},
        ("steps[1].observation.results[0]: a result must be an object", "got a string"),
    ),
    "result_content_number": (
        {"observation": {"results": [{"content": 18}]}},
        ("steps[1].observation.results[0].content: must be a string", "got a number"),
    ),
    "result_content_object": (
        {"observation": {"results": [{"content": {"temp": 18}}]}},
        ("steps[1].observation.results[0].content: must be a string", "got an object"),
    ),
    "message_number": ({"message": 0}, ("steps[1].message: must be a string", "got a number")),
    "message_list": ({"message": ["hi"]}, ("steps[1].message: must be a string", "got an array")),
    "user:tool_calls_on_a_user_step": (
        {"tool_calls": [{"function_name": "f", "arguments": {}}]},
        ("steps[0].tool_calls: only an agent step makes tool calls",),
    ),
    "user:message_object": ({"message": {"text": "hi"}}, ("steps[0].message: must be a string",)),
}


def _register(name: str, edits: dict[str, Any], needles: tuple[str, ...]) -> None:
    def build(tmp: Path, base: Base) -> Case:
        p = tmp / "t.json"
        user = name.startswith("user:")
        p.write_text(json.dumps(_atif(None if user else edits, edits if user else None)))
        return _compile(tmp, p, *needles)

    build.__name__ = "traj_atif_" + name.removeprefix("user:")
    case("trajectories")(build)


for _name, (_edits, _needles) in WRONG_TYPES.items():
    _register(_name, _edits, _needles)


@case("trajectories")
def traj_atif_session_id_object(tmp: Path, base: Base) -> Case:
    p = tmp / "t.json"
    p.write_text(json.dumps(_atif(session_id={"id": 1})))
    return _compile(tmp, p, ": session_id: must be a string", "got an object")


def _forged_step_run(tmp: Path, edit: Callable[[dict[str, Any]], Any]) -> Path:
    """A run of a two-step trajectory (fake backend) whose plan's second step document went through ``edit``,
    re-sealed with every hash recomputed and the manifest pointed at it (a forger can)."""
    from lmeval.plans.plan import DocRecord, PlanReader, write_plan
    from lmeval.plans.plan.io import with_derived

    traj = tmp / "t.jsonl"
    conv = [*CONV, {"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}]
    traj.write_text(json.dumps({"id": "a", "messages": conv}) + "\n")
    plan, forged, run = tmp / "p.msgpack", tmp / "forged.msgpack", tmp / "r"
    for argv in (
        ["compile", "+task=trajectory", f"task.trajectory.path={traj}", "run.apply_chat_template=true",
         "--no-cache", "--out", str(plan)],
        ["execute", str(plan), FAKE, "--out", str(run), "--no-progress"],
    ):  # fmt: skip
        p = lmeval(*argv, cwd=tmp)
        assert p.returncode == 0, p.stderr
    with PlanReader(plan) as r:
        header, recs = r.header, list(r)
    out = [
        with_derived(replace(rec, doc=edit(dict(rec.doc)), doc_hash=""))
        if isinstance(rec, DocRecord) and rec.doc_id == 1
        else rec
        for rec in recs
    ]
    write_plan(forged, header, out)
    with PlanReader(forged) as r:
        new_hash = r.header.plan_hash
    m = json.loads((run / "manifest.json").read_text())
    m.update(plan_path=str(forged), plan_hash=new_hash)
    (run / "manifest.json").write_text(json.dumps(m))
    return run


def _without(key: str) -> Callable[[dict[str, Any]], Any]:
    return lambda d: {k: v for k, v in d.items() if k != key}


FORGED_STEPS: dict[str, tuple[Callable[[dict[str, Any]], Any], str]] = {
    "no_step": (_without("step"), "field 'step'"),
    "step_string": (lambda d: {**d, "step": "3"}, "field 'step'"),
    "step_zero": (lambda d: {**d, "step": 0}, "field 'step'"),
    "trajectory_list": (lambda d: {**d, "trajectory": ["a"]}, "field 'trajectory'"),
    "no_trajectory": (_without("trajectory"), "field 'trajectory'"),
}


def _register_forged(name: str, edit: Callable[[dict[str, Any]], Any], needle: str) -> None:
    def build(tmp: Path, base: Base) -> Case:
        run = _forged_step_run(tmp, edit)
        return Case(["trajectories", str(run)], (str(run), "task trajectory", "doc 1", needle), keep=[run])

    build.__name__ = "traj_scores_forged_" + name
    case("trajectories")(build)


for _name, (_edit, _needle) in FORGED_STEPS.items():
    _register_forged(_name, _edit, _needle)


@case("trajectories")
def traj_jsonl_id_object(tmp: Path, base: Base) -> Case:  # was written as its Python repr
    p = tmp / "t.jsonl"
    p.write_text(json.dumps({"id": {"run": 1}, "messages": CONV}) + "\n")
    return _compile(tmp, p, f"{p}:1: id: must be a string or an integer", "got dict")
