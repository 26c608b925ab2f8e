"""From plan Instances to model inputs, and from model outputs back to results, with lm-eval's semantics.

Mirrors lm-eval 0.4.13's vLLM backend (``lm_eval/models/vllm_causallms.py``) where it defines behaviour:
left truncation of over-long inputs, rolling windows for ``loglikelihood_rolling``, normalisation of
generation kwargs (``until`` plus the EOS string, ``max_gen_toks`` and its aliases, ``do_sample`` vs
``temperature``), and cutting generated text at the first stop string.
"""

# size: one piece, lm-eval's vLLM backend semantics from Instance to input and from output to result (its
# pieces that stand alone are answers.py and budgets.py)

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from lmeval.executor.answers import cut_at_stop as cut_at_stop  # lm-eval's cut (re-exported)
from lmeval.executor.answers import reasoning_tokens, sample_text
from lmeval.executor.errors import ExecuteError
from lmeval.plans import (
    BUDGET_KEY,
    BatchEncode,
    InstanceRecord,
    Reasoning,
    ThinkingBudget,
    TokenRule,
    choose_prefix_token,
    encode_pairs,
    encode_texts,
    read_budget,
)


class Tokenizer(Protocol):
    """The little a backend's tokenizer must do for the executor."""

    eos_token_id: int | None
    bos_token_id: int | None

    def encode(self, text: str, add_special_tokens: bool) -> list[int]: ...

    def decode(self, ids: Sequence[int]) -> str: ...

    def token_text(self, token_id: int) -> str: ...


@dataclass(frozen=True)
class ScoreInput:
    """Score ``ids[ctxlen:]`` given what precedes each of them (``1 <= ctxlen < len(ids)``)."""

    ids: list[int]
    ctxlen: int
    key: str  # request hash (plus window number for rolling windows): what a fake backend keys on


@dataclass(frozen=True)
class ScoreOutput:
    logprob: float
    is_greedy: bool


@dataclass(frozen=True)
class GenParams:
    max_tokens: int
    stop: list[str]
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0
    min_p: float = 0.0
    seed: int | None = None
    n: int = 1
    repetition_penalty: float = 1.0
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0


@dataclass(frozen=True)
class GenInput:
    ids: list[int]
    params: GenParams
    key: str
    text: str = ""  # the context string (for text-only backends and fakes)
    budget: ThinkingBudget | None = None  # run.thinking_budget (plans/vocab/budgets.py): run in two phases
    messages: list[dict[str, str]] | None = None  # a chat-templated plan's messages (chat endpoints send them)
    media: tuple[dict[str, Any], ...] = ()  # the images it shows (plans/plan/media.py:MediaRef maps), in order
    images: tuple[bytes, ...] = ()  # their bytes, read from the plan's companion folder and checked


@dataclass(frozen=True)
class Sample:
    text: str | None  # the backend's text when it has no token ids to give
    token_ids: list[int] | None
    finish_reason: str
    answer_from: int | None = None  # under a thinking budget: where the answer's ids start (executor/budgets.py)
    forced: bool = False  # under a thinking budget: the end marker was appended, the budget ran out


@dataclass(frozen=True)
class GenOutput:
    samples: list[Sample]


# ------------------------------------------------------------------------------------ jobs


@dataclass
class ScoreJob:
    """One distinct log-likelihood request (all Instances with this request hash share it)."""

    key: str
    rolling: bool
    windows: list[ScoreInput]
    n_tokens: int  # continuation tokens scored

    @property
    def size(self) -> int:
        return sum(len(w.ids) for w in self.windows)


@dataclass
class GenJob:
    key: str
    input: GenInput
    until: list[str]
    reasoning: Reasoning | None = None  # the plan's run.reasoning: the reasoning's tokens are counted by it

    @property
    def size(self) -> int:
        return len(self.input.ids)


