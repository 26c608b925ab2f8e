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

The plan header records the rule it was compiled with (``ModelInfo.token_rule``). ``encode_texts`` and
``encode_pairs`` apply it with any tokenizer's batch encoding: the compiler's (fast, batched) and the
executor's (one text at a time) give the same ids because they run this code.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

# a tokenizer's batch encoding: (texts, add_special_tokens) -> one list of token ids per text
BatchEncode = Callable[[list[str], bool], list[list[int]]]
Pair = tuple[list[int], list[int]]


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
            f"add_special_tokens {special} ({adds}); prefix token {self.prefix_token_id} ({self.prefix_token_source})"
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
    if not context[-1:].isspace():
        return context, continuation  # (no copy of a long context made by rstrip)
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


def encode_texts(
    texts: list[str], rule: TokenRule, encode: BatchEncode, special: bool | None = None
) -> list[list[int]]:
    """lm-eval's ``tok_encode`` over many strings: ``add_special_tokens`` per text as the rule says (never a
    second BOS), or ``special`` for all; one ``encode`` call per flag, results in input order."""
    out: list[list[int]] = [[] for _ in texts]
    by_flag: dict[bool, list[int]] = {True: [], False: []}
    for i, t in enumerate(texts):
        flag = special if special is not None else add_special_tokens(t, rule.add_bos_token, rule.prefix_text)
        by_flag[flag].append(i)
    for flag, idxs in by_flag.items():
        if idxs:
            for i, ids in zip(idxs, encode([texts[i] for i in idxs], flag), strict=True):
                out[i] = ids
    return out


def encode_pairs(
    pairs: list[tuple[str, str]],
    rule: TokenRule,
    encode: BatchEncode,
    continuations: Callable[[list[str], list[str]], list[list[int]] | None] | None = None,
) -> list[Pair]:
    """lm-eval's loglikelihood tokenization of (context, continuation) pairs: ``_encode_pair`` (trailing context
    whitespace moves to the continuation; ``context + continuation`` and ``context`` are encoded by the rule,
    the continuation is the joint encoding past the context's length) and the empty-context case
    (``empty_context_pair`` on the continuation encoded without special tokens).

    ``continuations``: an optional faster way to the continuations' ids, given the moved (contexts,
    continuations) of the non-empty pairs; it must equal the joint-encoding split, or return None to use it."""
    ctxs: list[str] = []
    conts: list[str] = []
    full: list[int] = []  # pairs with a context
    empty: list[int] = []
    for i, (ctx, cont) in enumerate(pairs):
        if ctx == "":
            empty.append(i)
            continue
        ctx, cont = move_trailing_space(ctx, cont)
        full.append(i)
        ctxs.append(ctx)
        conts.append(cont)
    result: list[Pair] = [([], []) for _ in pairs]
    if full:
        uniq = list(dict.fromkeys(ctxs))
        ctx_ids = dict(zip(uniq, encode_texts(uniq, rule, encode), strict=True))
        cont_ids = continuations(ctxs, conts) if continuations is not None else None
        if cont_ids is None:
            whole = encode_texts([c + k for c, k in zip(ctxs, conts, strict=True)], rule, encode)
            cont_ids = [w[len(ctx_ids[c]) :] for c, w in zip(ctxs, whole, strict=True)]
        for i, c, k in zip(full, ctxs, cont_ids, strict=True):
            result[i] = (ctx_ids[c], k)
    if empty:
        encs = encode_texts([pairs[i][1] for i in empty], rule, encode, special=False)
        for i, ids in zip(empty, encs, strict=True):
            result[i] = empty_context_pair(rule.prefix_token_id, ids)
    return result
