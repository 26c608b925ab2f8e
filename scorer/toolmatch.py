"""Tool calls scored as BFCL's AST categories score them (gorilla ``bfcl_eval/eval_checker/ast_eval/
ast_checker.py``, Python rules; re-implemented from its documented behaviour, not copied).

A reply is parsed into calls by the task's ``tool_parser`` (``plans/plan/toolcalls.py``); no calls read: unparsed
(wrong, and counted in ``tool_call_unparsed``). The expected calls are a list of ``{function: {argument:
[acceptable values]}}``. A reply is right when it has exactly as many calls as expected and the expected calls
can be matched to distinct calls of the reply in any order (BFCL's no-order check: each expected call, in turn,
takes the first unmatched call that passes), a call passing when:

- its function is the expected one and is among the tools given (its schema gives the types);
- every ``required`` parameter of the schema is given, and every given argument is a parameter of the schema;
- each argument has the schema's type (integer: an int, not a bool; float/number: an int or a float; string,
  boolean, array/tuple (a list), dict/object (a map); ``any``: anything), array items their ``items`` type;
- its value is among the acceptable values: strings compared after removing spaces and ``,./-_*^`` and
  lowercasing (BFCL's ``standardize_string``), lists element by element so, maps key by key (each acceptable
  map's keys: given ones must match, missing ones must accept ""), other values by Python equality;
- every expected argument it leaves out accepts "" (optional).
"""

from __future__ import annotations

import json
import re
from typing import Any

from lmeval.common import quoted
from lmeval.plans import Call, json_nesting_within, parse_calls

_STRIP = re.compile(r"[ ,./\-_*^]")
_TYPES: dict[str, tuple[type, ...]] = {
    "integer": (int,), "float": (int, float), "number": (int, float), "string": (str,), "boolean": (bool,),
    "bool": (bool,), "array": (list, tuple), "tuple": (list, tuple), "list": (list, tuple), "dict": (dict,),
    "object": (dict,),
}  # fmt: skip


def standardize(s: str) -> str:
    """BFCL's ``standardize_string``."""
    return _STRIP.sub("", s).lower().replace("'", '"')


def _type_ok(value: Any, schema: dict[str, Any]) -> bool:
    t = schema.get("type")
    if not isinstance(t, str) or t == "any" or t not in _TYPES:
        return True
    if isinstance(value, bool) and t not in ("boolean", "bool"):
        return False
    if not isinstance(value, _TYPES[t]):
        return False
    items = schema.get("items")
    if isinstance(value, list | tuple) and isinstance(items, dict):
        return all(_type_ok(v, items) for v in value)
    return True


def _norm(v: Any) -> Any:
    """A value as compared: strings standardized, lists and maps element by element, numbers as they are."""
    if isinstance(v, str):
        return standardize(v)
    if isinstance(v, list | tuple):
        return [_norm(x) for x in v]
    if isinstance(v, dict):
        return {k: _norm(x) for k, x in v.items()}
    return v


def _same(value: Any, acceptable: Any) -> bool:
    if isinstance(acceptable, dict) and isinstance(value, dict):
        for k, v in value.items():
            if k not in acceptable or not _value_ok(v, acceptable[k]):
                return False
        return all(k in value or "" in (opts if isinstance(opts, list) else [opts]) for k, opts in acceptable.items())
    if isinstance(acceptable, list) and isinstance(value, list | tuple):
        return len(acceptable) == len(value) and all(_same(v, a) for v, a in zip(value, acceptable, strict=True))
    if isinstance(value, bool) != isinstance(acceptable, bool):
        return False
    return bool(_norm(value) == _norm(acceptable))


def _value_ok(value: Any, acceptable: Any) -> bool:
    """``value`` equals one of the ``acceptable`` values (a map of a nested dict lists its own per key)."""
    options = acceptable if isinstance(acceptable, list) else [acceptable]
    return any(_same(value, a) for a in options if a != "")


def call_ok(call: Call, expected: dict[str, dict[str, list[Any]]], tools: dict[str, dict[str, Any]]) -> bool:
    """Whether ``call`` is the one expected call ``{function: {argument: [acceptable values]}}``."""
    ((fname, answers),) = expected.items()
    schema = tools.get(fname)
    if call.name != fname or schema is None:
        return False
    params = schema.get("parameters") or {}
    props = params.get("properties") or {}
    if any(p not in call.arguments for p in params.get("required") or []):
        return False
    for arg, value in call.arguments.items():
        if arg not in props or not _type_ok(value, props[arg]):
            return False
        if arg not in answers or not _value_ok(value, answers[arg]):
            return False
    return all(arg in call.arguments or "" in opts for arg, opts in answers.items())


def calls_ok(calls: list[Call], expected: list[dict[str, Any]], tools: dict[str, dict[str, Any]]) -> bool:
    """BFCL's no-order check of a reply's calls against the expected ones (see the module note)."""
    if len(calls) != len(expected):
        return False
    used: set[int] = set()
    for exp in expected:
        hit = next((j for j, c in enumerate(calls) if j not in used and call_ok(c, exp, tools)), None)
        if hit is None:
            return False
        used.add(hit)
    return True


def tool_schemas(tools: Any) -> dict[str, dict[str, Any]]:
    """name -> function schema of a task's tools (bare BFCL functions or ``{type: function, function}``)."""
    out: dict[str, dict[str, Any]] = {}
    for t in tools if isinstance(tools, list) else []:
        fn = t.get("function") if isinstance(t, dict) and t.get("type") == "function" else t
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            out[fn["name"]] = fn
    return out


def score_reply(reply: str, expected: list[dict[str, Any]], tools: Any, parser: str) -> dict[str, float]:
    """``{"tool_call": 1.0 | 0.0, "tool_call_unparsed": 1.0 | 0.0}`` for one reply."""
    calls = parse_calls(parser, reply)
    if calls is None:
        return {"tool_call": 0.0, "tool_call_unparsed": 1.0}
    return {"tool_call": float(calls_ok(calls, expected, tool_schemas(tools))), "tool_call_unparsed": 0.0}


def expected_calls(gold: Any) -> list[dict[str, Any]]:
    """The expected calls from a document's target: ``{"calls": [...]}`` or the list, or either's JSON text;
    ``ValueError`` saying what is wrong (null, not a list, a call that is not ``{function: {argument: [values]}}``)."""
    try:
        value = json.loads(gold) if isinstance(gold, str) and json_nesting_within(gold) else gold
    except ValueError:
        value = gold
    if isinstance(value, dict) and set(value) == {"calls"}:
        value = value["calls"]
    if not isinstance(value, list):
        got = "null" if value is None else f"a {type(value).__name__} {quoted(value)}"
        raise ValueError(f"the expected calls are {got}, not a list {_FORM}")
    for i, c in enumerate(value):
        args = next(iter(c.values())) if isinstance(c, dict) and len(c) == 1 else None
        if (
            not isinstance(args, dict)
            or not isinstance(next(iter(c)), str)
            or not all(isinstance(v, list) for v in args.values())
        ):
            raise ValueError(f"expected call {i} is {quoted(c)}, not {_FORM}")
    return value


_FORM = "{function: {argument: [acceptable values]}}"
