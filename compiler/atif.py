"""Harbor's ATIF trajectory (Agent Trajectory Interchange Format, v1.x; the RFC's schema as of v1.4) as chat
messages (compiler/trajectories.py's module note says how each step maps). Every field that is read is checked
against the schema's type before it is used: ``message`` a string; ``tool_calls`` an array of objects, each with
a string ``function_name`` and an object ``arguments`` (agent steps only); ``observation`` an object whose
``results`` is an array of objects, each ``content`` a string; ``session_id`` a string. An optional field may be
absent or null. Anything else is a ``TrajectoryError`` naming the file, the step (its index in ``steps``) and
the field: nothing of a malformed step is dropped or guessed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lmeval.compiler.errors import CompileError
from lmeval.plans import MAX_DEPTH, deep_path, path_text, value_problem

SOURCES = ("system", "user", "agent")


class TrajectoryError(CompileError):
    """A recorded-conversation file that cannot be read as one."""


def _kind(v: Any) -> str:
    if v is None:
        return "null"
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}.get(type(v), "a number")


def _opt(d: dict[str, Any], key: str, want: type, where: str, what: str) -> Any:
    """``d[key]``: None when absent or null, else a ``want`` within the plan's limits (``TrajectoryError``
    naming ``where`` + key otherwise)."""
    v = d.get(key)
    if v is None:
        return None
    if type(v) is not want:
        raise TrajectoryError(f"{where}{key}: must be {what}, got {_kind(v)}")
    problem = value_problem(v)
    if problem is not None:
        at = deep_path(v, MAX_DEPTH) if problem[0] == "nesting_too_deep" else None
        raise TrajectoryError(f"{path_text(at or [], where + key)}: {problem[1]}")
    return v


def _call_text(call: Any, where: str) -> str:
    if type(call) is not dict:
        raise TrajectoryError(f"{where}: a tool call must be an object, got {_kind(call)}")
    name = call.get("function_name")
    if type(name) is not str or not name:
        raise TrajectoryError(f"{where}.function_name: must be a non-empty string, got {_kind(name)}")
    _opt(call, "tool_call_id", str, where + ".", "a string")
    args = _opt(call, "arguments", dict, where + ".", "an object (the call's arguments)")
    body = {"name": name, "arguments": args if args is not None else {}}
    return f"<tool_call>{json.dumps(body, ensure_ascii=False)}</tool_call>"


def _results_text(obs: dict[str, Any], where: str) -> str | None:
    results = obs.get("results")
    if type(results) is not list:
        raise TrajectoryError(f"{where}.results: must be an array of results, got {_kind(results)}")
    seen: list[str] = []
    for j, r in enumerate(results):
        if type(r) is not dict:
            raise TrajectoryError(f"{where}.results[{j}]: a result must be an object, got {_kind(r)}")
        _opt(r, "source_call_id", str, f"{where}.results[{j}].", "a string")
        content = _opt(r, "content", str, f"{where}.results[{j}].", "a string")
        if content is not None:
            seen.append(content)
    return "\n\n".join(seen) if seen else None


def atif_messages(obj: dict[str, Any], path: str) -> tuple[str, list[dict[str, str]]]:
    """(trajectory id, messages) of a parsed ATIF trajectory."""
    steps = obj.get("steps")
    if type(steps) is not list or not steps:
        raise TrajectoryError(f"{path}: steps: an ATIF trajectory needs a non-empty array of steps")
    sid = _opt(obj, "session_id", str, f"{path}: ", "a string")
    out: list[dict[str, str]] = []
    for i, st in enumerate(steps):
        where = f"{path}: steps[{i}]"
        if type(st) is not dict:
            raise TrajectoryError(f"{where}: a step must be an object, got {_kind(st)}")
        src = st.get("source")
        if src not in SOURCES:
            raise TrajectoryError(f"{where}.source: must be system, user or agent, got {str(src)[:40]!r}")
        text = _opt(st, "message", str, where + ".", "a string") or ""
        calls = _opt(st, "tool_calls", list, where + ".", "an array of tool calls") or []
        obs = _opt(st, "observation", dict, where + ".", "an object with results")
        seen = _results_text(obs, f"{where}.observation") if obs is not None else None
        if src != "agent":
            if calls:
                raise TrajectoryError(f"{where}.tool_calls: only an agent step makes tool calls (source is {src})")
            out.append({"role": src, "content": text})  # (a system step's observation is not scored)
            continue
        parts = [text] if text else []
        parts += [_call_text(c, f"{where}.tool_calls[{k}]") for k, c in enumerate(calls)]
        out.append({"role": "assistant", "content": "\n".join(parts)})
        if seen is not None:
            out.append({"role": "user", "content": seen})
    return sid or Path(path).stem, out
