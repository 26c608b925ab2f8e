"""Tool calls scored by BFCL's AST rules (#56, acceptance 2, scoring side): a fixed set of replies (right call,
wrong argument, wrong function, extra call, unparsable, parallel calls in another order) scored end to end by
``lmeval score`` to the hand-computed result; the rules one by one; the parsers; and BFCL's own answers, written
as replies, scoring 1 on every shipped question (0 when one value is changed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml

from lmeval.compiler import compile_plan
from lmeval.plans import Call, parse_calls, read_plan
from lmeval.plans.plan import write_plan
from lmeval.plans.results import RunManifest, polars_schema, write_manifest
from lmeval.scorer.score import score_run
from lmeval.scorer.toolmatch import calls_ok, score_reply, tool_schemas
from tests.bounds import ARITHMETIC
from tests.compiler.test_tool_calls import hermes_model
from tests.support import jsonl_rows

AREA = {
    "name": "area",
    "description": "Area of a triangle.",
    "parameters": {
        "type": "dict",
        "properties": {
            "base": {"type": "integer", "description": "base"},
            "height": {"type": "integer", "description": "height"},
            "unit": {"type": "string", "description": "unit (default 'units')"},
        },
        "required": ["base", "height"],
    },
}
SIDES = {"type": "array", "items": {"type": "float"}, "description": "sides"}
PERIM = {"name": "perimeter", "description": "Perimeter.",
         "parameters": {"type": "dict", "properties": {"sides": SIDES}, "required": ["sides"]}}  # fmt: skip
ONE = [{"area": {"base": [10], "height": [5], "unit": ["units", ""]}}]
TWO = [{"area": {"base": [10], "height": [5], "unit": ["units", ""]}}, {"perimeter": {"sides": [[3.0, 4.0, 5.0]]}}]


def tc(fn: str, **args: Any) -> str:
    return call_text(fn, args)


def call_text(fn: str, args: dict[str, Any]) -> str:
    return "<tool_call>\n" + json.dumps({"name": fn, "arguments": args}) + "\n</tool_call>"


# (reply, expected calls, right, unparsed)
CASES = [
    (tc("area", base=10, height=5), ONE, 1.0, 0.0),  # right call (optional unit left out)
    (tc("area", base=11, height=5), ONE, 0.0, 0.0),  # wrong argument
    (tc("perimeter", sides=[3, 4, 5]), ONE, 0.0, 0.0),  # wrong function
    (tc("area", base=10, height=5) + tc("area", base=10, height=5), ONE, 0.0, 0.0),  # extra call
    ("The area is 25 square units.", ONE, 0.0, 1.0),  # unparsable
    (tc("perimeter", sides=[3, 4, 5]) + tc("area", base=10, height=5, unit="Units"), TWO, 1.0, 0.0),  # any order
]


def _task(tmp: Path) -> Path:
    """A tool-call task of ``CASES``' documents, in an include folder."""
    d = tmp / "tasks"
    d.mkdir()
    rows = [{"id": i, "messages": [{"role": "user", "content": f"question {i}"}], "tools": [AREA, PERIM],
             "answer": exp} for i, (_, exp, _, _) in enumerate(CASES)]  # fmt: skip
    (d / "calls.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = {"task": "calls", "dataset_path": "json", "dataset_kwargs": {"data_files": {"test": str(d / "calls.jsonl")}},
           "test_split": "test", "output_type": "generate_until", "doc_to_messages": "messages",
           "doc_to_tools": "tools",
           "doc_to_target": "{{ {'calls': answer} | tojson }}", "tool_parser": "hermes",
           "generation_kwargs": {"until": [], "max_gen_toks": 64},
           "metric_list": [{"metric": "tool_call", "aggregation": "mean", "higher_is_better": True}]}  # fmt: skip
    (d / "calls.yaml").write_text(yaml.safe_dump(cfg))
    return d


