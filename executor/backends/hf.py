"""The ``hf`` backend: transformers on the CPU, the reference the vLLM numbers are checked against.

Scoring reads every request's log-probs from the fewest forwards (``hf_scoreplan``): the choices of a
question that share its context and are one token each come from one forward, a continuation another one
extends is read from the longer one, and a few-shot prefix that many documents repeat runs once per group,
its keys and values reused for each document's own tokens; only the logits rows some request reads are
computed. Generation is transformers' own ``generate``, batched (left-padded, longest first), each row with
vLLM's sampling semantics and its own seeded generator (``hf_sample``), stopping on EOS, a stop string
(checked on the new tail only) or its ``max_tokens``, as vLLM does. Batch size: ``model.batch_size``, else
the memory rule of ``hf_memory`` per phase. ``docs/how-to/hf-backend.md`` is the user's page.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from lmeval.executor.backends.base import load_hf_tokenizer, samples_to_run, set_offline_env
from lmeval.executor.backends.hf_memory import auto_batch_size, free_memory, model_dims
from lmeval.executor.backends.hf_sample import Row, RowSampler, RowStops
from lmeval.executor.backends.hf_scoreplan import (
    MIN_PREFIX,
    Forward,
    PrefixGroup,
    batches,
    common_prefix_all,
    cover,
    prefix_groups,
)
from lmeval.executor.engineconf import detect_platform, model_facts
from lmeval.executor.errors import ExecuteError
from lmeval.executor.modelconf import ModelSpec
from lmeval.executor.requests import GenInput, GenOutput, Sample, ScoreInput, ScoreOutput

_DTYPES = {
    "float32": "float32",
    "float": "float32",
    "fp32": "float32",
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
    "float16": "float16",
    "half": "float16",
    "fp16": "float16",
}


# architectures whose forward is ``lm_head(decoder(...).last_hidden_state)`` and nothing more (no logit
# soft-capping or scaling): their head can run on the rows scoring reads only
_PLAIN_HEAD = frozenset({"llama", "mistral", "qwen2", "qwen3", "olmo", "olmo2", "smollm3"})


class HFBackend:
    name = "hf"

    def __init__(self, spec: ModelSpec, model_dir: Path) -> None:
        set_offline_env()
        import torch
        from transformers import AutoModelForCausalLM

        dtype_name = _DTYPES.get(spec.dtype, "float32")  # "auto" on a CPU: float32
        self._dtype = getattr(torch, dtype_name)
        self.model: Any
        try:
            self.model = AutoModelForCausalLM.from_pretrained(
                str(model_dir), dtype=self._dtype, trust_remote_code=spec.trust_remote_code
            )
        except (OSError, ValueError) as e:  # ValueError: e.g. code the user has not trusted (trust_remote_code)
            text = " ".join(str(e).split())
            raise ExecuteError(f"model.path={model_dir}: cannot load with transformers ({text})") from None
        self.model.eval()
        self.tokenizer = load_hf_tokenizer(model_dir)
        cfg = self.model.config
        self.max_length: int = int(spec.max_model_len or model_facts(model_dir).max_model_len)
        self.platform = detect_platform(use_vllm=False)
        self._fixed_batch: int | None = spec.batch_size
        self._dims = model_dims(cfg, dtype_name)
        self.last_batch_size: int | None = None  # what the last phase ran with
        eos = getattr(self.model.generation_config, "eos_token_id", None) or cfg.eos_token_id
        self._eos_ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        if self.tokenizer.eos_token_id is not None:
            self._eos_ids.add(self.tokenizer.eos_token_id)
        pad = self.tokenizer.pad_token_id
        self._pad_id: int = int(pad if pad is not None else min(self._eos_ids, default=0))
        # generate() fills what its config leaves unset from the model's generation_config (a checkpoint's
        # temperature, top_k, repetition_penalty, ...): the plan's settings alone apply here
        from transformers import GenerationConfig

        self.model.generation_config = GenerationConfig()
        self._can_keep = "logits_to_keep" in inspect.signature(self.model.forward).parameters
        self._plain_head = (
            getattr(cfg, "model_type", None) in _PLAIN_HEAD
            and hasattr(self.model, "lm_head")
            and hasattr(self.model, "get_decoder")
        )
        self._args = {"model": str(model_dir), "dtype": dtype_name, "batch_size": spec.batch_size or "auto"}
        # token positions run through the model, padding included (executor/efficiency.py)
        self.cache_stats = {"computed_tokens": 0}

    def engine_args(self) -> dict[str, Any]:
        return dict(self._args)

    def batch_size_for(self, longest: int) -> int:
        """``model.batch_size`` when set, else the memory rule (``hf_memory``) at the phase's longest length."""
        if self._fixed_batch is not None:
            return self._fixed_batch
        return auto_batch_size(self._dims, longest, free_memory())

    # ------------------------------------------------------------------------------------------- scoring

    def score(self, inputs: Sequence[ScoreInput]) -> Iterator[tuple[int, ScoreOutput]]:
        """Every input's log-probs, read from the fewest forwards (``hf_scoreplan``): one per distinct
        context for one-token continuations, a longer continuation's forward for the ones it extends, a
        shared few-shot prefix run once per group of documents."""
        if not inputs:
            return
        forwards = cover(inputs)
        bs = self.batch_size_for(max(len(f.ids) for f in forwards))
        self.last_batch_size = bs
        groups = prefix_groups(forwards)
        plain = sorted((g.forwards[0] for g in groups if g.prefix == 0), key=lambda f: -len(f.ids))
        for b in batches([len(f.ids) for f in plain], bs, bs * max((len(f.ids) for f in plain), default=1)):
            yield from self._score_batch(inputs, [plain[k] for k in b], 0, None)
        for g in groups:
            if g.prefix:
                yield from self._score_group(inputs, g, bs)

    def _score_group(self, inputs: Sequence[ScoreInput], g: PrefixGroup, bs: int) -> Iterator[tuple[int, ScoreOutput]]:
        import torch

        ids = torch.tensor([g.forwards[0].ids[: g.prefix]])
        _, cache = self._forward(ids, torch.ones_like(ids), None, [], keep_cache=True)
        fw = sorted(g.forwards, key=lambda f: -len(f.ids))
        for b in batches([len(f.ids) for f in fw], bs, bs * len(fw[0].ids)):
            yield from self._score_batch(inputs, [fw[k] for k in b], g.prefix, cache)

    def _forward(self, ids: Any, mask: Any, cache: Any, pairs: list[tuple[int, int]],
                 keep_cache: bool = False) -> tuple[Any, Any]:  # fmt: skip
        """The logits at ``pairs`` (batch row, position of ``ids``) as a (len(pairs), vocab) tensor, and
        the cache when ``keep_cache``; ``cache`` holds keys and values of a prefix ``mask`` starts with.
        A plain-head model (``_PLAIN_HEAD``) runs its decoder and applies the head to those rows only;
        another one computes the union of the positions (``logits_to_keep``) or, without it, all."""
        import torch

        self.cache_stats["computed_tokens"] += int(ids.numel())
        kwargs: dict[str, Any] = {"input_ids": ids, "attention_mask": mask, "use_cache": keep_cache}
        if cache is not None:
            c = copy.deepcopy(cache)
            c.batch_repeat_interleave(ids.shape[0])
            kwargs.update(past_key_values=c, use_cache=True)
        r_idx = torch.tensor([r for r, _ in pairs], dtype=torch.long)
        p_idx = torch.tensor([p for _, p in pairs], dtype=torch.long)
        with torch.inference_mode():
            if self._plain_head:
                out = self.model.get_decoder()(**kwargs)
                logits = self.model.lm_head(out.last_hidden_state[r_idx, p_idx]) if pairs else None
            else:
                kept = sorted({p for _, p in pairs}) or [ids.shape[1] - 1]
                where = torch.tensor([kept.index(p) for p in p_idx.tolist()], dtype=torch.long)
                if self._can_keep:
                    out = self.model(**kwargs, logits_to_keep=torch.tensor(kept))
                    logits = out.logits[r_idx, where]
                else:
                    out = self.model(**kwargs)
                    logits = out.logits[r_idx, p_idx]
        return logits, (out.past_key_values if keep_cache else None)

    def _score_batch(self, inputs: Sequence[ScoreInput], fws: list[Forward], prefix: int,
                     cache: Any) -> Iterator[tuple[int, ScoreOutput]]:  # fmt: skip
        """One right-padded forward of ``fws``' ids from ``prefix`` on (reading ``cache`` for the prefix);
        only the logits rows some member reads are computed."""
        import torch

        width = max(len(f.ids) for f in fws) - prefix
        ids = torch.full((len(fws), width), self._pad_id, dtype=torch.long)
        mask = torch.zeros((len(fws), prefix + width), dtype=torch.long)
        mask[:, :prefix] = 1
        slot: dict[tuple[int, int], int] = {}
        for r, f in enumerate(fws):
            n = len(f.ids) - prefix
            ids[r, :n] = torch.tensor(f.ids[prefix:])
            mask[r, prefix : prefix + n] = 1
            for i in f.members:
                for p in range(inputs[i].ctxlen - 1 - prefix, len(inputs[i].ids) - 1 - prefix):
                    slot.setdefault((r, p), len(slot))
        logits, _ = self._forward(ids, mask, cache, list(slot))
        with torch.inference_mode():
            for r, f in enumerate(fws):
                for i in f.members:
                    x = inputs[i]
                    sel = [slot[(r, p)] for p in range(x.ctxlen - 1 - prefix, len(x.ids) - 1 - prefix)]
                    lp = torch.log_softmax(logits[sel].float(), dim=-1)
                    target = torch.tensor(x.ids[x.ctxlen :])
                    picked = lp.gather(1, target[:, None])[:, 0]
                    greedy = bool((lp.argmax(dim=-1) == target).all())
                    yield i, ScoreOutput(float(picked.sum()), greedy)

    # ----------------------------------------------------------------------------------------- generation

    def generate(self, inputs: Sequence[GenInput]) -> Iterator[tuple[int, GenOutput]]:
        """Batched ``generate`` (left-padded, longest first), each request's samples one row each: rows of a
        batch may differ in every sampling setting (``hf_sample.RowSampler``) and stop on their own
        (``hf_sample.RowStops``)."""
        if not inputs:
            return
        rows = [(i, s) for i, x in enumerate(inputs) for s in range(samples_to_run(x.params))]
        rows.sort(key=lambda r: (-inputs[r[0]].params.max_tokens, -len(inputs[r[0]].ids), r))
        bs = self.batch_size_for(max(len(x.ids) + x.params.max_tokens for x in inputs))
        self.last_batch_size = bs
        got: dict[int, dict[int, Sample]] = {}
        for start in range(0, len(rows), bs):
            batch = rows[start : start + bs]
            for (i, s), sample in zip(batch, self._generate_batch([inputs[i] for i, _ in batch], batch), strict=True):
                got.setdefault(i, {})[s] = sample
                want = samples_to_run(inputs[i].params)
                if len(got[i]) == want:
                    yield i, GenOutput([got[i][k] for k in range(want)])
                    del got[i]

    def _generate_batch(self, xs: list[GenInput], batch: list[tuple[int, int]]) -> list[Sample]:
        import torch
        from transformers import GenerationConfig, LogitsProcessorList, StoppingCriteriaList

        # a prefix every prompt of the batch shares (few-shot examples) runs once, its keys and values
        # repeated for each row; each row's own tokens follow it, left-padded within their part
        shared = min(common_prefix_all([x.ids for x in xs]), min(len(x.ids) for x in xs) - 1)
        prefix = shared if len(xs) > 1 and shared >= MIN_PREFIX else 0
        own = max(len(x.ids) for x in xs) - prefix
        width = prefix + own
        ids = torch.full((len(xs), width), self._pad_id, dtype=torch.long)
        mask = torch.zeros((len(xs), width), dtype=torch.long)
        ids[:, :prefix] = torch.tensor(xs[0].ids[:prefix])
        mask[:, :prefix] = 1
        for r, x in enumerate(xs):
            ids[r, width - (len(x.ids) - prefix) :] = torch.tensor(x.ids[prefix:])
            mask[r, width - (len(x.ids) - prefix) :] = 1
        extra: dict[str, Any] = {}
        if prefix:
            p_ids = ids[:1, :prefix]
            _, cache = self._forward(p_ids, torch.ones_like(p_ids), None, [], keep_cache=True)
            cache.batch_repeat_interleave(len(xs))
            extra["past_key_values"] = cache
        rows = [Row(x.params, s) for x, (_, s) in zip(xs, batch, strict=True)]
        longest = max(x.params.max_tokens for x in xs)
        if longest <= 0:
            return [Sample(text=None, token_ids=[], finish_reason="length") for _ in xs]
        stops = RowStops(rows, width, self._eos_ids, self.tokenizer.decode_with_special)
        cfg = GenerationConfig(max_new_tokens=longest, do_sample=False, num_beams=1, pad_token_id=self._pad_id,
                               eos_token_id=sorted(self._eos_ids) or None)  # fmt: skip
        with torch.inference_mode():
            out = self.model.generate(
                input_ids=ids,
                attention_mask=mask,
                generation_config=cfg,
                logits_processor=LogitsProcessorList([RowSampler(rows, [x.ids for x in xs], width)]),
                stopping_criteria=StoppingCriteriaList([stops]),
                **extra,
            )
        # the rows' own prompt tokens (the shared prefix was counted by its forward) and every decoding step of
        # every row until the batch's last one stopped
        self.cache_stats["computed_tokens"] += len(xs) * (own + out.shape[1] - width)
        samples = []
        for r in range(len(xs)):
            n = stops.lengths[r]
            n = out.shape[1] - width if n is None else n
            samples.append(Sample(text=None, token_ids=out[r, width : width + n].tolist(),
                                  finish_reason=stops.reasons[r]))  # fmt: skip
        return samples

    def close(self) -> None:
        self.model = None


def hf_backend(spec: ModelSpec, model_dir: Path) -> HFBackend | Any:
    """The hf backend for ``model_dir``: ``HFVisionBackend`` for a vision-language model, else ``HFBackend``."""
    from lmeval.executor.backends.hf_vision import HFVisionBackend, is_vision_model

    if is_vision_model(model_dir):
        return HFVisionBackend(spec, model_dir)
    return HFBackend(spec, model_dir)
