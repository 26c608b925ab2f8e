"""Recorded conversations as a task (``kind: trajectory``, conf/task/trajectory.yaml): every recorded assistant
step becomes one document, scored as a log-likelihood request of that reply given everything before it, through
the model's chat template (``doc_to_messages``; compiler/build/conversation.py). docs/how-to/trajectories.md.

Two file forms, told apart by their content:

- JSONL: one conversation a line, ``{"id": ..., "messages": [{role, content}, ...]}`` (``id`` optional: the
  line number) or the message list itself; roles system, user, assistant.
- Harbor's ATIF trajectory (one JSON object with ``steps``; ATIF v1.x): a ``system`` step is a system message,
  a ``user`` step a user message, an ``agent`` step an assistant message: its ``message`` text followed by its
  ``tool_calls``, each written as ``<tool_call>{"name": ..., "arguments": ...}</tool_call>`` on a line of its own
  (the Hermes form of plans/plan/toolcalls.py; ATIF records calls as data, a plain chat template has no place for
  them), then its ``observation`` results, joined by a blank line, as a user message (a plan's messages have no
  tool role). The trajectory's id is its ``session_id``. Metrics, timestamps and ``extra`` are not scored.

A document: ``{"trajectory": id, "step": k, "messages": the conversation up to and including its k-th message}``
(k counts messages from 0; only assistant messages after at least one other message are scored).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from lmeval.compiler.errors import CompileError
from lmeval.plans import MAX_ROW_BYTES, InputError, messages_problem, open_regular

TRAJECTORY_VERSION = 1
MAX_FILE_BYTES = 1 << 30


class TrajectoryError(CompileError):
    """A recorded-conversation file that cannot be read as one."""


def _atif(obj: dict[str, Any], path: str) -> tuple[str, list[dict[str, str]]]:
    steps = obj.get("steps")
    if not isinstance(steps, list) or not steps:
        raise TrajectoryError(f"{path}: an ATIF trajectory needs a non-empty list of steps")
    out: list[dict[str, str]] = []
    for i, st in enumerate(steps):
        src = st.get("source") if isinstance(st, dict) else None
        if src not in ("system", "user", "agent"):
            raise TrajectoryError(f"{path}: step {i}: source must be system, user or agent, got {str(src)[:40]!r}")
        assert isinstance(st, dict)
        text = st.get("message") or ""
        if not isinstance(text, str):
            raise TrajectoryError(f"{path}: step {i}: message is not a string")
        if src != "agent":
            out.append({"role": src, "content": text})
            continue
        parts = [text] if text else []
        for call in st.get("tool_calls") or []:
            if not isinstance(call, dict) or not isinstance(call.get("function_name"), str):
                raise TrajectoryError(f"{path}: step {i}: a tool call without a function_name")
            body = {"name": call["function_name"], "arguments": call.get("arguments") or {}}
            parts.append(f"<tool_call>{json.dumps(body, ensure_ascii=False)}</tool_call>")
        out.append({"role": "assistant", "content": "\n".join(parts)})
        results = (st.get("observation") or {}).get("results") or []
        seen = [r.get("content") for r in results if isinstance(r, dict) and r.get("content") is not None]
        if seen:
            out.append(
                {"role": "user", "content": "\n\n".join(c if isinstance(c, str) else json.dumps(c) for c in seen)}
            )
    return str(obj.get("session_id") or Path(path).stem), out


def read_trajectories(path: str) -> tuple[str, str, list[tuple[str, list[dict[str, str]]]]]:
    """(form, sha256 of the file, [(trajectory id, messages)]) of a JSONL or ATIF file; ``TrajectoryError``
    (one line naming the file and line or step) for anything else."""
    try:
        with open_regular(path, what="trajectory file") as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
    except (InputError, OSError) as e:
        raise TrajectoryError(f"{path}: cannot read the trajectory file ({e})") from None
    if len(data) > MAX_FILE_BYTES:
        raise TrajectoryError(f"{path}: over {MAX_FILE_BYTES} bytes")
    sha = hashlib.sha256(data).hexdigest()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise TrajectoryError(f"{path}: not UTF-8 ({e.reason} at byte {e.start})") from None
    try:
        whole = json.loads(text)
    except ValueError:
        whole = None
    if isinstance(whole, dict) and "steps" in whole:
        tid, msgs = _atif(whole, path)
        return "atif", sha, [(tid, _checked(msgs, path, tid))]
    out: list[tuple[str, list[dict[str, str]]]] = []
    for n, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        if len(line) > MAX_ROW_BYTES:
            raise TrajectoryError(f"{path}:{n}: line longer than {MAX_ROW_BYTES} bytes")
        try:
            row = json.loads(line)
        except ValueError as e:
            raise TrajectoryError(f"{path}:{n}: not JSON ({str(e)[:80]})") from None
        tid, raw = str(n), row
        if isinstance(row, dict):
            tid, raw = str(row.get("id", n)), row.get("messages")
        out.append((tid, _checked(raw, f"{path}:{n}", tid)))
    if not out:
        raise TrajectoryError(f"{path}: no recorded conversation in the file")
    ids = [t for t, _ in out]
    if len(set(ids)) != len(ids):
        raise TrajectoryError(f"{path}: trajectory ids repeat ({next(t for t in ids if ids.count(t) > 1)!r})")
    return "jsonl", sha, out


def _checked(msgs: Any, where: str, tid: str) -> list[dict[str, str]]:
    problem = messages_problem(msgs)
    if problem is not None:
        raise TrajectoryError(f"{where}: trajectory {tid!r}: {problem}")
    if not any(m["role"] == "assistant" for m in msgs[1:]):
        raise TrajectoryError(f"{where}: trajectory {tid!r}: no assistant reply after a prompt to score")
    return [dict(m) for m in msgs]


def step_docs(trajectories: list[tuple[str, list[dict[str, str]]]]) -> list[dict[str, Any]]:
    """One document per scored step (see the module note), trajectories in file order."""
    return [
        {"trajectory": tid, "step": k, "messages": msgs[: k + 1]}
        for tid, msgs in trajectories
        for k in range(1, len(msgs))
        if msgs[k]["role"] == "assistant"
    ]


def trajectory_task(path: str, name: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The task config and documents of a trajectory file."""
    form, sha, trajectories = read_trajectories(path)
    config = {
        "task": name,
        "dataset_path": Path(path).name,  # the plan keeps the file's name and sha256, not where it lives
        "test_split": "test",
        "output_type": "loglikelihood",
        "doc_to_messages": "messages",
        "num_fewshot": 0,
        "metadata": {"version": TRAJECTORY_VERSION, "trajectory_file": Path(path).name, "sha256": sha, "form": form},
    }
    return config, step_docs(trajectories)
