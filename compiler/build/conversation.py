"""A conversation task's document (``compiler/tasks/conversation.py``: ``doc_to_messages``, ``doc_to_tools``):
its messages rendered by the model's chat template, with the tools as transformers' ``apply_chat_template(
messages, tools=...)`` renders them.

- generate_until: the prompt is the few-shot turns, then the document's messages (``doc_to_messages``) or its
  ``doc_to_text`` turn; the request keeps the messages and tools (``InstanceRecord.messages``/``tools``).
- loglikelihood (a recorded step): the context is everything before the last message (an assistant reply)
  with the generation prompt; the continuation is what the template writes of that reply after the context
  (``chat(all, add_generation_prompt=False)``, which continues the final message: the reply's text, without
  the end-of-turn marker). A template that does not render the reply after the context is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lmeval.compiler.build.records import ChatFn
from lmeval.plans import messages_problem, template_tools


def doc_messages(value: Any, where: Callable[[str, str], Exception]) -> list[dict[str, str]]:
    """The document's messages: a list of ``{role, content}``, or BFCL's list of turns (lists of them)."""
    if type(value) is list and value and all(type(t) is list for t in value):
        value = [m for turn in value for m in turn]
    problem = messages_problem(value)
    if problem is not None:
        raise where("doc_to_messages", problem)
    return [{"role": m["role"], "content": m["content"]} for m in value]


def doc_tools(value: Any, where: Callable[[str, str], Exception]) -> list[dict[str, Any]]:
    try:
        return template_tools(value)
    except ValueError as e:
        raise where("doc_to_tools", str(e)) from None


def step_request(chat: ChatFn, conv: list[dict[str, str]], where: Callable[[str, str], Exception]) -> tuple[str, str]:
    """(context, continuation) of a recorded step: the last message of ``conv`` given the ones before it."""
    if conv[-1]["role"] != "assistant" or len(conv) < 2:
        raise where("doc_to_messages", "a scored step needs messages ending in an assistant reply after a prompt")
    ctx = chat(conv[:-1], True)
    full = chat(conv, False)
    if not full.startswith(ctx) or len(full) == len(ctx):
        raise where(
            "doc_to_messages",
            "the chat template does not render the reply right after the prompt with its generation prompt, "
            "so the reply cannot be scored as a continuation",
        )
    return ctx, full[len(ctx) :]
