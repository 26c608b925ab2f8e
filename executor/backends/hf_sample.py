"""Per-row sampling and stopping for the ``hf`` backend's batched ``generate``, with vLLM's semantics.

transformers' ``generate`` runs greedy decoding here; ``RowSampler`` (a logits processor) turns each row's
scores into the one token that row picks, so rows of one batch may differ in every setting and each draws
from its own seeded generator (a request's samples do not depend on what it is batched with). The order is
vLLM v1's sampler: repetition penalty (tokens of the prompt and the output), frequency and presence
penalties (output counts), then, for a sampled row, temperature, ``min_p`` (of the tempered distribution),
``top_k`` (ties at the k-th value kept), ``top_p`` (of what ``top_k`` left, at least one token kept), and a
draw by the exponential race ``argmax(p / q)``, ``q ~ Exp(1)`` from the row's generator (vLLM's
``random_sample``). A greedy row takes the argmax of its penalised logits, as vLLM's greedy path does.

``RowStops`` (a stopping criterion) ends a row on an end-of-sequence id, on a stop string in its generated
text (special tokens kept, as vLLM and lm-eval match them), or at its own ``max_tokens``; the text checked is
the decoding of the last few tokens only (enough bytes to hold the longest stop string, plus two tokens of
lead), so a step costs the same however long the generation is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from lmeval.executor.requests import GenParams


@dataclass(frozen=True)
class Row:
    params: GenParams
    sample: int  # which of the request's samples (seeds ``seed + sample``)


def generator_for(p: GenParams, sample: int) -> torch.Generator | None:
    if p.greedy:
        return None
    return torch.Generator().manual_seed((p.seed or 0) + sample)


def penalize(logits: torch.Tensor, prompt: torch.Tensor, output: torch.Tensor, p: GenParams) -> torch.Tensor:
    """vLLM's ``apply_penalties`` for one row: ``prompt`` and ``output`` are 1-D id tensors."""
    if p.repetition_penalty != 1.0:
        seen = torch.zeros_like(logits, dtype=torch.bool)
        seen[prompt] = True
        seen[output] = True
        pen = torch.where(seen, p.repetition_penalty, 1.0)
        logits = logits * torch.where(logits > 0, 1.0 / pen, pen)
    if p.frequency_penalty or p.presence_penalty:
        counts = torch.bincount(output, minlength=logits.shape[-1])[: logits.shape[-1]].to(logits.dtype)
        logits = logits - p.frequency_penalty * counts - p.presence_penalty * (counts > 0).to(logits.dtype)
    return logits


def restrict(logits: torch.Tensor, p: GenParams) -> torch.Tensor:
    """Tempered logits of one row with what ``min_p``, ``top_k``, ``top_p`` exclude set to -inf."""
    x = logits / p.temperature
    if p.min_p > 0:
        probs = torch.softmax(x, dim=-1)
        x = x.masked_fill(probs < probs.max() * p.min_p, float("-inf"))
    if 0 < p.top_k < x.shape[-1]:
        kth = torch.topk(x, p.top_k).values[-1]
        x = x.masked_fill(x < kth, float("-inf"))
    if p.top_p < 1.0:
        srt, idx = torch.sort(x, descending=False)
        cum = torch.cumsum(torch.softmax(srt, dim=-1), dim=-1)
        drop = cum <= 1 - p.top_p
        drop[-1] = False
        x = x.scatter(0, idx, srt.masked_fill(drop, float("-inf")))
    return x


def draw(x: torch.Tensor, gen: torch.Generator) -> int:
    """vLLM's exponential race over ``softmax(x)`` with noise from ``gen``."""
    probs = torch.softmax(x, dim=-1)
    q = torch.empty_like(probs).exponential_(generator=gen)
    return int((probs / q).argmax())


def pick(logits: torch.Tensor, prompt: torch.Tensor, output: torch.Tensor, p: GenParams,
         gen: torch.Generator | None) -> int:  # fmt: skip
    """The token one row takes next."""
    x = penalize(logits.float(), prompt, output, p)
    if gen is None:
        return int(x.argmax())
    return draw(restrict(x, p), gen)


class RowSampler:
    """A logits processor for ``generate``: row ``r`` of the batch picks its token by ``pick`` with
    ``rows[r]``'s settings and generator; the returned scores are 0 at that token, -inf elsewhere."""

    def __init__(self, rows: Sequence[Row], prompts: Sequence[Sequence[int]], width: int) -> None:
        self.rows = list(rows)
        self.width = width  # the left-padded prompt width: ids from it on are generated
        self.prompts = [torch.tensor(list(ids), dtype=torch.long) for ids in prompts]
        self.gens = [generator_for(r.params, r.sample) for r in rows]
        self.plain = all(r.params.greedy and not _penalised(r.params) for r in rows)

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        if self.plain:  # greedy without penalties: generate's own argmax
            return scores
        out = torch.full_like(scores, float("-inf"))
        for r, row in enumerate(self.rows):
            tok = pick(scores[r], self.prompts[r], input_ids[r, self.width :], row.params, self.gens[r])
            out[r, tok] = 0.0
        return out


def _penalised(p: GenParams) -> bool:
    return p.repetition_penalty != 1.0 or bool(p.frequency_penalty) or bool(p.presence_penalty)


def stop_window(stops: Sequence[str]) -> int:
    """Tokens of generated text that hold any of ``stops`` ending in the last token: every token is at
    least one byte; two more tokens of lead keep a leading-space or split-character token off the edge."""
    return max((len(s.encode()) for s in stops if s), default=0) + 2


class RowStops:
    """A stopping criterion for ``generate``: per row, done on EOS, a stop string, or its ``max_tokens``;
    ``lengths[r]`` and ``reasons[r]`` say where and why row ``r`` ended."""

    def __init__(self, rows: Sequence[Row], width: int, eos: set[int], decode: Callable[[list[int]], str]) -> None:
        self.rows = list(rows)
        self.width = width
        self.eos = eos
        self.decode = decode
        self.windows = [stop_window(r.params.stop) for r in rows]
        self.lengths: list[int | None] = [None] * len(rows)
        self.reasons = ["length"] * len(rows)

    def __call__(self, input_ids: torch.Tensor, scores: Any, **kwargs: Any) -> torch.Tensor:
        g = input_ids.shape[1] - self.width
        done = torch.zeros(input_ids.shape[0], dtype=torch.bool)
        for r, row in enumerate(self.rows):
            if self.lengths[r] is not None:
                done[r] = True
                continue
            last = int(input_ids[r, -1])
            stops = [s for s in row.params.stop if s]
            if last in self.eos:
                self.reasons[r] = "stop"
            elif stops and any(s in self.tail(input_ids[r], g, self.windows[r]) for s in stops):
                self.reasons[r] = "stop"
            elif g < row.params.max_tokens:
                continue
            self.lengths[r] = g
            done[r] = True
        return done

    def tail(self, ids: torch.Tensor, g: int, window: int) -> str:
        return self.decode(ids[self.width + max(0, g - window) :].tolist())
