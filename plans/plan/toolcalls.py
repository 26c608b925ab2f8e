"""Tool calls, the rules two stages share: the tools an Instance of a tool-call task keeps
(``InstanceRecord.tools``: the JSON schemas handed to the chat template's ``tools``), and the registry of reply
parsers (``TOOL_PARSERS``: how a model family writes its calls) whose name a task's ``tool_parser`` records.

Tools are kept in the form transformers' ``apply_chat_template(tools=...)`` and OpenAI-style endpoints take:
``{"type": "function", "function": {"name", "description", "parameters"}}``. ``template_tools`` turns a task's
tools into that form: a bare function (``{"name", "description", "parameters"}``, BFCL's form) is wrapped, and
BFCL's Python type names in its parameter schemas become JSON Schema's (``GORILLA_TYPES``: dict -> object,
float -> number, tuple -> array, any -> string), as BFCL converts them for function-calling models.

A parser turns one reply into a list of ``Call`` (name, arguments) or None when the reply holds no call it
can read (counted as unparsed by the scorer):

- ``hermes`` (Hermes, Qwen 2/2.5/3, many ChatML models): every ``<tool_call>{json}</tool_call>`` block, the
  JSON ``{"name": ..., "arguments": {...}}`` (arguments may be a JSON string); text around the blocks is
  ignored; no block, an unclosed block or a block that is not such JSON: unparsed.
- ``json`` (plain JSON, Llama 3.x style): the whole reply (a ```json fence allowed) is one call object or a
  list of them, arguments under ``arguments`` or ``parameters``.
- ``pythonic`` (BFCL's prompting format, Llama 4 / Llama 3.2 style): ``[f(a=1, b="x"), g(c=[1, 2])]`` (the
  brackets optional), arguments Python literals, read with ``ast`` (never evaluated).

A reply is a model's output, untrusted: each parser reads any reply in time linear in its length. JSON nested
deeper than ``MAX_DEPTH`` is not handed to ``json.loads`` (``plans.limits.json_nesting_within``), Python source
that could nest deeper than its bounds not to ``ast.parse`` (``plans/plan/pysource.py``): such a reply is
unparsed. Tags and fences are found by forward searches, not by backtracking regular expressions.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lmeval.plans.limits import json_nesting_within
from lmeval.plans.plan.pysource import call_source_bounded

# BFCL's gorilla type names -> JSON Schema types (BFCL's GORILLA_TO_OPENAPI, the Python categories' names)
GORILLA_TYPES: dict[str, str] = {
    "dict": "object", "float": "number", "tuple": "array", "any": "string", "list": "array", "bool": "boolean",
}  # fmt: skip
MAX_TOOLS = 1 << 10


@dataclass(frozen=True)
class Call:
    """One parsed tool call."""

    name: str
    arguments: dict[str, Any]


def _schema(value: Any) -> Any:
    """A parameter schema with BFCL's type names made JSON Schema's (recursively)."""
    if isinstance(value, dict):
        out = {k: _schema(v) for k, v in value.items()}
        t = out.get("type")
        if isinstance(t, str) and t in GORILLA_TYPES:
            out["type"] = GORILLA_TYPES[t]
        return out
    if isinstance(value, list):
        return [_schema(v) for v in value]
    return value


def template_tools(tools: Any) -> list[dict[str, Any]]:
    """The tools as a chat template gets them (see the module note); ``ValueError`` naming the problem for
    anything that is not a non-empty list of functions with a name."""
    if type(tools) is not list or not tools:
        raise ValueError("tools must be a non-empty list of function schemas")
    if len(tools) > MAX_TOOLS:
        raise ValueError(f"{len(tools)} tools, over {MAX_TOOLS}")
    out: list[dict[str, Any]] = []
    for i, t in enumerate(tools):
        fn = t.get("function") if isinstance(t, dict) and t.get("type") == "function" else t
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not fn["name"]:
            raise ValueError(f"tool {i} is not a function schema with a name")
        out.append({"type": "function", "function": _schema(fn)})
    return out


def tools_problem(value: Any) -> str | None:
    """Why ``value`` is not an Instance's tools (as ``template_tools`` gives them), or None."""
    if type(value) is not list or not value or len(value) > MAX_TOOLS:
        return "not a non-empty list of tools"
    for i, t in enumerate(value):
        if type(t) is not dict or t.get("type") != "function" or type(t.get("function")) is not dict:
            return f"tool {i} is not a map {{type: function, function: {{...}}}}"
        if type(t["function"].get("name")) is not str:
            return f"tool {i} has no name"
    return None