def test_fixed_replies_score_the_hand_computed_result(tmp_path: Path) -> None:
    tasks, model = _task(tmp_path), hermes_model(tmp_path / "model")
    plan = tmp_path / "plan.msgpack"
    args = [f"run.include_path={tasks}", "run.tasks=[calls]", "run.apply_chat_template=true", f"model.path={model}"]
    write_plan(plan, *compile_plan(args))
    p = read_plan(plan)
    rows = []
    for inst in p.instances:
        text = CASES[inst.doc_id][0]
        rows.append({"instance_id": inst.instance_id, "task": inst.task, "doc_id": inst.doc_id, "idx": inst.idx,
                     "request_type": inst.request_type, "request_hash": inst.request_hash, "response": text,
                     "responses": [text], "finish_reason": "stop"})  # fmt: skip
    rdir = tmp_path / "results"
    rdir.mkdir()
    pl.DataFrame(rows, schema=polars_schema()).write_parquet(rdir / "part-00000.parquet")
    write_manifest(rdir, RunManifest(plan_hash=p.header.plan_hash, plan_path=str(plan), model={"name": "fake"},
                                     backend="fake"))  # fmt: skip
    score_run(str(rdir))
    res = json.loads((rdir / "results.json").read_text())["results"]["calls"]
    # hand-computed: right on docs 0 and 5 of 6; unparsed: doc 4 of 6
    assert ARITHMETIC.close(res["tool_call,none"], 2 / 6)
    assert ARITHMETIC.close(res["tool_call_unparsed,none"], 1 / 6)
    assert res["tool_call_stderr,none"] > 0


@pytest.mark.parametrize(("reply", "expected", "right", "unparsed"), CASES)
def test_each_reply(reply: str, expected: list[dict[str, Any]], right: float, unparsed: float) -> None:
    assert score_reply(reply, expected, [AREA, PERIM], "hermes") == {"tool_call": right, "tool_call_unparsed": unparsed}


TOOLS = tool_schemas([AREA, PERIM])


@pytest.mark.parametrize(
    ("args", "ok"),
    [
        ({"base": 10, "height": 5, "unit": "units"}, True),
        ({"base": 10, "height": 5, "unit": " Units."}, True),  # strings standardized (spaces, punctuation, case)
        ({"base": 10, "height": 5, "unit": "cm"}, False),  # not an acceptable value
        ({"base": 10}, False),  # a required argument missing
        ({"base": 10, "height": 5, "color": "red"}, False),  # not a parameter of the schema
        ({"base": 10.0, "height": 5}, False),  # integer parameter given a float
        ({"base": True, "height": 5}, False),  # a bool is not an integer
        ({"base": "10", "height": 5}, False),  # nor is a string
    ],
)
def test_simple_rules(args: dict[str, Any], ok: bool) -> None:
    assert calls_ok([Call("area", args)], ONE, TOOLS) is ok


def test_float_parameters_take_integers_and_items_are_typed() -> None:
    exp = [{"perimeter": {"sides": [[3.0, 4.0, 5.0]]}}]
    assert calls_ok([Call("perimeter", {"sides": [3, 4, 5]})], exp, TOOLS)
    assert not calls_ok([Call("perimeter", {"sides": [3, 4, "5"]})], exp, TOOLS)
    assert not calls_ok([Call("perimeter", {"sides": [3, 5, 4]})], exp, TOOLS)  # a list is ordered


def test_a_missing_expected_argument_must_accept_empty() -> None:
    exp = [{"area": {"base": [10], "height": [5], "unit": ["units"]}}]  # unit not optional here
    assert not calls_ok([Call("area", {"base": 10, "height": 5})], exp, TOOLS)