@dataclass
class JobResult:
    loglikelihood: float | None = None
    is_greedy: bool | None = None
    n_continuation_tokens: int | None = None
    responses: list[str] | None = None
    finish_reason: str | None = None
    tokens: int = 0  # tokens processed (progress accounting)
    reasoning_tokens: int | None = None  # generated tokens before the reasoning's end (executor/answers.py)
    thinking_forced: bool | None = None  # under a thinking budget: the end marker was forced (budgets.py)
    extra: dict[str, Any] = field(default_factory=dict)


# ------------------------------------------------------------------------------- encoding


def token_rule(
    recorded: TokenRule | None, add_bos: bool | None, prefix_override: int | None, tok: Tokenizer | None
) -> TokenRule:
    """The rule to encode with: the one the plan's ids were made with, else the model config's (the
    executor encodes only plans compiled without a tokenizer)."""
    if recorded is not None:
        return recorded
    if tok is None:
        return TokenRule(add_bos_token=add_bos, prefix_token_id=prefix_override,
                         prefix_token_source="override" if prefix_override is not None else "none")  # fmt: skip
    prefix, source = choose_prefix_token(prefix_override, tok.bos_token_id, tok.eos_token_id)
    text = tok.token_text(prefix) if prefix is not None else None
    return TokenRule(
        add_bos_token=add_bos, prefix_token_id=prefix, prefix_token_source=source, prefix_text=text or None
    )


def _batch_encode(tok: Tokenizer) -> BatchEncode:
    """``tok`` as the contract's batch encoding; an empty text encodes to no ids (vLLM's ``tok_encode`` of
    one string)."""
    return lambda texts, flag: [tok.encode(t, add_special_tokens=flag) if t else [] for t in texts]


def tok_encode(tok: Tokenizer, text: str, rule: TokenRule, special: bool | None = None) -> list[int]:
    """lm-eval's ``tok_encode``: special tokens per the rule, never a second BOS (``special`` forces them)."""
    return encode_texts([text], rule, _batch_encode(tok), special)[0]


def prefix_token_id(rule: TokenRule) -> int:
    """What an empty context is replaced by and rolling windows start from (lm-eval's ``prefix_token_id``)."""
    if rule.prefix_token_id is None:
        raise ExecuteError("the model's tokenizer has neither a BOS nor an EOS token to condition on")
    return rule.prefix_token_id


def encode_pair(tok: Tokenizer, context: str, continuation: str, rule: TokenRule) -> tuple[list[int], list[int]]:
    """lm-eval's ``_encode_pair`` and its empty-context case (the contract's ``encode_pairs``); an empty
    context needs a prefix token to condition on."""
    if context == "":
        prefix_token_id(rule)
    return encode_pairs([(context, continuation)], rule, _batch_encode(tok))[0]


# -------------------------------------------------------------------------- truncation


def truncate_for_scoring(ctx: list[int], cont: list[int], max_length: int) -> tuple[list[int], int]:
    """The input ids and context length lm-eval's vLLM backend scores: the last ``max_length - 1`` tokens
    (one position is left for the token vLLM must generate)."""
    max_ctx = max_length - 1
    ids = ctx + cont
    if len(ids) > max_ctx:
        ids = ids[-max_ctx:]
    ctxlen = len(ctx) - max(0, len(ctx) + len(cont) - max_ctx)
    return ids, max(ctxlen, 1)


def rolling_windows(tokens: list[int], prefix: int, max_seq_len: int) -> Iterator[tuple[list[int], list[int]]]:
    """lm-eval's ``get_rolling_token_windows(..., context_len=1)`` made disjoint: (context, predicted)
    windows that predict every token exactly once, each with as much preceding context as fits."""
    if not tokens:
        return
    if max_seq_len < 1:
        raise ExecuteError(f"max_model_len too small for rolling log-likelihood windows ({max_seq_len + 2})")
    first = min(max_seq_len, len(tokens))
    yield [prefix] + tokens[: first - 1], tokens[:first]
    done = first
    while done < len(tokens):
        pred_len = min(len(tokens) - done, max_seq_len)
        end = done + pred_len
        window = tokens[max(end - max_seq_len - 1, 0) : end - 1]
        yield window, tokens[end - pred_len : end]
        done = end