# --- parsers -----------------------------------------------------------------------------------------------


def _loads(text: str) -> Any:
    """``json.loads(text)``, or ``_NOT_JSON`` when it is not JSON or nests deeper than ``MAX_DEPTH`` (checked
    first, in linear time: a reply is untrusted)."""
    if not json_nesting_within(text):
        return _NOT_JSON
    try:
        return json.loads(text)
    except ValueError:
        return _NOT_JSON


_NOT_JSON = object()


def _call_of(obj: Any) -> Call | None:
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        return None
    args = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(args, str):
        args = _loads(args)
    return Call(obj["name"], args) if isinstance(args, dict) else None


_OPEN, _CLOSE = "<tool_call>", "</tool_call>"


def _blocks(text: str) -> list[str] | None:
    """The text of every ``<tool_call>...</tool_call>`` block, each closed by the first close tag after it; None
    when a block is left open or holds another open tag (or there is none). One pass: each ``find`` starts
    where the last one stopped."""
    blocks: list[str] = []
    pos = 0
    while (start := text.find(_OPEN, pos)) >= 0:
        end = text.find(_CLOSE, start + len(_OPEN))
        if end < 0:
            return None
        blocks.append(text[start + len(_OPEN) : end])
        pos = end + len(_CLOSE)
    if not blocks or any(_OPEN in b for b in blocks):
        return None
    return blocks


def parse_hermes(text: str) -> list[Call] | None:
    blocks = _blocks(text)
    calls: list[Call] = []
    for b in blocks or []:
        c = _call_of(_loads(b))
        if c is None:
            return None
        calls.append(c)
    return calls or None


def _unfenced(s: str) -> str:
    """``s`` (stripped) without a Markdown fence around it: ```` ```json ... ``` ```` or ```` ``` ... ``` ````
    gives what is inside, white space around it stripped; anything else is ``s`` itself."""
    if len(s) < 6 or not s.startswith("```") or not s.endswith("```"):
        return s
    body = s[3:-3]
    return (body[4:] if body.startswith("json") else body).strip()


def parse_json(text: str) -> list[Call] | None:
    obj = _loads(_unfenced(text.strip()))
    items = obj if isinstance(obj, list) else [obj]
    calls = [_call_of(o) for o in items]
    if not calls or any(c is None for c in calls):
        return None
    return calls  # type: ignore[return-value]  # (no None left)


def _dotted(node: ast.expr) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def parse_pythonic(text: str) -> list[Call] | None:
    s = _unfenced(text.strip())
    if not s.startswith("["):
        s = f"[{s}]"
    if not call_source_bounded(s):
        return None
    try:
        tree = ast.parse(s, mode="eval")
    except (SyntaxError, ValueError):
        return None
    if not isinstance(tree.body, ast.List) or not tree.body.elts:
        return None
    calls: list[Call] = []
    for node in tree.body.elts:
        if not isinstance(node, ast.Call) or node.args:
            return None
        name = _dotted(node.func)
        if name is None:
            return None
        args: dict[str, Any] = {}
        for kw in node.keywords:
            if kw.arg is None:
                return None
            try:
                args[kw.arg] = ast.literal_eval(kw.value)
            except (ValueError, TypeError, SyntaxError):
                return None
        calls.append(Call(name, args))
    return calls


TOOL_PARSERS: dict[str, Callable[[str], list[Call] | None]] = {
    "hermes": parse_hermes,
    "json": parse_json,
    "pythonic": parse_pythonic,
}


def parse_calls(parser: str, text: str) -> list[Call] | None:
    """The calls of one reply under the named parser, or None (unparsed); ``KeyError`` for an unknown name."""
    return TOOL_PARSERS[parser](text)
