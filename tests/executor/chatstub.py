"""A local OpenAI-compatible stub (``/v1/models``, ``/v1/chat/completions``, ``/v1/completions``) for the HTTP
backends' tests: it answers deterministically from the prompt, applies stop strings as a server does, and
injects faults on request (429 with Retry-After, 500, 400, a timeout, a truncated JSON body, a lone surrogate in
the answer, ``choices: [5]``); it records every request's Authorization header.

The gsm8k answer: the stub knows the real test split's answers and answers documents whose question hashes
even correctly and the others wrongly, so a score is neither 0 nor 1; a completions prompt (token ids) is
decoded with the tiny model's tokenizer to find the question.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.executor import plantools as pt

ANSWERS = {r["question"]: r["answer"].split("####")[-1].strip() for r in pt.rows("gsm8k", "test", 40)}


def gsm8k_answer(prompt: str) -> str:
    """What the stub generates for ``prompt``: the last question's answer (wrong for half the questions),
    followed by more text a stop string must cut."""
    question = prompt.rsplit("Question:", 1)[-1].split("\nAnswer:", 1)[0].strip()
    right = ANSWERS.get(question, "0")
    even = int(hashlib.sha256(question.encode()).hexdigest(), 16) % 2 == 0
    value = right if even else str(int(right.replace(",", "")) + 1) if right.replace(",", "").isdigit() else "7"
    return f" Let me think. The answer is {value}.\n#### {value}\n\nQuestion: what next?"


def cut(text: str, stop: list[str]) -> tuple[str, str]:
    for s in stop:
        if s and s in text:
            return text.split(s)[0], "stop"
    return text, "length"


class Stub:
    """The server's state: the faults still to inject (one per POST, ``None``: answer normally) and every
    POST body received."""

    def __init__(self, answer: Callable[[str], str] = gsm8k_answer) -> None:
        self.answer = answer
        self.faults: list[str | None] = []
        self.bodies: list[tuple[str, dict[str, Any]]] = []
        self.auth: list[str | None] = []  # every request's Authorization header (GET and POST)
        self.lock = threading.Lock()
        self.url = ""

    def next_fault(self) -> str | None:
        with self.lock:
            return self.faults.pop(0) if self.faults else None

    def respond(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        if path.endswith("/chat/completions"):
            prompt = body["messages"][-1]["content"]
            text, reason = cut(self.answer(prompt), list(body.get("stop") or []))
            choices = [
                {"index": i, "message": {"role": "assistant", "content": text}, "finish_reason": reason}
                for i in range(int(body.get("n", 1)))
            ]
            return {"id": "chatcmpl-stub", "object": "chat.completion", "model": body["model"], "choices": choices}
        prompt = body["prompt"]
        if isinstance(prompt, list):
            prompt = pt.tokenizer().decode(prompt, skip_special_tokens=False)
        text, reason = cut(self.answer(prompt), list(body.get("stop") or []))
        choices = [{"index": i, "text": text, "finish_reason": reason} for i in range(int(body.get("n", 1)))]
        return {"id": "cmpl-stub", "object": "text_completion", "model": body["model"], "choices": choices}


def _handler(stub: Stub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, code: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            try:
                self.wfile.write(payload)
            except OSError:  # the client gave up (a timeout fault)
                pass

        def do_GET(self) -> None:
            with stub.lock:
                stub.auth.append(self.headers.get("Authorization"))
            self._send(200, json.dumps({"data": [{"id": "stub", "max_model_len": 8192}]}).encode())

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with stub.lock:
                stub.bodies.append((self.path, body))
                stub.auth.append(self.headers.get("Authorization"))
            fault = stub.next_fault()
            if fault == "429":
                self._send(429, b'{"error": "slow down"}', {"Retry-After": "0.05"})
            elif fault in ("500", "400"):
                self._send(int(fault), b'{"error": "injected"}')
            elif fault == "timeout":
                time.sleep(2.5)
                self._send(200, json.dumps(stub.respond(self.path, body)).encode())
            elif fault == "surrogate":  # valid JSON, not Unicode: a lone surrogate in the answer's text
                self._send(200, json.dumps(stub.respond(self.path, body)).replace("####", "\\ud800").encode())
            elif fault == "nochoices":
                self._send(200, b'{"choices": [5]}')
            elif fault == "truncated":
                self._send(200, json.dumps(stub.respond(self.path, body)).encode()[:40])
            else:
                self._send(200, json.dumps(stub.respond(self.path, body)).encode())

    return Handler


@contextmanager
def serving(stub: Stub | None = None) -> Iterator[Stub]:
    """``stub`` served on a free loopback port (``stub.url`` is its ``/v1`` base) until the block ends."""
    stub = stub or Stub()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(stub))
    server.daemon_threads = True
    stub.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield stub
    finally:
        server.shutdown()
        server.server_close()