def _disjoint(pair: tuple[list[int], list[int]]) -> tuple[list[int], list[int]]:
    a, b = pair
    return a[: len(a) - (len(b) - 1)], b


# --------------------------------------------------------------------------- generation


_SAMPLING_KEYS = {
    "top_p": float,
    "top_k": int,
    "min_p": float,
    "seed": int,
    "repetition_penalty": float,
    "presence_penalty": float,
    "frequency_penalty": float,
}
_MAX_TOKEN_ALIASES = ("max_gen_toks", "max_new_tokens", "max_tokens", "max_completion_tokens")
_IGNORED_KEYS = {"do_sample", "temperature", "until", BUDGET_KEY, *_MAX_TOKEN_ALIASES}


def max_tokens_of(kwargs: dict[str, Any] | None, default_max: int) -> int:
    """The most tokens a generation may produce: ``max_gen_toks`` or one of its aliases, else the default."""
    kw = kwargs or {}
    for alias in _MAX_TOKEN_ALIASES:
        if kw.get(alias) is not None:
            return int(kw[alias])
    return default_max


def gen_params(
    kwargs: dict[str, Any] | None, eos: str | None, default_max: int, repeats: int, key: str, where: str
) -> tuple[GenParams, list[str]]:
    """lm-eval's ``normalize_gen_kwargs`` + ``modify_gen_kwargs``: (sampling params, stop strings)."""
    kw = dict(kwargs or {})
    until_raw = kw.get("until")
    if until_raw is None:
        until: list[str] = []
    elif isinstance(until_raw, str):
        until = [until_raw]
    elif isinstance(until_raw, list) and all(isinstance(u, str) for u in until_raw):
        until = list(until_raw)
    else:
        raise ExecuteError(f"{where}: generation_kwargs.until must be a string or a list of strings")
    if eos is not None and eos not in until:
        until.append(eos)
    max_tokens = max_tokens_of(kw, default_max)
    try:
        temperature = float(kw.get("temperature", 0.0) or 0.0)
    except (TypeError, ValueError):
        raise ExecuteError(f"{where}: generation_kwargs.temperature is not a number") from None
    if kw.get("do_sample") is False:
        temperature = 0.0
    extra: dict[str, Any] = {}
    for name, conv in _SAMPLING_KEYS.items():
        if kw.get(name) is not None:
            try:
                extra[name] = conv(kw[name])
            except (TypeError, ValueError):
                raise ExecuteError(f"{where}: generation_kwargs.{name} is not a number") from None
    unknown = sorted(set(kw) - set(_SAMPLING_KEYS) - _IGNORED_KEYS)
    if unknown:
        raise ExecuteError(f"{where}: unsupported generation_kwargs {', '.join(unknown)}")
    if temperature > 0 and "seed" not in extra:
        # a sampled request without a seed gets one derived from what it asks, so reruns, resumes and
        # shards reproduce it whatever it is batched with
        extra["seed"] = int(key[:8], 16)
    params = GenParams(max_tokens=max_tokens, stop=until, temperature=temperature, n=max(repeats, 1), **extra)
    return params, until


def is_sampled(kwargs: dict[str, Any] | None) -> bool:
    """Whether ``gen_params`` samples for these generation kwargs (and so seeds the request)."""
    kw = kwargs or {}
    if kw.get("do_sample") is False:
        return False
    try:
        return float(kw.get("temperature", 0.0) or 0.0) > 0
    except (TypeError, ValueError):
        return False


def truncate_for_generation(ids: list[int], max_tokens: int, max_length: int, where: str) -> list[int]:
    """lm-eval's ``maybe_truncate`` (left side, generation length kept)."""
    if len(ids) + max_tokens <= max_length:
        return ids
    room = max_length - max_tokens
    if room <= 0:
        raise ExecuteError(f"{where}: max_gen_toks={max_tokens} does not fit max_model_len={max_length}")
    return ids[-room:]


# --------------------------------------------------------------------------------- jobs