def test_parallel_calls_are_matched_in_any_order_but_counted() -> None:
    a, p = Call("area", {"base": 10, "height": 5}), Call("perimeter", {"sides": [3, 4, 5]})
    assert calls_ok([a, p], TWO, TOOLS) and calls_ok([p, a], TWO, TOOLS)
    assert not calls_ok([a], TWO, TOOLS) and not calls_ok([a, a], TWO, TOOLS) and not calls_ok([a, p, a], TWO, TOOLS)


def test_parsers() -> None:
    assert parse_calls("hermes", 'ok <tool_call>{"name": "f", "arguments": "{\\"x\\": 1}"}</tool_call>') == [
        Call("f", {"x": 1})
    ]
    assert parse_calls("hermes", '<tool_call>{"name": "f", "arguments": {}}') is None  # unclosed
    assert parse_calls("hermes", "<tool_call>f(x=1)</tool_call>") is None
    assert parse_calls("json", '```json\n[{"name": "f", "parameters": {"x": 1}}]\n```') == [Call("f", {"x": 1})]
    assert parse_calls("json", '{"name": "f"} and more') is None
    assert parse_calls("pythonic", '[math.hypot(x=4, y=5), g(s="a")]') == [
        Call("math.hypot", {"x": 4, "y": 5}),
        Call("g", {"s": "a"}),
    ]
    assert parse_calls("pythonic", "f(__import__('os'))") is None  # literals only, never evaluated
    assert parse_calls("pythonic", "f(x=open('a'))") is None


def _first(values: list[Any]) -> Any:
    """An argument's first acceptable value; in a map, each key's own first (keys whose first is "" left out)."""
    return _pick(values[0])


def _pick(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _first(vs) for k, vs in v.items() if vs and vs[0] != ""}
    if isinstance(v, list):
        return [_pick(x) for x in v]
    return v


def _oracle(expected: list[dict[str, Any]], tools: list[dict[str, Any]], change: bool = False) -> str:
    """BFCL's answer as a Hermes reply: each argument's first acceptable value, an optional one (first value "")
    left out, as is one the schema does not have; a required one its first value that is not ""."""
    out = []
    schemas = tool_schemas(tools)
    for i, call in enumerate(expected):
        ((name, answers),) = call.items()
        params = schemas[name]["parameters"]
        args = {}
        for k, v in answers.items():
            if k in params["required"]:
                args[k] = _first([x for x in v if x != ""])
            elif v and v[0] != "" and k in params["properties"]:
                args[k] = _first(v)
        if change and i == 0:
            k = next(k for k, v in args.items() if isinstance(v, int | float | str) and not isinstance(v, bool))
            args[k] = args[k] + 1 if not isinstance(args[k], str) else args[k] + "zz"
        out.append(call_text(name, args))
    return "".join(out)


# BFCL answers no reply can match, under BFCL's rules too: their values do not have the schema's types
UNSATISFIABLE = {
    "parallel_multiple_21": "x and y: strings (\"data['sales']\") for arrays of floats",
    "parallel_multiple_94": "sort_list elements: strings for an array of integers",
}


@pytest.mark.parametrize("category", ["simple_python", "multiple", "parallel", "parallel_multiple"])
def test_bfcl_answers_score_one_and_a_changed_value_zero(category: str) -> None:
    questions = {r["id"]: r for r in jsonl_rows("bfcl", category)}
    changed = n = 0
    refused: set[str] = set()
    for ans in jsonl_rows("bfcl", f"{category}_answers"):
        tools, gt = questions[ans["id"]]["function"], ans["ground_truth"]
        if score_reply(_oracle(gt, tools), gt, tools, "hermes")["tool_call"] != 1.0:
            refused.add(ans["id"])
        try:
            changed += score_reply(_oracle(gt, tools, change=True), gt, tools, "hermes")["tool_call"] == 1.0
        except StopIteration:  # no scalar argument to change
            changed += 0
        n += 1
    assert n == {"simple_python": 400}.get(category, 200)
    assert refused == {k for k in UNSATISFIABLE if k.rsplit("_", 1)[0] == category}
    assert changed == 0
