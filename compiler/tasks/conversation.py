"""lmeval's conversation fields of a task config, checked (one-line errors naming file, task and field):

- ``doc_to_messages: FIELD``: the document field holding the chat messages (a list of ``{role, content}``, or
  BFCL's list of turns, each a list of messages, taken in order). A ``generate_until`` task sends them as the
  prompt (after the few-shot turns); a ``loglikelihood`` task scores its last message, an assistant reply, given
  everything before it (a recorded step: docs/how-to/trajectories.md). Needs ``run.apply_chat_template``.
- ``doc_to_tools: FIELD``: the document field holding the tools (JSON schemas, ``plans/plan/toolcalls.py``), handed
  to the chat template as transformers' ``apply_chat_template(tools=...)`` does and kept in the plan
  (``InstanceRecord.tools``). A ``generate_until`` task only; needs ``run.apply_chat_template``.
- ``tool_parser: NAME``: how a reply is read into calls (``plans.TOOL_PARSERS``: hermes, json, pythonic); the
  ``tool_call`` metric scores with it. Part of the task config, so of the plan's identity.
- ``doc_join: {split: NAME, key: KEY}``: each evaluation document gets the fields of the row of split ``NAME``
  (same dataset) whose ``KEY`` field equals its own (BFCL's answers are a file beside its questions).
"""

from __future__ import annotations

from typing import Any

from lmeval.common import quoted
from lmeval.compiler.errors import fail
from lmeval.plans import TOOL_PARSERS


def conversation_fields(s: Any, cfg: dict[str, Any]) -> None:
    """Check and set ``s`` (a ``TaskConfig``)'s conversation fields from its mapping ``cfg``."""

    def bad(msg: str, field: str) -> Exception:
        return fail(msg, file=s.source, task=s.name, field=field)

    for key in ("doc_to_messages", "doc_to_tools"):
        val = cfg.get(key)
        if val is not None and (not isinstance(val, str) or not val):
            raise bad(f"must be a document field name, got {val!r}", key)
        setattr(s, key, val)
    out = s.output_type
    if s.doc_to_messages is not None and out not in ("generate_until", "loglikelihood"):
        raise bad(f"applies to generate_until and loglikelihood tasks, not {out}", "doc_to_messages")
    if s.doc_to_tools is not None and out != "generate_until":
        raise bad(f"applies to generate_until tasks, not {out}", "doc_to_tools")
    parser = cfg.get("tool_parser")
    if parser is not None and (type(parser) is not str or parser not in TOOL_PARSERS):
        what = "unknown parser" if type(parser) is str else "must be one parser's name, got"
        raise bad(f"{what} {quoted(parser)}; known: {', '.join(TOOL_PARSERS)}", "tool_parser")
    s.tool_parser = parser
    join = cfg.get("doc_join")
    if join is not None:
        if (
            not isinstance(join, dict)
            or set(join) != {"split", "key"}
            or not all(isinstance(v, str) and v for v in join.values())
        ):
            raise bad("must be a mapping {split: NAME, key: KEY}", "doc_join")
        join = dict(join)
    s.doc_join = join
    metrics = cfg.get("metric_list")
    wants = isinstance(metrics, list) and any(isinstance(m, dict) and m.get("metric") == "tool_call" for m in metrics)
    if wants and (s.tool_parser is None or s.doc_to_tools is None):
        raise bad("metric tool_call needs the task's tool_parser and doc_to_tools", "metric_list")
