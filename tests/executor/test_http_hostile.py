"""The HTTP backends against a misbehaving local server (#53): redirects refused, answers bounded in bytes and in
total time, malformed answers and settings refused in one line, earlier answers kept and resumed."""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from lmeval.executor.backends.http import HttpClient, RequestFailed
from lmeval.executor.backends.openai_api import completion_output, scored
from lmeval.executor.backends.openai_chat import chat_output
from lmeval.executor.errors import ExecuteError
from lmeval.executor.requests import ScoreInput
from lmeval.plans.results import read_manifest, read_results
from tests.executor import plantools as pt
from tests.executor.chatstub import Stub, serving
from tests.support import cli_in_process

Reply = Callable[[BaseHTTPRequestHandler, str, str, Any], None]


@contextmanager
def scripted(reply: Reply) -> Iterator[tuple[str, list[tuple[str, str, str | None]]]]:
    """A loopback server whose every request is answered by ``reply(handler, method, path, body)``; yields its
    ``/v1`` base URL and the (method, path, Authorization) of every request it received."""
    seen: list[tuple[str, str, str | None]] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _any(self, method: str) -> None:
            n = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(n)) if n else None
            seen.append((method, self.path, self.headers.get("Authorization")))
            try:
                reply(self, method, self.path, body)
            except OSError:  # the client hung up (a bound it keeps)
                pass

        def do_GET(self) -> None:
            self._any("GET")

        def do_POST(self) -> None:
            self._any("POST")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", seen
    finally:
        server.shutdown()
        server.server_close()


