"""A model's reply is untrusted (#64): any reply is read by the tool-call parsers (``plans/plan/toolcalls.py``) as
calls or as unparsed (None), never as a RecursionError or MemoryError, and in one linear pass. Replies nested
far past the recursion limit (JSON for hermes and json, Python for pythonic) are unparsed; calls nested within
``MAX_DEPTH`` still parse as before. The bounds' scans are checked here by what they accept and refuse; their
time through ``lmeval score`` under a time limit (tests/scorer/test_toolcall_replies.py)."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from lmeval.plans import MAX_DEPTH, Call, json_nesting_within, parse_calls
from lmeval.plans.plan import pysource

DEEP = 100 * sys.getrecursionlimit()  # far past the interpreter's recursion limit


def nested_json(depth: int) -> Any:
    """``{"x": [[...[1]...]]}``: an argument map whose value nests ``depth`` lists deep."""
    return {"x": json.loads("[" * depth + "1" + "]" * depth)}


def hermes(body: str) -> str:
    return f"Let me call it. <tool_call>{body}</tool_call>"


def deep_json(depth: int = DEEP) -> str:
    return '{"name": "f", "arguments": {"x": ' + "[" * depth + "1" + "]" * depth + "}}"


HOSTILE = [
    ("hermes", hermes(deep_json())),
    ("hermes", hermes('{"name": "f", "arguments": ' + json.dumps("[" * DEEP) + "}")),  # arguments as JSON text
    ("hermes", hermes("{" * DEEP)),
    ("json", deep_json()),
    ("json", "[" * DEEP + "]" * DEEP),
    ("json", '{"a":' * DEEP + "1" + "}" * DEEP),
    ("json", "```json\n" + deep_json() + "\n```"),
    ("pythonic", "f(x=" + "[" * DEEP + "]" * DEEP + ")"),
    ("pythonic", "f(x=" + "-" * DEEP + "1)"),  # MemoryError in ast.parse before the fix
    ("pythonic", "f(x=" + "not " * DEEP + "1)"),
    ("pythonic", "f(x=" + "~" * DEEP + "1)"),
    ("pythonic", "f(x=" + "2**" * DEEP + "1)"),
    ("pythonic", "f(x=" + "lambda: " * DEEP + "1)"),
    ("pythonic", "f(x=" + "1if 1else " * DEEP + "1)"),  # a keyword chain glued to numbers
    ("pythonic", "f(x=1" + "+1" * DEEP + ")"),  # a long chain: RecursionError building the AST
    ("pythonic", "f(x=a" + ".a" * DEEP + ")"),
    ("pythonic", "f(x=a" + "[0]" * DEEP + ")"),
    ("pythonic", "a." * DEEP + "f(x=1)"),  # the function's dotted name
    ("pythonic", "```\n[f(x=" + "-" * DEEP + "1)]\n```"),
]


@pytest.mark.parametrize(("parser", "reply"), HOSTILE, ids=[f"{p}-{i}" for i, (p, _) in enumerate(HOSTILE)])
def test_replies_nested_past_the_recursion_limit_are_unparsed(parser: str, reply: str) -> None:
    assert parse_calls(parser, reply) is None


@pytest.mark.parametrize("parser", ["hermes", "json", "pythonic"])
def test_calls_nested_within_the_bound_still_parse(parser: str) -> None:
    depth = MAX_DEPTH - 4  # the reply's own levels (list, call, arguments) around the value
    args = nested_json(depth)
    reply = {
        "hermes": hermes(json.dumps({"name": "f", "arguments": args})),
        "json": json.dumps([{"name": "f", "parameters": args}]),
        "pythonic": "[f(x=" + "[" * depth + "1" + "]" * depth + ")]",
    }[parser]
    assert parse_calls(parser, reply) == [Call("f", args)]
    deeper = reply.replace("[" * depth, "[" * (depth + 8)).replace("]" * depth, "]" * (depth + 8))
    assert parse_calls(parser, deeper) is None


def test_unclosed_tags_and_fences_are_unparsed() -> None:
    assert parse_calls("hermes", "<tool_call>" * 30_000) is None
    assert parse_calls("hermes", hermes('{"name": "f", "arguments": {}}') + "<tool_call>") is None
    assert parse_calls("hermes", '<tool_call><tool_call>{"name": "f"}</tool_call>') is None  # a block in a block
    two = hermes('{"name": "f", "arguments": {}}') + hermes('{"name": "g", "arguments": {"y": 2}}')
    assert parse_calls("hermes", two) == [Call("f", {}), Call("g", {"y": 2})]
    for parser in ("json", "pythonic"):
        assert parse_calls(parser, "```" + " " * 50_000 + "x") is None  # the fence regex backtracked cubically
    assert parse_calls("json", '```json\n {"name": "f"} \n```') == [Call("f", {})]
    assert parse_calls("pythonic", "```\nf(x=1)\n```") == [Call("f", {"x": 1})]


@pytest.mark.parametrize(
    ("text", "within"),
    [
        ("[" * MAX_DEPTH + "]" * MAX_DEPTH, True),
        ("[" * (MAX_DEPTH + 1), False),
        ('["' + "[" * 1000 + '"]', True),  # brackets in a string do not nest
        (r'["\"' + "[" * 1000 + '"]', True),  # nor after an escaped quote
        ('"' + '\\"' * 1000, True),  # an unterminated string: json.loads stops there
        ("]]]]" + "[" * MAX_DEPTH, True),  # closing brackets never go below zero
    ],
)
def test_json_nesting_scan(text: str, within: bool) -> None:
    assert json_nesting_within(text) is within


@pytest.mark.parametrize(
    ("source", "bounded"),
    [
        ("[f(x=1, y=-2.5e-3, z=1+2j, w=0x1F, v=...), m.g(s='a' \"b\", b=rb'\\x', n=None, t=(1,), d={1: {2}})]", True),
        ('[f(x=\'\'\'a\nb\'\'\', y="""c\\"d""")]  # a comment (, [ {', True),
        ("[f(x='-' * 9)]", False),  # an operator no literal has
        ("[f(x=not 1)]", False),  # a keyword
        ('[f(x=f"{1}")]', False),  # an f-string (never a literal)
        ("[f(x=1if 1 else 2)]", False),  # a number glued to a keyword
        ("[f(x='open)]", False),  # a string left open
        ("[f(x=--1)]", True),
        ("[f(x=---1)]", False),  # three signs in a row
        ("[f(x=1)]]", False),  # a bracket closed that was never opened
        ("[" + "a." * (pysource.MAX_CHAIN - 4) + "f()]", True),
        ("[" + "a." * pysource.MAX_CHAIN + "f()]", False),
    ],
)
def test_python_source_scan(source: str, bounded: bool) -> None:
    assert pysource.call_source_bounded(source) is bounded
