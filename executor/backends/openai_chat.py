"""The ``openai-chat`` backend: an OpenAI-compatible chat endpoint (``/v1/chat/completions``).

Each generation is one chat request with the plan's stop strings, ``max_gen_toks`` and sampling settings; the
server applies its own chat template. A plan compiled with ``run.apply_chat_template=true`` keeps each
generation's messages (``InstanceRecord.messages``, plans/plan/chatmessages.py) and those are sent as they are (a
last assistant message, a task's ``gen_prefix``, is continued: vLLM's ``continue_final_message``); a plan
without a chat template sends its prompt as one user message. The answer's text is cut at the stop strings as
any backend's is. Log-likelihood requests cannot run on a chat endpoint, nor can a chat-templated Instance
without messages (a plan from an older lmeval); ``chat_refusal`` names them before anything runs.

Settings (``model.engine``): ``base_url`` (default ``$OPENAI_BASE_URL`` or ``http://127.0.0.1:8000/v1``),
``model`` (default: the server's only model), ``api_key`` (default ``$OPENAI_API_KEY``), ``concurrency``
(parallel requests, default 8), ``max_stop`` (send at most this many stop strings: OpenAI's API takes 4; all
are still applied to the answer), and the HTTP client's ``timeout_s``, ``retries``, ``backoff_s``,
``max_backoff_s`` and ``max_requests`` (executor/backends/http.py).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from lmeval.executor.backends.base import load_hf_tokenizer, samples_to_run
from lmeval.executor.backends.http import HttpClient, asked_twice, run_concurrently
from lmeval.executor.backends.httpsettings import MAX_CONCURRENCY, setting_int
from lmeval.executor.backends.openai_answers import choices_of, finish_reason_of, text_of
from lmeval.executor.errors import ExecuteError
from lmeval.executor.modelconf import ModelSpec
from lmeval.executor.requests import GenInput, GenOutput, Sample, ScoreInput, ScoreOutput
from lmeval.plans import BUDGET_KEY, InstanceRecord, PlanHeader, split_name

NAME = "openai-chat"
SCORING_TYPES = ("loglikelihood", "loglikelihood_rolling")


def compiled_with_chat_template(header: PlanHeader) -> bool:
    run = header.config.get("run") if isinstance(header.config, dict) else None
    applied = bool(run.get("apply_chat_template")) if isinstance(run, dict) else False
    return applied or header.model.chat_template_hash is not None


def chat_refusal(header: PlanHeader, instances: Sequence[InstanceRecord], plan_path: str) -> str | None:
    """Why these Instances cannot run on a chat endpoint (one line naming the task), or None."""
    for inst in instances:
        if BUDGET_KEY in (inst.generation_kwargs or {}):
            return (
                f"{plan_path}: task {inst.task}: a thinking budget runs in two phases on token ids; a chat "
                "endpoint takes messages (run this task on the vllm or hf backend)"
            )
        if inst.tools is not None:
            return (
                f"{plan_path}: task {inst.task}: a tool-call task's tools are rendered by the model's chat template "
                "and its calls read from the reply text; a chat endpoint answers calls as structured data, which "
                "lmeval does not read yet (run this task on the vllm or hf backend)"
            )
        if inst.request_type in SCORING_TYPES:
            return (
                f"{plan_path}: task {inst.task}: {inst.request_type} requests need log-probabilities of given "
                f"text, which a chat endpoint does not return; run this task on the openai, vllm or hf backend, "
                f"or compile a multiple-choice task by generation ({split_name(inst.task)[0]}@gen or run.format=gen)"
            )
    if compiled_with_chat_template(header):
        for inst in instances:
            if inst.messages is None:
                return (
                    f"{plan_path}: task {inst.task} doc {inst.doc_id}: the plan was compiled with a chat "
                    "template but keeps no chat messages for this Instance (compiled by an older lmeval); "
                    "recompile it or run on the openai backend"
                )
    return None


def chat_messages(x: GenInput) -> list[dict[str, Any]]:
    """The messages of one generation: the plan's, or its prompt as one user message. Images (plans/plan/media.py)
    go as lm-eval 0.4.13's API models send them: ``image_url`` parts with base64 data URIs before the text of
    the last message (whose ``<image>`` placeholders stay), but each image's own bytes and MIME type from the
    plan rather than a PNG re-encoding."""
    out: list[dict[str, Any]] = (
        [dict(m) for m in x.messages] if x.messages is not None else [{"role": "user", "content": x.text}]
    )
    if x.images:
        parts: list[dict[str, Any]] = [image_part(m["mime"], b) for m, b in zip(x.media, x.images, strict=True)]
        users = [i for i, m in enumerate(out) if m["role"] == "user"]
        at = users[-1] if users else len(out) - 1  # the last user turn (a gen_prefix answer follows it)
        out[at]["content"] = [*parts, {"type": "text", "text": out[at]["content"]}]
    return out


def image_part(mime: str, data: bytes) -> dict[str, Any]:
    """One image as a chat content part: a ``data:`` URI of its bytes."""
    import base64

    url = f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
    return {"type": "image_url", "image_url": {"url": url, "detail": "auto"}}


def chat_body(model: str, x: GenInput, max_stop: int | None = None) -> dict[str, Any]:
    """The ``/v1/chat/completions`` body of one generation."""
    p = x.params
    stop = list(p.stop) if max_stop is None else list(p.stop)[:max_stop]
    body: dict[str, Any] = {
        "model": model,
        "messages": chat_messages(x),
        "max_tokens": p.max_tokens,
        "temperature": p.temperature,
        "top_p": p.top_p,
        "n": samples_to_run(p),
    }
    if stop:
        body["stop"] = stop
    if (
        body["messages"][-1]["role"] == "assistant" and not x.images
    ):  # a gen_prefix: the answer continues it (vLLM's extension)
        body["continue_final_message"] = True
        body["add_generation_prompt"] = False
    if p.seed is not None:
        body["seed"] = p.seed
    if p.top_k:
        body["top_k"] = p.top_k
    return body


def chat_output(resp: Any, n: int, what: str) -> GenOutput:
    """A chat completion as the executor's output; ``ValueError`` in one line for an answer without ``n``
    messages of text (executor/backends/openai_answers.py)."""
    samples = []
    for c in choices_of(resp, n, what):
        msg = c.get("message")
        if msg is not None and not isinstance(msg, dict):
            raise ValueError(f"{what}: a choice's message is not an object")
        content = text_of(msg.get("content") if msg else None, what, "message content")
        samples.append(Sample(text=content, token_ids=None, finish_reason=finish_reason_of(c)))
    return GenOutput(samples)


class OpenAIChatBackend:
    name = NAME

    def __init__(self, spec: ModelSpec, model_dir: Path | None) -> None:
        e = spec.engine
        self.http = HttpClient(e, spec.plan_base_url)
        self.base_url = self.http.base_url
        self.concurrency = setting_int(e, "concurrency", 8, 1, MAX_CONCURRENCY)
        self.max_stop = setting_int(e, "max_stop", None, 0)
        self.model = str(e.get("model") or self.http.only_model())
        # with the model's tokenizer its EOS text is a stop string, as on every other backend
        self.tokenizer = load_hf_tokenizer(model_dir) if model_dir is not None else None
        self.max_length = int(spec.max_model_len or 1 << 20)  # the server truncates nothing we send: text

    def engine_args(self) -> dict[str, Any]:
        return {"base_url": self.base_url, "model": self.model, "concurrency": self.concurrency, "endpoint": "chat"}

    def score(self, inputs: Sequence[ScoreInput]) -> Iterator[tuple[int, ScoreOutput]]:
        if inputs:  # run.py refuses such plans first, naming the task (chat_refusal)
            raise ExecuteError("the openai-chat backend cannot score log-likelihoods")
        return iter(())

    def _generate_one(self, x: GenInput) -> GenOutput:
        n = samples_to_run(x.params)
        what = f"POST {self.base_url}/chat/completions"
        body = chat_body(self.model, x, self.max_stop)
        return asked_twice(lambda: self.http.request("POST", "/chat/completions", body, key=x.key),
                           lambda resp: chat_output(resp, n, what), x.key)  # fmt: skip

    def generate(self, inputs: Sequence[GenInput]) -> Iterator[tuple[int, GenOutput]]:
        return run_concurrently(self._generate_one, inputs, self.concurrency)

    def close(self) -> None:
        pass
