"""Tool-call tasks' hostile settings and targets (#64): ``tool_parser`` given as a list or a map (compile: a one-line
error naming the YAML, task and field, not a traceback), and expected calls that are null or a call whose
arguments are null (score: a one-line error naming the plan, task, document and field ``doc_to_target``,
nothing written). The hostile replies themselves score (as unparsed): tests/scorer/test_toolcall_replies.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.hostile.corpus import Base, Case, case, lmeval
from tests.scorer.test_toolcall_replies import RIGHT, forged_run, tool_task
from tests.scorer.test_toolmatch import ONE


def _parser_case(tmp: Path, parser: str) -> Case:
    args = tool_task(tmp, "hermes", [ONE])
    yaml_path = tmp / "tasks" / "calls.yaml"
    yaml_path.write_text(yaml_path.read_text().replace("tool_parser: hermes", f"tool_parser: {parser}"))
    return Case(
        ["compile", *args, "--out", str(tmp / "out.msgpack")],
        (str(yaml_path), "task calls", "field tool_parser", "hermes, json, pythonic"),
        absent=[tmp / "out.msgpack"],
    )


@case("toolcalls")
def toolcalls_parser_is_a_list(tmp: Path, base: Base) -> Case:
    return _parser_case(tmp, "[hermes]")


@case("toolcalls")
def toolcalls_parser_is_a_map(tmp: Path, base: Base) -> Case:
    return _parser_case(tmp, "{name: hermes}")


def _target_case(tmp: Path, bad: Any, *needles: str) -> Case:
    plan = tmp / "plan.msgpack"
    p = lmeval("compile", *tool_task(tmp, "hermes", [ONE, bad, ONE]), "--out", str(plan), cwd=tmp)
    assert p.returncode == 0, p.stderr
    r = forged_run(plan, [RIGHT["hermes"]] * 3, tmp / "r")
    return Case(
        ["score", str(r), "--plan", str(plan), "--quiet"],
        (str(plan), "task calls doc 1", "field doc_to_target", *needles),
        keep=[r / "part-00000.parquet", r / "manifest.json"],  # (the score index beside them is a cache)
        absent=[r / "results.json"],
    )


@case("toolcalls")
def toolcalls_expected_calls_null(tmp: Path, base: Base) -> Case:
    return _target_case(tmp, None, "the expected calls are null")


@case("toolcalls")
def toolcalls_expected_call_arguments_null(tmp: Path, base: Base) -> Case:
    return _target_case(tmp, [{"area": None}], "expected call 0 is {'area': None}")
