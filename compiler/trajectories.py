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

Untrusted files: every field read is type-checked (ATIF's: compiler/atif.py), JSON nested past the plan's 64
levels is refused at its line and path (plans/jsonwhere.py), and a file whose scored steps' conversations pass
``MAX_TRAJECTORY_CHARS`` characters in all (each step repeats the conversation before it: plans/limits.py) is
refused before anything is rendered. Each refusal is one line naming the file, the line or step and the field.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from lmeval.compiler.atif import TrajectoryError, atif_messages
from lmeval.plans import (
    MAX_DEPTH,
    MAX_ROW_BYTES,
    MAX_TRAJECTORY_CHARS,
    InputError,
    deep_path,
    messages_problem,
    open_regular,
    path_text,
    too_deep_at,
    value_problem,
)

__all__ = ["TrajectoryError", "read_trajectories", "step_docs", "trajectory_task"]

TRAJECTORY_VERSION = 1
MAX_FILE_BYTES = 1 << 30


def _parsed(text: str, where: str, line: int = 1) -> Any:
    """``json.loads(text)``; ``TrajectoryError`` naming the line and the path of a value nested too deep (json
    recurses: a few thousand levels end in RecursionError) or breaking the plan's other limits; ``ValueError``
    when it is not JSON."""
    try:
        value = json.loads(text)
    except RecursionError:
        found = too_deep_at(text, MAX_DEPTH)
        n, at = found if found is not None else (1, [])
        raise TrajectoryError(
            f"{where}:{line + n - 1}: {path_text(at)}: nested deeper than {MAX_DEPTH} levels"
        ) from None
    problem = value_problem(value) if type(value) is not dict or "steps" not in value else None
    if problem is not None:  # (an ATIF trajectory is checked field by field: compiler/atif.py)
        inner = deep_path(value, MAX_DEPTH) if problem[0] == "nesting_too_deep" else None
        raise TrajectoryError(f"{where}:{line}: {path_text(inner) + ': ' if inner else ''}{problem[1]}")
    return value


def read_trajectories(path: str) -> tuple[str, str, list[tuple[str, list[dict[str, str]]]]]:
    """(form, sha256 of the file, [(trajectory id, messages)]) of a JSONL or ATIF file; ``TrajectoryError``
    (one line naming the file and line or step, and the field) for anything else."""
    try:
        with open_regular(path, max_bytes=MAX_FILE_BYTES, what="trajectory file") as fh:
            data = fh.read()
    except (InputError, OSError) as e:
        raise TrajectoryError(f"{path}: cannot read the trajectory file ({e})") from None
    sha = hashlib.sha256(data).hexdigest()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise TrajectoryError(f"{path}: not UTF-8 ({e.reason} at byte {e.start})") from None
    del data
    try:
        whole = _parsed(text, path)  # (a deep first line of JSONL is refused here, at its line: the same error)
    except ValueError:  # several values: JSONL, read line by line
        whole = None
    if isinstance(whole, dict) and "steps" in whole:
        tid, msgs = atif_messages(whole, path)
        return "atif", sha, [(tid, _checked(msgs, path, tid))]
    out: list[tuple[str, list[dict[str, str]]]] = []
    for n, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        if len(line) > MAX_ROW_BYTES:
            raise TrajectoryError(f"{path}:{n}: line longer than {MAX_ROW_BYTES} bytes")
        try:
            row = _parsed(line, path, n)
        except ValueError as e:
            raise TrajectoryError(f"{path}:{n}: not JSON ({str(e)[:80]})") from None
        tid, raw = str(n), row
        if isinstance(row, dict):
            rid = row.get("id", n)
            if type(rid) not in (str, int):
                raise TrajectoryError(f"{path}:{n}: id: must be a string or an integer, got {type(rid).__name__}")
            tid, raw = str(rid), row.get("messages")
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


def _check_size(trajectories: list[tuple[str, list[dict[str, str]]]], path: str) -> None:
    """``TrajectoryError`` when the scored steps' conversations hold more than ``MAX_TRAJECTORY_CHARS`` in all
    (each step's request repeats the conversation before its reply: see plans/limits.py), before any is built."""
    total = 0
    for tid, msgs in trajectories:
        upto = 0
        for k, m in enumerate(msgs):
            upto += len(m["content"])
            if k and m["role"] == "assistant":
                total += upto
                if total > MAX_TRAJECTORY_CHARS:
                    raise TrajectoryError(
                        f"{path}: trajectory {tid!r} message {k}: the scored steps' conversations pass "
                        f"{MAX_TRAJECTORY_CHARS} characters in all (the limit: each step's request repeats the "
                        "conversation before its reply); split the file or shorten its conversations"
                    )


def trajectory_task(path: str, name: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The task config and documents of a trajectory file."""
    form, sha, trajectories = read_trajectories(path)
    _check_size(trajectories, path)
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
