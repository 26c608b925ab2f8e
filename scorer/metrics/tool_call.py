"""tool_call: a generation's tool calls against the expected ones, BFCL's AST rules (``scorer.toolmatch``); keys
``tool_call`` (right or not) and ``tool_call_unparsed`` (the reply held no call the task's parser reads).
The options come from the task config (``resolve_metrics``): ``parser`` its ``tool_parser``, ``tools`` its
``doc_to_tools`` field."""

from __future__ import annotations

from typing import Any

from lmeval.scorer.errors import ScoreError
from lmeval.scorer.metrics.registry import builtin

UNPARSED = "tool_call_unparsed"


def _generate(gold: Any, result: Any, kwargs: dict[str, Any], doc: dict[str, Any]) -> Any:
    from lmeval.scorer import toolmatch

    if not kwargs.get("parser") or not kwargs.get("tools"):
        raise ScoreError("metric tool_call needs the task's tool_parser and doc_to_tools")
    try:
        expected = toolmatch.expected_calls(gold)
    except ValueError as e:
        raise ScoreError(f"field doc_to_target (metric tool_call): {e}") from None
    return toolmatch.score_reply(str(result), expected, doc.get(kwargs["tools"]), kwargs["parser"])


TOOL_CALL = builtin(
    "tool_call",
    generate=_generate,
    task_options=lambda config: {"parser": config.get("tool_parser"), "tools": config.get("doc_to_tools")},
    extra_keys=((UNPARSED, "mean", False),),
)
