"""Where two greedy generations from the same prompt part, and whether the model's top two tokens tie there.

Two engines running the same float32 weights (vLLM's CPU kernels and transformers') agree on log-probs to
the bound of ``tests/bounds.py`` (``VS_LM_EVAL``), so greedy decoding may only part where the two best next
tokens are that close. ``divergence``
finds the first token where two generations differ (both texts re-encoded with the model's tokenizer; a text
that ended there counts as the end-of-sequence token), scores the prompt and the shared part once with
transformers, and reports the gap between the top two log-probs and whether the two tokens taken are those
two.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from tests.bounds import VS_LM_EVAL, greedy_tie_gap

# nats: twice the per-request bound against lm-eval (each of the two log-probs may move by one); above it, a
# real difference
GAP = greedy_tie_gap(VS_LM_EVAL)


@dataclass
class Divergence:
    task: str
    doc_id: int
    position: int  # generated tokens shared before the two part
    ours_token: int
    ref_token: int
    top2: tuple[int, int]
    gap: float  # log-prob of the best token minus the second best, at that position

    @property
    def tie(self) -> bool:
        return self.gap <= GAP and {self.ours_token, self.ref_token} <= set(self.top2)

    def __str__(self) -> str:
        return (f"{self.task} doc {self.doc_id}: parted after {self.position} tokens, ours {self.ours_token} "
                f"lm-eval {self.ref_token}, top two {self.top2} gap {self.gap:.3g} "
                f"({'tie' if self.tie else 'NOT a tie'})")  # fmt: skip


@cache
def _load(model_dir: str) -> tuple[Any, Any]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype="float32")
    model.eval()
    return AutoTokenizer.from_pretrained(model_dir), model


def divergence(model_dir: Path, task: str, doc_id: int, prompt_ids: list[int], ours: str, ref: str) -> Divergence:
    import torch

    tok, model = _load(str(model_dir))
    a = list(tok(ours, add_special_tokens=False)["input_ids"])
    b = list(tok(ref, add_special_tokens=False)["input_ids"])
    j = next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    eos = int(tok.eos_token_id)
    with torch.no_grad():
        logits = model(torch.tensor([prompt_ids + a[:j]])).logits[0, -1]
    lp = torch.log_softmax(logits.double(), dim=-1)
    top = torch.topk(lp, 2)
    t1, t2 = (int(i) for i in top.indices)
    return Divergence(task, doc_id, j, a[j] if j < len(a) else eos, b[j] if j < len(b) else eos, (t1, t2),
                      float(top.values[0] - top.values[1]))  # fmt: skip
