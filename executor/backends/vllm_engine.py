"""The default backend: vLLM's offline engine (``vllm.LLM``), in process.

All requests of a phase are queued at once (continuous batching sees the whole phase, as one big
``LLM.generate`` call would) and the engine is stepped here, so finished requests stream back to be written
while the rest run. Scoring reads one-token continuations from their context's next-token log-probs (one
request per context) and the rest from prompt log-probs of the plan's token ids, with requests that share a
context reading it from the prefix cache (``VLLMBackend.score``); generation uses stop strings, EOS and the
plan's sampling settings.
"""

from __future__ import annotations

import gc
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

from lmeval.executor.backends.base import HFTokenizer, samples_to_run, set_offline_env
from lmeval.executor.engineconf import (
    Platform,
    UserSettings,
    derive_engine_args,
    detect_platform,
    model_facts,
    vllm_engine_keys,
)
from lmeval.executor.errors import ExecuteError, first_line
from lmeval.executor.modelconf import ModelSpec
from lmeval.executor.requests import GenInput, GenOutput, Sample, ScoreInput, ScoreOutput


def engine_args(
    spec: ModelSpec, model_dir: Path, platform: Platform, known_keys: frozenset[str] | None = None
) -> dict[str, Any]:
    """Arguments for ``vllm.LLM``: what the user set, derived from the model and the platform elsewhere
    (``executor.engineconf.derive_engine_args``), ``model.engine`` passed through on top."""
    user = UserSettings(
        dtype=spec.dtype,
        max_model_len=spec.max_model_len,
        tensor_parallel_size=spec.tensor_parallel_size,
        engine=spec.engine_args(),
        seed=spec.seed,
        trust_remote_code=spec.trust_remote_code,
        seeded_sampling=spec.seeded_sampling,
    )
    return derive_engine_args(str(model_dir), model_facts(model_dir), platform, user, known_keys)


def engine_error(e: BaseException, args: dict[str, Any] | None = None) -> str:
    """vLLM's own check of the engine arguments, as one line naming the setting: the field pydantic names,
    else the first of ``args`` the message mentions; the message's first sentence."""
    loc, msg = "", " ".join(str(e).split()) or type(e).__name__
    errors = getattr(e, "errors", None)
    if callable(errors):  # pydantic's ValidationError
        try:
            first = errors()[0]
            loc = ".".join(str(x) for x in first.get("loc", ()) if x)
            msg = " ".join(str(first.get("msg", "")).split()) or msg
        except Exception:  # noqa: BLE001
            pass
    msg = msg.removeprefix("Value error, ")
    msg = msg.split(". ", 1)[0].rstrip(".")
    if not loc:
        hits = [(m.start(), k) for k in (args or {}) if k not in ("model", "tokenizer")
                for m in [re.search(rf"\b{re.escape(k)}\b", msg)] if m]  # fmt: skip
        loc = min(hits)[1] if hits else ""
    top = ("dtype", "max_model_len", "tensor_parallel_size", "trust_remote_code")
    where = f"model.{loc}" if loc in top else f"model.engine.{loc}" if loc else "model.engine"
    value = f"={args[loc]}" if args and loc in args else ""
    return f"{where}{value}: vLLM rejects it ({msg})"


def load_error(model_dir: Path, e: ImportError) -> str:
    """vLLM could not import what this model needs here (PaliGemma's image code imports torchvision), as one
    line naming the model (its directory and architecture) and the missing module."""
    try:
        archs = json.loads((model_dir / "config.json").read_text()).get("architectures")
    except (OSError, ValueError, AttributeError):
        archs = None
    arch = f" ({archs[0]})" if isinstance(archs, list) and archs and isinstance(archs[0], str) else ""
    if isinstance(e, ModuleNotFoundError) and e.name:
        cause = f"it needs the Python package {e.name.split('.')[0]!r}, which is not installed here"
    else:
        cause = f"{type(e).__name__}: {first_line(e)}"
    return f"model.path={model_dir}{arch}: vLLM cannot load this model: {cause}"