def send(h: BaseHTTPRequestHandler, code: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
    h.send_response(code)
    for k, v in {"Content-Type": "application/json", "Content-Length": str(len(payload)), **(headers or {})}.items():
        h.send_header(k, v)
    h.end_headers()
    h.wfile.write(payload)


def client(url: str, **engine: Any) -> HttpClient:
    c = HttpClient({"base_url": url, "backoff_s": 0.001, "timeout_s": 10, **engine})
    c.sleep = lambda s: None
    return c


CHAT = {"model": "m", "messages": [{"role": "user", "content": "x"}]}


@pytest.mark.parametrize("method", ["POST", "GET"])
@pytest.mark.parametrize("code", [301, 302, 307, 308])
def test_a_redirect_is_refused_and_the_key_goes_nowhere_else(
    monkeypatch: pytest.MonkeyPatch, method: str, code: int
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-redirect-victim")
    with scripted(lambda h, m, p, b: send(h, 200, b'{"data": [{"id": "evil"}]}')) as (evil, evil_seen):
        with scripted(lambda h, m, p, b: send(h, code, b"", {"Location": evil + p[len("/v1") :]})) as (url, seen):
            c = client(url)
            with pytest.raises(RequestFailed) as e:
                c.request(
                    method, "/models" if method == "GET" else "/chat/completions", None if method == "GET" else CHAT
                )
    assert f"HTTP {code} to 127.0.0.1:" in str(e.value) and "redirects are not followed" in str(e.value)
    assert len(str(e.value).splitlines()) == 1 and "sk-redirect" not in str(e.value)
    assert [a for _, _, a in seen] == ["Bearer sk-redirect-victim"] and c.sent == 1  # asked once, not retried
    assert evil_seen == []


@pytest.mark.parametrize("with_length", [True, False])
def test_an_answer_larger_than_the_bound_is_refused(with_length: bool) -> None:
    big = json.dumps({"choices": [{"index": 0, "text": "x" * (3 << 20)}]}).encode()

    def reply(h: BaseHTTPRequestHandler, m: str, p: str, b: Any) -> None:
        h.send_response(200)
        if with_length:
            h.send_header("Content-Length", str(len(big)))
        h.end_headers()
        for i in range(0, len(big), 1 << 16):  # without a length the body ends when the server closes
            h.wfile.write(big[i : i + (1 << 16)])

    with scripted(reply) as (url, seen):
        c = client(url, max_response_bytes=1 << 20, retries=3)
        with pytest.raises(RequestFailed, match=r"larger than model.engine.max_response_bytes=1048576"):
            c.request("POST", "/completions", {"model": "m"})
    assert len(seen) == 1  # not retried: the same question gets the same answer
    with scripted(lambda h, m, p, b: send(h, 200, big)) as (url, _):
        assert len(client(url).request("POST", "/completions", {})["choices"][0]["text"]) == 3 << 20  # default 32 MiB


@pytest.mark.parametrize("where", ["body", "headers"])
def test_timeout_s_bounds_a_slow_drip(where: str) -> None:
    """A server that sends one byte every 0.05 s never trips a per-read timeout; ``timeout_s`` is a deadline for
    the whole answer."""
    stop = threading.Event()

    def reply(h: BaseHTTPRequestHandler, m: str, p: str, b: Any) -> None:
        head = b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\nX-Pad: " + b"a" * 2000 + b"\r\n\r\n"
        body = b'{"choices": [' + b" " * 10_000 + b"]}"
        if where == "body":
            h.wfile.write(head)
        for byte in (head if where == "headers" else b"") + body:
            if stop.is_set():
                return
            h.wfile.write(bytes([byte]))
            h.wfile.flush()
            time.sleep(0.05)

    with scripted(reply) as (url, _):
        c = client(url, timeout_s=0.6, retries=1)
        t = time.monotonic()
        with pytest.raises(RequestFailed, match=r"timed out after 0.6s \(gave up after 2 attempts\)"):
            c.request("POST", "/completions", {"model": "m"})
        took = time.monotonic() - t
        stop.set()
    assert took < 3.0, took  # two attempts of 0.6 s, not 12,000 bytes x 0.05 s


@pytest.mark.parametrize("answer", [b"[" * 200_000 + b"]" * 200_000, b"1" * 5000, b'{"choices": [', b"\xff\xfe"])
def test_an_answer_that_is_not_json_is_retried_then_one_line(answer: bytes) -> None:
    with scripted(lambda h, m, p, b: send(h, 200, answer)) as (url, seen):
        with pytest.raises(
            RequestFailed, match=r"malformed JSON in the answer \(\d+ bytes\) \(gave up after 2 attempts\)"
        ):
            client(url, retries=1).request("POST", "/completions", {})
    assert len(seen) == 2


def test_retry_after_nan_falls_back_to_the_backoff() -> None:
    answers = [(429, {"Retry-After": "nan"}), (429, {"Retry-After": "inf"}), (200, {})]

    def reply(h: BaseHTTPRequestHandler, m: str, p: str, b: Any) -> None:
        code, headers = answers.pop(0)
        send(h, code, b'{"ok": 1}', headers)

    with scripted(reply) as (url, _):
        c = client(url, backoff_s=0.5, max_backoff_s=60)
        waits: list[float] = []
        c.sleep = waits.append
        assert c.request("POST", "/chat/completions", CHAT) == {"ok": 1}
    assert waits == [0.5, 1.0]


@pytest.mark.parametrize(
    "answer",
    [b"[]", b'{"data": 5}', b'{"data": [{"id": 5}]}', b'{"data": [5]}', b'"x"', b"null"],
)
def test_a_malformed_model_list_is_one_line(answer: bytes) -> None:
    with scripted(lambda h, m, p, b: send(h, 200, answer)) as (url, _):
        with pytest.raises(ExecuteError, match=r"/models: the answer is not a model list") as e:
            client(url).only_model()
    assert len(str(e.value).splitlines()) == 1


@pytest.mark.parametrize("value", [-5, 0, "lots", 1 << 40, True, 1.5])
def test_a_servers_absurd_max_model_len_is_refused(value: Any) -> None:
    answer = json.dumps({"data": [{"id": "m", "max_model_len": value}]}).encode()
    with scripted(lambda h, m, p, b: send(h, 200, answer)) as (url, _):
        with pytest.raises(ExecuteError, match=r"max_model_len=.* is not a context length"):
            client(url).server_max_len("m")


@pytest.mark.parametrize(
    ("key", "value", "why"),
    [
        ("timeout_s", -1, "a positive number of seconds"),
        ("timeout_s", "nan", "a positive number of seconds"),
        ("timeout_s", 0, "a positive number of seconds"),
        ("backoff_s", "inf", "a number of seconds, 0 or more"),
        ("retries", -1, "an integer from 0 to 1000"),
        ("retries", "many", "an integer from 0 to 1000"),
        ("max_requests", 0, "an integer at least 1"),
        ("max_response_bytes", 10, "an integer at least 1024"),
    ],
)
def test_bad_http_settings_are_one_line(key: str, value: Any, why: str) -> None:
    with pytest.raises(ExecuteError, match=rf"model.engine.{key}=.*: must be {why}"):
        HttpClient({"base_url": "http://127.0.0.1:9/v1", key: value})


def test_a_base_url_that_is_not_http_or_holds_credentials_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ExecuteError, match=r"model.engine.base_url='file:///etc/passwd': must be an http"):
        HttpClient({"base_url": "file:///etc/passwd"})
    monkeypatch.setenv("OPENAI_BASE_URL", "https://me:sk-secret@127.0.0.1/v1")
    with pytest.raises(ExecuteError, match=r"^\$OPENAI_BASE_URL: holds credentials") as e:
        HttpClient({})
    assert "sk-secret" not in str(e.value)


# answers refused before they are taken: (what the server said, why), for chat, completions and scoring
def _chat(content: Any = "ok", **choice: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}, **choice}]}


