"""The ``fake`` backend, for fast tests only: every answer is a deterministic function of the request key.

It loads no model and no tokenizer library: text is encoded as UTF-8 bytes. ``model.engine.delay_s``
sleeps that long per request (to make kill-and-resume tests hit a run in the middle).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from lmeval.executor.modelconf import ModelSpec
from lmeval.executor.requests import GenInput, GenOutput, Sample, ScoreInput, ScoreOutput, fake_seed

_BATCH = 8


class ByteTokenizer:
    """UTF-8 bytes are tokens 0..255; BOS is 256, EOS 257."""

    bos_token_id: int | None = 256
    eos_token_id: int | None = 257

    def encode(self, text: str, add_special_tokens: bool) -> list[int]:
        ids = list(text.encode("utf-8"))
        return [256, *ids] if add_special_tokens else ids

    def decode(self, ids: Sequence[int]) -> str:
        return (
            "".join(self.token_text(i) for i in ids)
            if any(i > 255 for i in ids)
            else bytes(ids).decode("utf-8", errors="replace")
        )

    def token_text(self, token_id: int) -> str:
        if token_id == 256:
            return "<bos>"
        if token_id == 257:
            return "<eos>"
        return bytes([token_id]).decode("utf-8", errors="replace")


class FakeBackend:
    name = "fake"

    def __init__(self, spec: ModelSpec, model_dir: Path | None) -> None:
        self.tokenizer = ByteTokenizer()
        self.max_length = int(spec.max_model_len or 4096)
        self.delay_s = float(spec.engine.get("delay_s", 0.0) or 0.0)
        self.calls = 0

    def engine_args(self) -> dict[str, Any]:
        return {"delay_s": self.delay_s}

    def _pause(self, n: int) -> None:
        if self.delay_s:
            time.sleep(self.delay_s * n)

    def score(self, inputs: Sequence[ScoreInput]) -> Iterator[tuple[int, ScoreOutput]]:
        for start in range(0, len(inputs), _BATCH):
            chunk = range(start, min(start + _BATCH, len(inputs)))
            self._pause(len(chunk))
            for i in chunk:
                h = fake_seed(inputs[i].key)
                n = len(inputs[i].ids) - inputs[i].ctxlen
                yield i, ScoreOutput(-(h % 100_000) / 1000.0 - 0.01 * n, h % 3 == 0)

    def generate(self, inputs: Sequence[GenInput]) -> Iterator[tuple[int, GenOutput]]:
        for start in range(0, len(inputs), _BATCH):
            chunk = range(start, min(start + _BATCH, len(inputs)))
            self._pause(len(chunk))
            for i in chunk:
                x = inputs[i]
                samples = []
                for s in range(x.params.n if not x.params.greedy else 1):
                    h = fake_seed(f"{x.key}:{s}:{x.params.seed}")
                    text = f" fake answer {h % 1000}"
                    if h % 2 and x.params.stop:
                        text += x.params.stop[0] + " after the stop"
                    samples.append(Sample(text=text, token_ids=None, finish_reason="stop" if h % 2 else "length"))
                yield i, GenOutput(samples)

    def close(self) -> None:
        pass