def continuation_score(plp: Any, ids: Sequence[int], ctxlen: int) -> ScoreOutput:
    """Sum of the prompt log-probs of ``ids[ctxlen:]`` and whether each was the argmax (rank 1), from vLLM's
    prompt log-probs: a list with one ``{token_id: Logprob}`` per position, or a ``FlatLogprobs`` holding
    the same entries in flat lists (position p's entries are ``start_indices[p]:end_indices[p]``)."""
    total = 0.0
    greedy = True
    if hasattr(plp, "start_indices"):
        starts, ends, tok, lps, ranks = plp.start_indices, plp.end_indices, plp.token_ids, plp.logprobs, plp.ranks
        for pos in range(ctxlen, len(ids)):
            j = starts[pos]
            if tok[j] != ids[pos]:  # the prompt token comes first; search the position's entries otherwise
                j = next(k for k in range(starts[pos], ends[pos]) if tok[k] == ids[pos])
            total += lps[j]
            if ranks[j] != 1:
                greedy = False
        return ScoreOutput(total, greedy)
    for pos in range(ctxlen, len(ids)):
        lp = plp[pos][ids[pos]]
        total += lp.logprob
        if lp.rank != 1:
            greedy = False
    return ScoreOutput(total, greedy)


MAX_TOKEN_IDS = 128  # vLLM's bound on one request's ``logprob_token_ids`` (vllm.sampling_params)


def next_token_groups(inputs: Sequence[ScoreInput]) -> tuple[list[list[int]], list[int]]:
    """Input indices of one-token continuations grouped by context (first-seen order, each group in input
    order), and the other indices in input order. A group is scored from one request for its context."""
    groups: dict[tuple[int, ...], list[int]] = {}
    rest: list[int] = []
    for i, x in enumerate(inputs):
        if len(x.ids) - x.ctxlen == 1 and x.ctxlen >= 1:
            groups.setdefault(tuple(x.ids[: x.ctxlen]), []).append(i)
        else:
            rest.append(i)
    return list(groups.values()), rest


def reuse_order(inputs: Sequence[ScoreInput], window_tokens: int) -> list[int]:
    """Input indices in scoring order: windows of first-of-their-context inputs (at most ``window_tokens``
    tokens of them per window, in input order), each followed by the inputs that share those contexts, so
    the later ones find the context in the prefix cache."""
    leader: dict[tuple[int, ...], int] = {}
    followers: dict[int, list[int]] = {}
    leaders: list[int] = []
    for i, x in enumerate(inputs):
        ctx = tuple(x.ids[: x.ctxlen])
        first = leader.setdefault(ctx, i)
        if first == i:
            leaders.append(i)
        else:
            followers.setdefault(first, []).append(i)
    order: list[int] = []
    window: list[int] = []
    used = 0
    for i in leaders:
        window.append(i)
        used += len(inputs[i].ids)
        if used >= window_tokens:
            order += window
            for w in window:
                order += followers.get(w, ())
            window, used = [], 0
    order += window
    for w in window:
        order += followers.get(w, ())
    return order


def image_prompt(x: GenInput) -> dict[str, Any]:
    """A generation that shows images, as vLLM takes it: the plan's token ids (the image token once per
    image, which vLLM's processor expands), the decoded images as ``multi_modal_data`` and the plan's media
    hashes (sha256 of each image's bytes) as ``multi_modal_uuids``, so the engine's multimodal cache is keyed
    by content the plan names rather than by hashes vLLM recomputes."""
    import io

    from PIL import Image

    images = [Image.open(io.BytesIO(b)) for b in x.images]
    return {
        "prompt_token_ids": list(x.ids),
        "multi_modal_data": {"image": images},
        "multi_modal_uuids": {"image": [m["sha256"] for m in x.media]},
    }