MALFORMED_CHAT = [
    (None, "has no choices"),
    ([], "has no choices"),
    ({"choices": []}, "has no choices"),
    ({"choices": [5]}, "a choice is not an object"),
    ({"choices": [{"message": {"content": "x"}}]}, "no integer index"),
    ({"choices": [{"index": "0", "message": {"content": "x"}}]}, "no integer index"),
    ({"choices": [{"index": 3, "message": {"content": "x"}}]}, "indexes are not 0..0"),
    (_chat(["x"]), "message content is not text"),
    (_chat(7), "message content is not text"),
    (_chat("a\ud800b"), "lone surrogate"),
    ({"choices": [{"index": 0, "message": "x"}]}, "message is not an object"),
    ({"choices": [{"index": i, "message": {"content": "x"}} for i in range(5)]}, "5 choices for n=1"),
]


@pytest.mark.parametrize(("resp", "why"), MALFORMED_CHAT)
def test_a_malformed_chat_answer_is_one_line(resp: Any, why: str) -> None:
    with pytest.raises(ValueError, match=why) as e:
        chat_output(resp, 1, "POST /chat/completions")
    assert len(str(e.value).splitlines()) == 1


@pytest.mark.parametrize(
    ("resp", "why"),
    [
        ({"choices": [{"index": 0, "text": 5}]}, "text is not text"),
        ({"choices": [{"index": 0, "text": None, "token_ids": ["a"]}]}, "token_ids is not a list of integers"),
        ({"choices": [{"index": 0, "text": "x", "token_ids": [3, -5]}]}, r"token_ids holds -5, not a token id"),
        ({"choices": [{"index": 0, "text": "x", "token_ids": [2**40]}]}, r"holds 1099511627776, not a token id"),
        ({"choices": [{"text": "x"}]}, "no integer index"),
        ({"choices": [{"index": i, "text": "x"} for i in range(5)]}, "5 choices for n=1"),  # a greedy request
        ({"choices": [5]}, "a choice is not an object"),
    ],
)
def test_a_malformed_completion_is_one_line(resp: Any, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        completion_output(resp, 1, "POST /completions")


def _echo(ids: list[int], values: list[Any], top: Any = None) -> dict[str, Any]:
    tops = [None] + [{f"token_id:{t}": v} for t, v in zip(ids[1:], values[1:], strict=False)]
    tops = top if top is not None else tops
    return {"choices": [{"index": 0, "logprobs": {"token_logprobs": values, "top_logprobs": tops}}]}


IDS = [5, 6, 7, 8]
X = ScoreInput(IDS, 2, "k")


@pytest.mark.parametrize(
    ("resp", "why"),
    [
        ({"choices": [{"index": 0, "logprobs": None}]}, "has no logprobs"),
        (_echo(IDS, [None, -1.0, -1.0]), r"token_logprobs must list the 4 prompt tokens \(got 3 entries\)"),
        ({"choices": [{"index": 0, "logprobs": {"token_logprobs": 5, "top_logprobs": []}}]}, "got int"),
        (_echo(IDS, [None, -1.0, [-1.0], -1.0]), "position 2 is not a number"),
        (_echo(IDS, [None, -1.0, math.nan, -1.0]), "position 2 is nan"),
        (_echo(IDS, [None, -1.0, -1.0, -math.inf]), "position 3 is -inf"),
        (_echo(IDS, [None, -1.0, 0.5, -1.0]), "position 2 is 0.5"),
        (_echo(IDS, [None, -1.0, -1.0, -1.0], [None, None, 5, None]), "top_logprobs at position 2 is not an object"),
        (_echo(IDS, [None, -1.0, -1.0, -1.0], [None, None, {"token_id:7": 3.0}, None]), "position 2 is 3.0"),
    ],
)
def test_a_malformed_or_impossible_log_likelihood_is_refused(resp: Any, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        scored(resp, [X], "POST /completions")


def test_a_sound_log_likelihood_is_taken() -> None:
    out = scored(_echo(IDS, [None, -9.0, -1.0, -0.0]), [X], "POST /completions")
    assert out[0].logprob == -1.0 and out[0].is_greedy


# end to end: one line, earlier answers kept, resume completes
def _chat_overrides(url: str, **engine: Any) -> list[str]:
    settings = {"base_url": url, "model": "stub", "backoff_s": 0.001, "timeout_s": 10, "concurrency": 1, **engine}
    return ["model.backend=openai-chat", "model.path=stub-model"] + [
        f"model.engine.{k}={v}" for k, v in settings.items()
    ]


@pytest.fixture(scope="module")
def gsm8k_plan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return pt.compiled(tmp_path_factory.mktemp("hostile") / "gsm8k.msgpack", "+task=gsm8k", "run.limit=4")


@pytest.mark.parametrize("fault", ["nochoices", "surrogate"])
def test_a_malformed_answer_mid_run_keeps_the_earlier_answers(gsm8k_plan: Path, tmp_path: Path, fault: str) -> None:
    with serving(Stub()) as stub:
        stub.faults = [None, None, fault, fault]  # the third request is answered wrongly twice
        args = ("execute", str(gsm8k_plan), "--out", str(tmp_path / "r"), "--no-progress", *_chat_overrides(stub.url))
        rc, _, err = cli_in_process(*args)
        assert rc == 2 and len(err.strip().splitlines()) == 1, err
        why = "choice is not an object" if fault == "nochoices" else "message content holds a lone surrogate"
        assert f"{gsm8k_plan}: task gsm8k doc " in err and why in err and "Traceback" not in err
        assert len(read_results(tmp_path / "r")) == 2  # the two answered before are written
        rc, _, err = cli_in_process(*args)
        assert rc == 0, err
    assert len(read_results(tmp_path / "r")) == 4 and read_manifest(tmp_path / "r").finished


@pytest.mark.parametrize(
    ("override", "why"),
    [
        ("concurrency=lots", "model.engine.concurrency=lots: must be an integer from 1 to 1024"),
        ("concurrency=0", "model.engine.concurrency=0: must be an integer from 1 to 1024"),
        ("timeout_s=-1", "model.engine.timeout_s=-1: must be a positive number of seconds"),
        ("max_stop=-2", "model.engine.max_stop=-2: must be an integer at least 0"),
    ],
)
def test_bad_engine_settings_on_the_command_line_are_one_line(gsm8k_plan: Path, tmp_path: Path, override: str,
                                                              why: str) -> None:  # fmt: skip
    with serving(Stub()) as stub:
        rc, _, err = cli_in_process("execute", str(gsm8k_plan), "--out", str(tmp_path / "r"), "--no-progress",
                                    *_chat_overrides(stub.url), f"model.engine.{override}")  # fmt: skip
        assert rc == 2 and len(err.strip().splitlines()) == 1 and why in err, err
        assert not stub.bodies


def test_nan_or_positive_log_likelihoods_from_a_server_are_not_scored(tmp_path: Path) -> None:
    """The completions backend on arc_easy against a server whose echo log-probs hold NaN then a positive value:
    the run stops in one line naming the request; nothing of the forged answers is stored."""
    plan = tmp_path / "arc.msgpack"
    pt.build(plan, [pt.arc_easy(2)])
    planted = {0: math.nan, 1: 0.25}  # the first two prompts of every request

    def reply(h: BaseHTTPRequestHandler, m: str, p: str, b: Any) -> None:
        if m == "GET":
            return send(h, 200, b'{"data": [{"id": "m", "max_model_len": 4096}]}')
        choices = []
        for i, ids in enumerate(b["prompt"]):
            values: list[Any] = [None] + [-0.5] * (len(ids) - 1)
            values[-1] = planted.get(i, -0.5)
            tops = [None] + [{f"token_id:{t}": v} for t, v in zip(ids[1:], values[1:], strict=False)]
            choices.append({"index": i, "logprobs": {"token_logprobs": values, "top_logprobs": tops}})
        send(h, 200, json.dumps({"choices": choices}).encode())

    with scripted(reply) as (url, seen):
        rc, _, err = cli_in_process("execute", str(plan), "--out", str(tmp_path / "r"), "--no-progress",
                                    "model.backend=openai", "model.path=stub", f"model.engine.base_url={url}",
                                    "model.engine.retries=0")  # fmt: skip
    assert rc == 2 and len(err.strip().splitlines()) == 1, err
    assert "task arc_easy doc 0" in err and "(must be finite and <= 0)" in err
    assert len([s for s in seen if s[0] == "POST"]) == 2  # asked once more, then refused
    assert not (tmp_path / "r").exists() or len(read_results(tmp_path / "r")) == 0


def test_negative_token_ids_in_a_completion_are_one_line(tmp_path: Path) -> None:
    """A completions server answering token ids that index no vocabulary: refused in one line naming the
    Instance (the tokenizer decoding them overflowed in a traceback before), the answers before it kept."""
    from lmeval.common.tinymodel import ensure_tiny_model

    plan = pt.compiled(tmp_path / "gsm8k.msgpack", "+task=gsm8k", "run.limit=3")
    posts: list[int] = []

    def reply(h: BaseHTTPRequestHandler, m: str, p: str, b: Any) -> None:
        if m == "GET":
            return send(h, 200, json.dumps({"data": [{"id": "stub", "max_model_len": 2048}]}).encode())
        posts.append(1)
        ids = [3, 4] if len(posts) == 1 else [3, -5]  # the first answer is sound
        send(h, 200, json.dumps({"choices": [{"index": 0, "text": "x", "token_ids": ids}]}).encode())

    with scripted(reply) as (url, _):
        rc, _, err = cli_in_process("execute", str(plan), "--out", str(tmp_path / "r"), "--no-progress",
                                    "model.backend=openai", f"model.path={ensure_tiny_model()}",
                                    f"model.engine.base_url={url}", "model.engine.model=stub",
                                    "model.engine.backoff_s=0.001", "model.engine.concurrency=1")  # fmt: skip
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert f"{plan}: task gsm8k doc " in err and "token_ids holds -5, not a token id (0..4294967295)" in err
    assert len(read_results(tmp_path / "r")) == 1 and len(posts) > 2  # the bad answer was asked for again
