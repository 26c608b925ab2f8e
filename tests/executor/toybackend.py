"""A backend that lives outside the product (#52): one module implementing ``executor.backends.base.Backend``
plus one table line (``ENTRY``) is all a new backend takes. Its answers are simple functions of the token ids,
so a test can compute every row it writes."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from lmeval.executor.modelconf import ModelSpec
from lmeval.executor.requests import GenInput, GenOutput, Sample, ScoreInput, ScoreOutput, Tokenizer
from lmeval.plans import BackendEntry

ENTRY = BackendEntry("toy", __name__, "ToyBackend")


def toy_logprob(continuation: Sequence[int]) -> float:
    """The toy's log-likelihood of a continuation: minus a tenth of the sum of its ids modulo 97, per token."""
    return -sum(i % 97 for i in continuation) / 10.0 - len(continuation)


def toy_greedy(continuation: Sequence[int]) -> bool:
    return continuation[-1] % 2 == 0


def toy_text(ids: Sequence[int]) -> str:
    return f" toy answer {len(ids)}"


class ToyBackend:
    name = "toy"
    started: list[ToyBackend] = []  # every instance, so a test sees the table chose this class

    def __init__(self, spec: ModelSpec, model_dir: Path | None) -> None:
        self.max_length = int(spec.max_model_len or 2048)
        self.tokenizer: Tokenizer | None = None
        self.scored = 0
        ToyBackend.started.append(self)

    def score(self, inputs: Sequence[ScoreInput]) -> Iterator[tuple[int, ScoreOutput]]:
        for i, x in enumerate(inputs):
            self.scored += 1
            cont = x.ids[x.ctxlen :]
            yield i, ScoreOutput(toy_logprob(cont), toy_greedy(cont))

    def generate(self, inputs: Sequence[GenInput]) -> Iterator[tuple[int, GenOutput]]:
        for i, x in enumerate(inputs):
            yield i, GenOutput([Sample(text=toy_text(x.ids), token_ids=None, finish_reason="stop")])

    def engine_args(self) -> dict[str, Any]:
        return {"toy": True}

    def close(self) -> None:
        pass
