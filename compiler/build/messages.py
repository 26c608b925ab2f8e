"""Chat messages as lm-eval 0.4.13 builds them (``api.utils.Message`` and its helpers): a message is
(role, content, plain-text delimiter); joined as plain text or handed to a chat template as role/content
dicts, multi-turn or folded into one user turn (``multiturn_to_singleturn``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Msg = tuple[str, str, str]  # role, content, plain-text delimiter


def maybe_delimit(prefix: str | None, suffix: str | None, delimiter: str = " ") -> str:
    if not prefix:
        return suffix or ""
    if not suffix:
        return prefix or ""
    if prefix[-1].isspace() or suffix[0].isspace():
        return prefix + suffix
    return prefix + delimiter + suffix


def requires_delimiter(prefix: str, suffix: str) -> bool:
    if prefix == "":
        return False
    return not (prefix[-1].isspace() or suffix[0].isspace())


def to_text(msgs: list[Msg]) -> str:
    return "".join(c + d for _, c, d in msgs)


def to_dicts(msgs: list[Msg]) -> list[dict[str, str]]:
    return [{"role": r, "content": c} for r, c, _ in msgs]


def single_turn(msgs: list[Msg]) -> list[dict[str, str]]:
    """lm-eval's ``multiturn_to_singleturn`` (without mutating its input)."""
    system: Msg | None = None
    if msgs[0][0] == "system":
        system, msgs = msgs[0], msgs[1:]
    if msgs[-1][0] == "assistant":
        users = msgs[:-1]
        text = to_text(users[:-1]) + users[-1][1]
        res = [{"role": "user", "content": text}, {"role": "assistant", "content": msgs[-1][1]}]
    else:
        text = to_text(msgs[:-1]) + msgs[-1][1]
        res = [{"role": "user", "content": text}]
    return ([{"role": system[0], "content": system[1]}] if system else []) + res


def qa_turn(
    q: Any, c: list[Any] | None, a: Any, gen_prefix: str | None, tgt_delim: str, few_delim: str, where: Callable
) -> list[Msg]:
    """lm-eval's ``build_qa_turn``."""
    if not isinstance(q, str):
        raise where("doc_to_text", f"must give a string here, got {type(q).__name__} {q!r}")
    has_answer = a is not None and a != ""
    if has_answer and not gen_prefix:
        user_delim = tgt_delim
    elif gen_prefix and requires_delimiter(q, gen_prefix):
        user_delim = tgt_delim
    else:
        user_delim = ""
    msgs: list[Msg] = [("user", q, user_delim)]
    if has_answer:
        if c and isinstance(a, int):
            if not -len(c) <= a < len(c):
                raise where("doc_to_target", f"target index {a} is out of range of doc_to_choice ({len(c)} choices)")
            answer = c[a]
        elif isinstance(a, list):
            if not a:
                raise where("doc_to_target", "gave an empty list")
            answer = a[0]
        else:
            answer = a
        if not isinstance(answer, str):
            raise where("doc_to_target", f"few-shot answer must be a string, got {type(answer).__name__} {answer!r}")
        msgs.append(("assistant", maybe_delimit(gen_prefix, answer, " "), few_delim))
    elif gen_prefix:
        msgs.append(("assistant", gen_prefix, ""))
    return msgs
