"""The ``hf`` backend: transformers on the CPU, the reference the vLLM numbers are checked against.

Scoring runs right-padded batches (sorted by length) and reads the log-softmax at each continuation
position; generation decodes one request at a time with the KV cache and stops on EOS or when a stop string
appears in the generated text, as vLLM does.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from lmeval.executor.backends.base import load_hf_tokenizer, samples_to_run, set_offline_env
from lmeval.executor.engineconf import detect_platform, model_facts
from lmeval.executor.errors import ExecuteError
from lmeval.executor.modelconf import ModelSpec
from lmeval.executor.requests import GenInput, GenOutput, Sample, ScoreInput, ScoreOutput

DEFAULT_BATCH_SIZE = 16
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
        self.batch_size = spec.batch_size or DEFAULT_BATCH_SIZE
        eos = getattr(self.model.generation_config, "eos_token_id", None) or cfg.eos_token_id
        self._eos_ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        if self.tokenizer.eos_token_id is not None:
            self._eos_ids.add(self.tokenizer.eos_token_id)
        self._args = {"model": str(model_dir), "dtype": dtype_name, "batch_size": self.batch_size}

    def engine_args(self) -> dict[str, Any]:
        return dict(self._args)

    def score(self, inputs: Sequence[ScoreInput]) -> Iterator[tuple[int, ScoreOutput]]:
        import torch

        order = sorted(range(len(inputs)), key=lambda i: -len(inputs[i].ids))
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            width = max(len(inputs[i].ids) for i in batch)
            ids = torch.zeros((len(batch), width), dtype=torch.long)
            mask = torch.zeros((len(batch), width), dtype=torch.long)
            for r, i in enumerate(batch):
                n = len(inputs[i].ids)
                ids[r, :n] = torch.tensor(inputs[i].ids)
                mask[r, :n] = 1
            with torch.inference_mode():
                logits = self.model(input_ids=ids, attention_mask=mask).logits.float()
            for r, i in enumerate(batch):
                x = inputs[i]
                n = len(x.ids)
                lp = torch.log_softmax(logits[r, x.ctxlen - 1 : n - 1], dim=-1)
                target = torch.tensor(x.ids[x.ctxlen :])
                picked = lp.gather(1, target[:, None])[:, 0]
                greedy = bool((lp.argmax(dim=-1) == target).all())
                yield i, ScoreOutput(float(picked.sum()), greedy)

    def _generate_one(self, x: GenInput, sample: int) -> Sample:
        import torch

        p = x.params
        gen = None
        if not p.greedy:
            gen = torch.Generator().manual_seed((p.seed or 0) + sample)
        out_ids: list[int] = []
        finish = "length"
        with torch.inference_mode():
            out = self.model(input_ids=torch.tensor([x.ids]), use_cache=True)
            past = out.past_key_values
            logits = out.logits[0, -1].float()
            for _ in range(p.max_tokens):
                if p.greedy:
                    nxt = int(logits.argmax())
                else:
                    probs = torch.softmax(logits / p.temperature, dim=-1)
                    nxt = int(torch.multinomial(probs, 1, generator=gen))
                out_ids.append(nxt)
                if nxt in self._eos_ids:
                    finish = "stop"
                    break
                text = self.tokenizer.decode_with_special(out_ids)  # a special token can be a stop string
                if any(s and s in text for s in p.stop):
                    finish = "stop"
                    break
                out = self.model(input_ids=torch.tensor([[nxt]]), past_key_values=past, use_cache=True)
                past = out.past_key_values
                logits = out.logits[0, -1].float()
        return Sample(text=None, token_ids=out_ids, finish_reason=finish)

    def generate(self, inputs: Sequence[GenInput]) -> Iterator[tuple[int, GenOutput]]:
        for i, x in enumerate(inputs):
            yield i, GenOutput([self._generate_one(x, s) for s in range(samples_to_run(x.params))])

    def close(self) -> None:
        self.model = None
