"""The ``openai`` backend: an OpenAI-compatible completions server (e.g. ``vllm serve``).

Prompts are sent as token ids. Log-likelihoods come from ``echo`` with ``logprobs=1`` and ``max_tokens=0``
(tokens returned as ``token_id:N`` so greediness is decided on ids, not strings); generations from the
completions endpoint with the plan's stop strings and sampling settings, returning token ids when the
server can (vLLM's ``return_token_ids``).

Settings (``model.engine``): ``base_url`` (default ``$OPENAI_BASE_URL`` or ``http://127.0.0.1:8000/v1``),
``model`` (default: the server's only model), ``api_key`` (default ``$OPENAI_API_KEY``), ``concurrency``
(parallel HTTP requests, default 8), ``score_batch`` (prompts per scoring request, default 32), ``timeout_s``.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from lmeval.executor.backends.base import load_hf_tokenizer, samples_to_run
from lmeval.executor.errors import ExecuteError
from lmeval.executor.modelconf import ModelSpec
from lmeval.executor.requests import GenInput, GenOutput, Sample, ScoreInput, ScoreOutput


class OpenAIBackend:
    name = "openai"

    def __init__(self, spec: ModelSpec, model_dir: Path | None) -> None:
        e = spec.engine
        self.base_url = str(
            e.get("base_url") or os.environ.get("OPENAI_BASE_URL") or "http://127.0.0.1:8000/v1"
        ).rstrip("/")
        self.api_key = str(e.get("api_key") or os.environ.get("OPENAI_API_KEY") or "EMPTY")
        self.concurrency = int(e.get("concurrency") or 8)
        self.score_batch = int(e.get("score_batch") or 32)
        self.timeout_s = float(e.get("timeout_s") or 600)
        self.model = str(e.get("model") or self._only_model())
        self.tokenizer = load_hf_tokenizer(model_dir) if model_dir is not None else None
        self.max_length = int(spec.max_model_len or self._server_max_len() or 2048)

    def engine_args(self) -> dict[str, Any]:
        return {"base_url": self.base_url, "model": self.model, "concurrency": self.concurrency}

    def _request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(
            self.base_url + path,
            data=data,
            method=method,
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {self.api_key}"},
        )
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as err:
            detail = err.read().decode("utf-8", errors="replace")[:300]
            raise ExecuteError(f"{self.base_url}{path}: HTTP {err.code}: {detail}") from None
        except (urllib.error.URLError, OSError) as err:
            raise ExecuteError(f"{self.base_url}{path}: cannot reach the server ({err})") from None

    def _models(self) -> list[dict[str, Any]]:
        return list(self._request("GET", "/models").get("data", []))

    def _only_model(self) -> str:
        models = self._models()
        if len(models) != 1:
            names = ", ".join(m.get("id", "?") for m in models)
            raise ExecuteError(f"{self.base_url}: serves {len(models)} models ({names}); set model.engine.model")
        return str(models[0]["id"])

    def _server_max_len(self) -> int | None:
        for m in self._models():
            if m.get("id") == self.model and m.get("max_model_len"):
                return int(m["max_model_len"])
        return None

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
        resp = self._request("POST", "/completions", body)
        choices = sorted(resp["choices"], key=lambda c: c["index"])
        if len(choices) != len(xs):
            raise ExecuteError(f"{self.base_url}: {len(choices)} completions for {len(xs)} prompts")
        outs = []
        for x, c in zip(xs, choices, strict=True):
            lp = c["logprobs"]
            total = 0.0
            greedy = True
            for pos in range(x.ctxlen, len(x.ids)):
                value = lp["token_logprobs"][pos]
                total += float(value)
                top = lp["top_logprobs"][pos] or {}
                best = max(top.items(), key=lambda kv: float(kv[1]))[0] if top else None
                if best != f"token_id:{x.ids[pos]}":
                    greedy = False
            outs.append(ScoreOutput(total, greedy))
        return outs

    def score(self, inputs: Sequence[ScoreInput]) -> Iterator[tuple[int, ScoreOutput]]:
        batches = [range(s, min(s + self.score_batch, len(inputs))) for s in range(0, len(inputs), self.score_batch)]
        with ThreadPoolExecutor(self.concurrency) as pool:
            futs: dict[Future[list[ScoreOutput]], range] = {
                pool.submit(self._score_batch, [inputs[i] for i in b]): b for b in batches
            }
            try:
                for f in as_completed(futs):
                    yield from zip(futs[f], f.result(), strict=True)
            finally:
                for f in futs:
                    f.cancel()

    def _generate_one(self, x: GenInput) -> GenOutput:
        p = x.params
        body: dict[str, Any] = {
            "model": self.model,
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
        resp = self._request("POST", "/completions", body)
        choices = sorted(resp["choices"], key=lambda c: c["index"])
        return GenOutput(
            [
                Sample(
                    text=c.get("text", ""),
                    token_ids=list(c["token_ids"]) if c.get("token_ids") is not None else None,
                    finish_reason=str(c.get("finish_reason") or "stop"),
                )
                for c in choices
            ]
        )

    def generate(self, inputs: Sequence[GenInput]) -> Iterator[tuple[int, GenOutput]]:
        with ThreadPoolExecutor(self.concurrency) as pool:
            futs = {pool.submit(self._generate_one, x): i for i, x in enumerate(inputs)}
            try:
                for f in as_completed(futs):
                    yield futs[f], f.result()
            finally:
                for f in futs:
                    f.cancel()

    def close(self) -> None:
        pass
