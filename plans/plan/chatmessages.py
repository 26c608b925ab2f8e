"""The chat messages an Instance of a chat-templated plan keeps (``InstanceRecord.messages``): the role/content
list the compiler handed to the chat template, so a chat endpoint gets the conversation itself rather than its
rendering. The one rule both stages share: what a valid message list is."""

from __future__ import annotations

from typing import Any

ROLES: tuple[str, ...] = ("system", "user", "assistant")
MAX_MESSAGES = 1 << 16


def messages_problem(value: Any) -> str | None:
    """Why ``value`` is not a plan's message list (a non-empty list of ``{role, content}`` string maps with a
    known role), or None."""
    if type(value) is not list or not value:
        return "not a non-empty list of messages"
    if len(value) > MAX_MESSAGES:
        return f"{len(value)} messages, over {MAX_MESSAGES}"
    for i, m in enumerate(value):
        if type(m) is not dict or set(m) != {"role", "content"}:
            return f"message {i} is not a map of exactly role and content"
        if m["role"] not in ROLES:
            return f"message {i}: role {str(m['role'])[:40]!r} is not one of {', '.join(ROLES)}"
        if type(m["content"]) is not str:
            return f"message {i}: content is not a string"
    return None