class VLLMBackend:
    name = "vllm"

    def __init__(self, spec: ModelSpec, model_dir: Path) -> None:
        set_offline_env()
        from vllm import LLM

        # vLLM's engine start runs several full garbage collections (and freezes the heap after it); moving
        # the million-odd objects its imports just made out of the collector's view keeps each of those
        # from walking them (~2 s). vLLM's shutdown unfreezes everything again.
        gc.freeze()

        self.platform = detect_platform()
        args = engine_args(spec, model_dir, self.platform, vllm_engine_keys())
        self._args = args
        try:
            self.llm = LLM(**args)
        except (TypeError, ValueError) as e:  # pydantic's ValidationError is a ValueError
            raise ExecuteError(engine_error(e, args)) from None
        except ImportError as e:  # the model's code needs a package this install lacks
            raise ExecuteError(load_error(model_dir, e)) from None
        self.max_length: int = int(self.llm.llm_engine.model_config.max_model_len)
        # scoring: prompt tokens read from the prefix cache, requests scored again without it; every kind:
        # tokens the engine computed (prompt tokens not read from the cache, plus generated ones)
        self.cache_stats = {"cached_prompt_tokens": 0, "rescored": 0, "computed_tokens": 0}
        self.tokenizer = HFTokenizer(self.llm.get_tokenizer())

    def engine_args(self) -> dict[str, Any]:
        return dict(self._args)

    def _stream(self, prompts: Sequence[list[int] | dict[str, Any]], params: Any) -> Iterator[tuple[int, Any]]:
        from vllm import TokensPrompt

        if not prompts:
            return
        engine_prompts: list[Any] = [p if isinstance(p, dict) else TokensPrompt(prompt_token_ids=p) for p in prompts]
        ids = self.llm.enqueue(engine_prompts, params, use_tqdm=False)
        # enqueue returns the engine's internal ids ("<external>-<random>"); outputs carry the external id
        index = {rid.rsplit("-", 1)[0]: i for i, rid in enumerate(ids)}
        engine = self.llm.llm_engine
        pending = set(index)
        try:
            while engine.has_unfinished_requests():
                for out in engine.step():
                    if out.finished:
                        pending.discard(out.request_id)
                        yield index[out.request_id], out
        finally:
            if pending:  # the caller stopped early (error, interrupt): leave the engine clean
                engine.abort_request(list(pending))
                while engine.has_unfinished_requests():
                    engine.step()

    def _score_params(self, reuse: bool) -> Any:
        from vllm import SamplingParams

        kwargs: dict[str, Any] = {"max_tokens": 1, "temperature": 0, "prompt_logprobs": 0, "detokenize": False}
        if reuse:
            kwargs["skip_reading_prefix_cache"] = False
        try:  # flat log-probs (vLLM >= 0.11): a few flat lists per request instead of a dict per position
            return SamplingParams(**kwargs, flat_logprobs=True)
        except TypeError:
            kwargs.pop("skip_reading_prefix_cache", None)
            return SamplingParams(**kwargs)

    def _kv_capacity_tokens(self) -> int:
        cache = self.llm.llm_engine.vllm_config.cache_config
        tokens = getattr(cache, "kv_cache_size_tokens", None)
        if not tokens:
            tokens = (getattr(cache, "num_gpu_blocks", None) or 0) * (cache.block_size or 16)
        return int(tokens) or 1 << 16

    def _count(self, out: Any) -> None:
        """Add a finished request's computed tokens (prompt not read from the cache, generated) to the stats."""
        generated = sum(len(o.token_ids) for o in out.outputs)
        prompt = len(out.prompt_token_ids or ())
        self.cache_stats["computed_tokens"] += prompt - (out.num_cached_tokens or 0) + generated

    def score(self, inputs: Sequence[ScoreInput]) -> Iterator[tuple[int, ScoreOutput]]:
        """Log-probs of every input: one-token continuations from their context's next-token log-probs
        (``next_token_groups``), the rest from prompt log-probs (``_score_prompts``)."""
        if not inputs:
            return
        groups, rest = next_token_groups(inputs)
        yield from self._score_next_token(inputs, groups)
        yield from self._score_prompts(inputs, rest)

    def _score_next_token(
        self, inputs: Sequence[ScoreInput], groups: Sequence[list[int]]
    ) -> Iterator[tuple[int, ScoreOutput]]:
        """One request per context whose continuations are one token each (MMLU's " A" .. " D"): the context
        alone, one greedy step, with ``logprob_token_ids`` asking for the log-prob of every continuation
        token at the next position. The row is the one a prompt-log-prob request of ``context + token``
        reads (causal attention: the position never sees the token after it), so the numbers agree with it
        within the documented tolerance; such a request may read its whole context from the prefix cache.
        ``is_greedy``: no token has a higher log-prob than the continuation (the prompt-log-prob rank 1)."""
        from vllm import SamplingParams

        if not groups:
            return
        prompts: list[list[int]] = []
        params: list[Any] = []
        asked: list[list[int]] = []  # per request: the group's input indices it answers
        for members in groups:
            x = inputs[members[0]]
            wanted = sorted({inputs[i].ids[-1] for i in members})
            for c in range(0, len(wanted), MAX_TOKEN_IDS):
                chunk = wanted[c : c + MAX_TOKEN_IDS]
                prompts.append(x.ids[: x.ctxlen])
                params.append(SamplingParams(max_tokens=1, temperature=0, logprob_token_ids=chunk, detokenize=False))
                chosen = set(chunk)
                asked.append([i for i in members if inputs[i].ids[-1] in chosen])
        for k, out in self._stream(prompts, params):
            self._count(out)
            self.cache_stats["cached_prompt_tokens"] += out.num_cached_tokens or 0
            row = out.outputs[0].logprobs[0]  # {token id: Logprob}: the sampled (argmax) token and the asked
            top = row[out.outputs[0].token_ids[0]].logprob
            for i in asked[k]:
                lp = row[inputs[i].ids[-1]].logprob
                yield i, ScoreOutput(lp, lp >= top)

    def _score_prompts(self, inputs: Sequence[ScoreInput], rest: Sequence[int]) -> Iterator[tuple[int, ScoreOutput]]:
        """Prompt log-probs of ``inputs[rest]``; requests whose contexts repeat read the prefix cache.

        vLLM recomputes the whole prompt of a request that asks for prompt log-probs unless told it may read
        the prefix cache; it may, as long as the cached part ends before the continuation's first
        log-prob row (``ids[ctxlen - 1]``): rows from there on are computed, the cached rows are never read.
        So inputs are ordered ``reuse_order`` (one request per context first, then the requests that
        share its context, window by window so the cache still holds them), read the cache, and the few
        whose cache hit reached into the continuation are scored again without it. The cached keys and values
        are the ones the request would have computed, but attention over a cached prefix runs another kernel
        than a full prefill (float32 sums in another order): log-probs agree with a recompute within the
        documented tolerance (docs/explanation/what-repeats.md), not bit for bit."""
        if not rest:
            return
        sub = [inputs[i] for i in rest]
        reuse = self.llm.llm_engine.vllm_config.cache_config.enable_prefix_caching
        params = self._score_params(reuse)
        reuse = reuse and getattr(params, "skip_reading_prefix_cache", None) is False
        order = reuse_order(sub, self._kv_capacity_tokens() // 4) if reuse else list(range(len(sub)))
        again: list[int] = []
        for k, out in self._stream([sub[i].ids for i in order], params):
            self._count(out)
            i = order[k]
            x = sub[i]
            cached = out.num_cached_tokens or 0
            if cached > x.ctxlen - 1:
                again.append(i)
                continue
            self.cache_stats["cached_prompt_tokens"] += cached
            yield rest[i], continuation_score(out.prompt_logprobs, x.ids, x.ctxlen)
        self.cache_stats["rescored"] += len(again)
        if again:
            for k, out in self._stream([sub[i].ids for i in again], self._score_params(False)):
                self._count(out)
                x = sub[again[k]]
                yield rest[again[k]], continuation_score(out.prompt_logprobs, x.ids, x.ctxlen)

    def generate(self, inputs: Sequence[GenInput]) -> Iterator[tuple[int, GenOutput]]:
        from vllm import SamplingParams

        params = []
        for x in inputs:
            p = x.params  # every GenParams field is a SamplingParams argument of the same name
            kw = {f.name: getattr(p, f.name) for f in fields(p)}
            kw.update(n=samples_to_run(p), stop=list(p.stop))
            params.append(SamplingParams(**kw, skip_special_tokens=False, spaces_between_special_tokens=False))
        for i, out in self._stream([image_prompt(x) if x.images else x.ids for x in inputs], params):
            self._count(out)
            samples = [
                Sample(text=o.text, token_ids=list(o.token_ids), finish_reason=str(o.finish_reason or "stop"))
                for o in sorted(out.outputs, key=lambda o: o.index)
            ]
            yield i, GenOutput(samples)

    def close(self) -> None:
        llm = getattr(self, "llm", None)
        if llm is not None:
            del self.llm
