"""The default backend: vLLM's offline engine (``vllm.LLM``), in process.

All requests of a phase are queued at once (continuous batching sees the whole phase, as one big
``LLM.generate`` call would) and the engine is stepped here, so finished requests stream back to be written
while the rest run. Scoring uses prompt log-probs of the plan's token ids; generation uses stop strings,
EOS and the plan's sampling settings.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from executor.backends.base import HFTokenizer, samples_to_run, set_offline_env
from executor.errors import ExecuteError
from executor.modelconf import ModelSpec
from executor.requests import GenInput, GenOutput, Sample, ScoreInput, ScoreOutput

DEFAULT_CPU_KV_CACHE_BYTES = 1 << 30


def engine_args(spec: ModelSpec, model_dir: Path) -> dict[str, Any]:
    """Arguments for ``vllm.LLM``: model config first, ``model.engine`` on top; explicit CPU KV cache."""
    args: dict[str, Any] = {
        "model": str(model_dir),
        "tokenizer": str(model_dir),
        "dtype": spec.dtype,
        "max_model_len": spec.max_model_len,
        "enforce_eager": True,
        "enable_prefix_caching": True,
        "seed": spec.seed,
    }
    if spec.raw.get("trust_remote_code") is not None:
        args["trust_remote_code"] = bool(spec.raw["trust_remote_code"])
    args.update(spec.engine_args())
    return {k: v for k, v in args.items() if v is not None}


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


class VLLMBackend:
    name = "vllm"

    def __init__(self, spec: ModelSpec, model_dir: Path) -> None:
        set_offline_env()
        from vllm import LLM
        from vllm.platforms import current_platform

        args = engine_args(spec, model_dir)
        if (
            current_platform.is_cpu()
            and "kv_cache_memory_bytes" not in args
            and not os.environ.get("VLLM_CPU_KVCACHE_SPACE")
        ):
            args["kv_cache_memory_bytes"] = DEFAULT_CPU_KV_CACHE_BYTES
        self._args = args
        try:
            self.llm = LLM(**args)
        except TypeError as e:
            raise ExecuteError(f"model.engine: bad vLLM engine argument ({e})") from None
        self.max_length: int = int(self.llm.llm_engine.model_config.max_model_len)
        self.tokenizer = HFTokenizer(self.llm.get_tokenizer())

    def engine_args(self) -> dict[str, Any]:
        return dict(self._args)

    def _stream(self, prompts: Sequence[list[int]], params: Any) -> Iterator[tuple[int, Any]]:
        from vllm import TokensPrompt

        if not prompts:
            return
        ids = self.llm.enqueue([TokensPrompt(prompt_token_ids=p) for p in prompts], params, use_tqdm=False)
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

    def score(self, inputs: Sequence[ScoreInput]) -> Iterator[tuple[int, ScoreOutput]]:
        from vllm import SamplingParams

        kwargs: dict[str, Any] = {"max_tokens": 1, "temperature": 0, "prompt_logprobs": 0, "detokenize": False}
        try:  # flat log-probs (vLLM >= 0.11): a few flat lists per request instead of a dict per position
            sp = SamplingParams(**kwargs, flat_logprobs=True)
        except TypeError:
            sp = SamplingParams(**kwargs)
        for i, out in self._stream([x.ids for x in inputs], sp):
            x = inputs[i]
            yield i, continuation_score(out.prompt_logprobs, x.ids, x.ctxlen)

    def generate(self, inputs: Sequence[GenInput]) -> Iterator[tuple[int, GenOutput]]:
        from vllm import SamplingParams

        params = []
        for x in inputs:
            p = x.params
            params.append(
                SamplingParams(
                    n=samples_to_run(p),
                    max_tokens=p.max_tokens,
                    stop=list(p.stop),
                    temperature=p.temperature,
                    top_p=p.top_p,
                    top_k=p.top_k,
                    min_p=p.min_p,
                    seed=p.seed,
                    repetition_penalty=p.repetition_penalty,
                    presence_penalty=p.presence_penalty,
                    frequency_penalty=p.frequency_penalty,
                    skip_special_tokens=False,
                    spaces_between_special_tokens=False,
                )
            )
        for i, out in self._stream([x.ids for x in inputs], params):
            samples = [
                Sample(text=o.text, token_ids=list(o.token_ids), finish_reason=str(o.finish_reason or "stop"))
                for o in sorted(out.outputs, key=lambda o: o.index)
            ]
            yield i, GenOutput(samples)

    def close(self) -> None:
        llm = getattr(self, "llm", None)
        if llm is not None:
            del self.llm
