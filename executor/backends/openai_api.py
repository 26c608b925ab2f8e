"""The ``openai`` backend: an OpenAI-compatible completions server (e.g. ``vllm serve``).

Prompts are sent as token ids. Log-likelihoods come from ``echo`` with ``logprobs=1`` and ``max_tokens=0``
(tokens returned as ``token_id:N`` so greediness is decided on ids, not strings); generations from the
completions endpoint with the plan's stop strings and sampling settings, returning token ids when the
server can (vLLM's ``return_token_ids``).

Settings (``model.engine``): ``base_url`` (default ``$OPENAI_BASE_URL`` or ``http://127.0.0.1:8000/v1``),
``model`` (default: the server's only model), ``api_key`` (default ``$OPENAI_API_KEY``), ``concurrency``
(parallel HTTP requests, default 8), ``score_batch`` (prompts per scoring request, default 32), and the
HTTP client's retry settings and request budget (executor/backends/http.py).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from lmeval.executor.backends.base import load_hf_tokenizer, samples_to_run
from lmeval.executor.backends.http import HttpClient, asked_twice, run_concurrently
from lmeval.executor.backends.httpsettings import MAX_CONCURRENCY, setting_int
from lmeval.executor.backends.openai_answers import (
    best_token,
    choices_of,
    finish_reason_of,
    logprob,
    score_logprobs,
    text_of,
    token_ids_of,
)
from lmeval.executor.modelconf import ModelSpec
from lmeval.executor.requests import GenInput, GenOutput, Sample, ScoreInput, ScoreOutput


def completion_body(model: str, x: GenInput) -> dict[str, Any]:
    """The ``/v1/completions`` body of one generation: token-id prompt, the plan's stop strings and sampling."""
    p = x.params
    body: dict[str, Any] = {
        "model": model,
        "prompt": x.ids,
        "max_tokens": p.max_tokens,
        "stop": list(p.stop),
        "temperature": p.temperature,
        "top_p": p.top_p,
        "n": samples_to_run(p),
        "skip_special_tokens": False,
        "spaces_between_special_tokens": False,
        "return_token_ids": True,
    }
    if p.seed is not None:
        body["seed"] = p.seed
    if p.top_k:
        body["top_k"] = p.top_k
    return body


def completion_output(resp: Any, n: int | None = None, what: str = "POST /completions") -> GenOutput:
    """A ``/v1/completions`` answer as the executor's output (token ids when the server returned them);
    ``ValueError`` in one line for an answer that is not ``n`` completions (None: any number;
    executor/backends/openai_answers.py)."""
    return GenOutput(
        [
            Sample(
                text=text_of(c.get("text"), what, "text"),
                token_ids=token_ids_of(c.get("token_ids"), what),
                finish_reason=finish_reason_of(c),
            )
            for c in choices_of(resp, n, what)
        ]
    )


def scored(resp: Any, xs: Sequence[ScoreInput], what: str) -> list[ScoreOutput]:
    """The log-likelihood and greediness of each prompt's continuation from an ``echo`` answer; ``ValueError``
    in one line for a malformed one."""
    outs = []
    for x, c in zip(xs, choices_of(resp, len(xs), what), strict=True):
        values, tops = score_logprobs(c, len(x.ids), what)
        total = 0.0
        greedy = True
        for pos in range(x.ctxlen, len(x.ids)):
            total += logprob(values[pos], what, pos)
            if best_token(tops[pos], what, pos) != f"token_id:{x.ids[pos]}":
                greedy = False
        if not math.isfinite(total):
            raise ValueError(f"{what}: the log-likelihood sums to {total}")
        outs.append(ScoreOutput(total, greedy))
    return outs


class OpenAIBackend:
    name = "openai"

    def __init__(self, spec: ModelSpec, model_dir: Path | None) -> None:
        e = spec.engine
        self.http = HttpClient(e, spec.plan_base_url)
        self.base_url = self.http.base_url
        self.concurrency = setting_int(e, "concurrency", 8, 1, MAX_CONCURRENCY)
        self.score_batch = setting_int(e, "score_batch", 32, 1, 1 << 16)
        self.model = str(e.get("model") or self.http.only_model())
        self.tokenizer = load_hf_tokenizer(model_dir) if model_dir is not None else None
        self.max_length = int(spec.max_model_len or self.http.server_max_len(self.model) or 2048)

    def engine_args(self) -> dict[str, Any]:
        return {"base_url": self.base_url, "model": self.model, "concurrency": self.concurrency}

    def _score_batch(self, xs: Sequence[ScoreInput]) -> list[ScoreOutput]:
        body = {
            "model": self.model,
            "prompt": [x.ids for x in xs],
            "echo": True,
            "max_tokens": 0,
            "logprobs": 1,
            "temperature": 0,
            "return_tokens_as_token_ids": True,
        }
        key = xs[0].key if xs else None
        what = f"POST {self.base_url}/completions"
        return asked_twice(lambda: self.http.request("POST", "/completions", body, key=key),
                           lambda resp: scored(resp, xs, what), key)  # fmt: skip

    def score(self, inputs: Sequence[ScoreInput]) -> Iterator[tuple[int, ScoreOutput]]:
        batches = [range(s, min(s + self.score_batch, len(inputs))) for s in range(0, len(inputs), self.score_batch)]
        for b, outs in run_concurrently(lambda r: self._score_batch([inputs[i] for i in r]), batches, self.concurrency):
            yield from zip(batches[b], outs, strict=True)

    def _generate_one(self, x: GenInput) -> GenOutput:
        what = f"POST {self.base_url}/completions"
        body = completion_body(self.model, x)
        return asked_twice(lambda: self.http.request("POST", "/completions", body, key=x.key),
                           lambda resp: completion_output(resp, samples_to_run(x.params), what), x.key)  # fmt: skip

    def generate(self, inputs: Sequence[GenInput]) -> Iterator[tuple[int, GenOutput]]:
        return run_concurrently(self._generate_one, inputs, self.concurrency)

    def close(self) -> None:
        pass