def score_job(inst: InstanceRecord, tok: Tokenizer | None, rule: TokenRule, max_length: int, where: str) -> ScoreJob:
    key = inst.request_hash
    if inst.request_type == "loglikelihood":
        if inst.context_ids is not None and inst.continuation_ids is not None:
            ctx, cont = list(inst.context_ids), list(inst.continuation_ids)
        else:
            if tok is None:
                raise ExecuteError(f"{where}: the plan has no token ids and the backend has no tokenizer")
            ctx, cont = encode_pair(tok, inst.context, inst.continuation or "", rule)
        if not ctx:
            if rule.prefix_token_id is None:
                raise ExecuteError(f"{where}: empty context and no prefix token to condition on")
            ctx = [rule.prefix_token_id]
        if not cont:
            raise ExecuteError(f"{where}: empty continuation (nothing to score)")
        ids, ctxlen = truncate_for_scoring(ctx, cont, max_length)
        return ScoreJob(key, False, [ScoreInput(ids, ctxlen, key)], len(ids) - ctxlen)
    # loglikelihood_rolling
    if inst.context_ids is not None:
        tokens = list(inst.context_ids) + list(inst.continuation_ids or [])
    else:
        if tok is None:
            raise ExecuteError(f"{where}: the plan has no token ids and the backend has no tokenizer")
        tokens = tok_encode(tok, inst.context, rule)
    prefix = rule.prefix_token_id if rule.prefix_token_id is not None else 0
    windows = [
        ScoreInput(c + p, len(c), f"{key}:{i}")
        for i, (c, p) in enumerate(map(_disjoint, rolling_windows(tokens, prefix, max_length - 2)))
    ]
    return ScoreJob(key, True, windows, len(tokens))


def gen_job(
    inst: InstanceRecord,
    tok: Tokenizer | None,
    rule: TokenRule,
    max_length: int,
    default_max: int,
    where: str,
    reasoning: Reasoning | None = None,
) -> GenJob:
    try:
        budget = read_budget(inst.generation_kwargs)
    except ValueError as e:
        raise ExecuteError(f"{where}: {e}") from None
    eos = tok.token_text(tok.eos_token_id) if tok is not None and tok.eos_token_id is not None else None
    params, until = gen_params(inst.generation_kwargs, eos, default_max, inst.repeats, inst.request_hash, where)
    if inst.context_ids is not None:
        ids = list(inst.context_ids)
    else:
        ids = tok_encode(tok, inst.context, rule) if tok is not None else []
    if not ids and inst.context_ids is not None:
        raise ExecuteError(f"{where}: empty generation prompt (no context tokens)")
    ids = truncate_for_generation(ids, params.max_tokens, max_length, where)
    x = GenInput(ids, params, inst.request_hash, inst.context, budget, inst.messages)
    return GenJob(inst.request_hash, x, until, reasoning)


def score_result(job: ScoreJob, outs: Sequence[ScoreOutput]) -> JobResult:
    total = sum(o.logprob for o in outs)
    greedy = all(o.is_greedy for o in outs)
    return JobResult(
        loglikelihood=total,
        is_greedy=None if job.rolling else greedy,
        n_continuation_tokens=job.n_tokens,
        tokens=job.size,
    )


def gen_result(job: GenJob, out: GenOutput, tok: Tokenizer | None) -> JobResult:
    texts = [sample_text(s, tok, job.until) for s in out.samples]
    n = job.input.params.n
    if len(texts) == 1 and n > 1:  # greedy repeats: one run, n identical answers
        texts = texts * n
    first = out.samples[0]
    n_gen = len(first.token_ids) if first.token_ids is not None else None
    generated = sum(len(s.token_ids or ()) for s in out.samples)
    return JobResult(
        responses=texts,
        finish_reason=first.finish_reason,
        n_continuation_tokens=n_gen,
        tokens=job.size + generated,
        reasoning_tokens=reasoning_tokens(first, texts[0], job.reasoning, tok) if texts else None,
        thinking_forced=first.forced if job.input.budget is not None else None,
    )


def fake_seed(key: str) -> int:
    return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16)
