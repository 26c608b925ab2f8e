"""How request text becomes token ids: lm-eval 0.4.13's rules (``models/huggingface.py``,
``models/vllm_causallms.py``, ``api/model.py``), shared by the compiler, which stores the ids in the plan, and
the executor, which encodes only what a plan carries no ids for and builds the rolling windows.

- **Special tokens.** ``add_bos_token`` unset (None) leaves ``add_special_tokens`` to the tokenizer, whose
  default is on: a Llama-style tokenizer (a ``TemplateProcessing`` post-processor, or
  ``add_bos_token: true`` in its config) prepends BOS, a GPT-2-style one adds nothing. ``true``/``false``
  force ``add_special_tokens`` on or off (and are passed to the tokenizer when it is loaded, as lm-eval
  does). A text that already starts with the prefix token's text (a chat-templated prompt that begins with
  ``<s>``) is encoded without special tokens, so BOS is never doubled.
- **Prefix token.** ``prefix_token_id`` if set, else BOS, else EOS. An empty context is replaced by it
  (unless the continuation's first token already is it), and the first rolling window is conditioned on it.
- **Pairs.** Trailing whitespace of the context moves to the continuation; ``context + continuation`` and
  ``context`` are encoded with the rule above and the continuation is the joint encoding past the
  context's length. An empty context's continuation is encoded without special tokens.

The plan header records the rule it was compiled with (``ModelInfo.token_rule``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class TokenRule:
    """The encoding rule behind a plan's token ids."""

    add_bos_token: bool | None = None  # None: the tokenizer's own default for add_special_tokens (on)
    prefix_token_id: int | None = None  # what empty contexts and rolling windows are conditioned on
    prefix_token_source: str = "bos"  # "override" (model.prefix_token_id), "bos", "eos" or "none"
    prefix_text: str | None = None  # texts starting with this are encoded without special tokens
    # what add_special_tokens puts around a text with this rule, e.g. [1] (BOS) for a Llama tokenizer
    special_prefix: list[int] = field(default_factory=list)
    special_suffix: list[int] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TokenRule:
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in d.items() if k in known})

    def describe(self) -> str:
        special = {None: "tokenizer default", True: "on", False: "off"}[self.add_bos_token]
        adds = f"adds {self.special_prefix}" if self.special_prefix else "adds nothing before the text"
        return (
            f"add_special_tokens {special} ({adds}); prefix token {self.prefix_token_id} "
            f"({self.prefix_token_source})"
        )


def add_special_tokens(text: str, add_bos_token: bool | None, prefix_text: str | None) -> bool:
    """lm-eval's ``tok_encode`` with ``add_special_tokens`` left unset: the flag to encode ``text`` with."""
    if prefix_text and text.startswith(prefix_text):
        return False
    return True if add_bos_token is None else add_bos_token


def choose_prefix_token(override: int | None, bos: int | None, eos: int | None) -> tuple[int | None, str]:
    """lm-eval's ``prefix_token_id``: (token id, where it came from)."""
    if override is not None:
        return override, "override"
    if bos is not None:
        return bos, "bos"
    if eos is not None:
        return eos, "eos"
    return None, "none"


def move_trailing_space(context: str, continuation: str) -> tuple[str, str]:
    """lm-eval's ``_encode_pair``: trailing whitespace of the context belongs to the continuation."""
    n = len(context) - len(context.rstrip())
    if n:
        return context[:-n], context[-n:] + continuation
    return context, continuation


def empty_context_pair(prefix: int | None, continuation_ids: list[int]) -> tuple[list[int], list[int]]:
    """lm-eval's ``loglikelihood`` for an empty context: condition on the prefix token, unless the
    continuation (encoded without special tokens) already starts with it."""
    if prefix is not None and (not continuation_ids or continuation_ids[0] != prefix):
        return [prefix], continuation_ids
    return continuation_ids[:1], continuation_ids[1:]
