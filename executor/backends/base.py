"""The interface every backend implements, and the Hugging Face tokenizer adapter they share.

A backend scores token windows and generates from token prompts; it yields results as they finish, tagged
with the index of the input, so the executor can write them while the rest are still running.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

from lmeval.executor.requests import GenInput, GenOutput, GenParams, ScoreInput, ScoreOutput, Tokenizer


class Backend(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def max_length(self) -> int:
        """Longest sequence (prompt + generation) the model takes."""
        ...

    @property
    def tokenizer(self) -> Tokenizer | None: ...

    def score(self, inputs: Sequence[ScoreInput]) -> Iterator[tuple[int, ScoreOutput]]:
        """Log-prob sum and greediness of ``ids[ctxlen:]`` for each input, yielded as they finish."""
        ...

    def generate(self, inputs: Sequence[GenInput]) -> Iterator[tuple[int, GenOutput]]:
        """Generations for each input, yielded as they finish."""
        ...

    def engine_args(self) -> dict[str, Any]:
        """The arguments the engine was started with (for the manifest)."""
        ...

    def close(self) -> None: ...


def samples_to_run(params: GenParams) -> int:
    """Greedy repeats give the same text: run once, replicate afterwards."""
    return 1 if params.greedy else params.n


class HFTokenizer:
    """A ``transformers`` tokenizer behind the executor's ``Tokenizer`` protocol."""

    def __init__(self, tok: Any) -> None:
        self._tok = tok
        self.eos_token_id: int | None = tok.eos_token_id
        self.bos_token_id: int | None = tok.bos_token_id
        self.pad_token_id: int | None = getattr(tok, "pad_token_id", None)

    def encode(self, text: str, add_special_tokens: bool) -> list[int]:
        return list(self._tok(text, add_special_tokens=add_special_tokens)["input_ids"])

    def decode(self, ids: Sequence[int]) -> str:
        # as lm-eval's final decode (HFLM.tok_decode): special tokens are dropped from the returned text;
        # stop detection happened on the engine side with them kept (a special token can be a stop string)
        return str(self._tok.decode(list(ids), skip_special_tokens=True))

    def decode_with_special(self, ids: Sequence[int]) -> str:
        """The text with special tokens kept: what stop strings are matched against (``<|im_end|>`` can be
        one), as lm-eval's stop criteria and vLLM do."""
        return str(self._tok.decode(list(ids), skip_special_tokens=False))

    def token_text(self, token_id: int) -> str:
        return str(self._tok.decode([token_id]))


def load_hf_tokenizer(model_dir: str | os.PathLike[str]) -> HFTokenizer:
    from transformers import AutoTokenizer

    return HFTokenizer(AutoTokenizer.from_pretrained(str(model_dir)))


def set_offline_env() -> None:
    """Environment the in-process engines need; set before torch or vllm is imported, never overriding."""
    for k, v in (
        ("VLLM_ENABLE_V1_MULTIPROCESSING", "0"),
        ("TORCHDYNAMO_DISABLE", "1"),
        ("HF_HUB_OFFLINE", "1"),
        ("HF_DATASETS_OFFLINE", "1"),
        ("TOKENIZERS_PARALLELISM", "false"),
        ("VLLM_LOGGING_STREAM", "ext://sys.stderr"),
        ("VLLM_LOGGING_LEVEL", "WARNING"),
    ):
        os.environ.setdefault(k, v)
