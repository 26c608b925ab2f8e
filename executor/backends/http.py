"""What the HTTP backends (``openai``, ``openai-chat``) share: one JSON client with retries, backoff and a
request budget, and the thread pool that keeps ``concurrency`` requests in flight.

A request is retried when the server says "later" (429, honouring ``Retry-After``), fails on its side (500,
502, 503, 504), times out, drops the connection or answers with a body that is not JSON (a truncated
response); it fails at once on any other HTTP status (400, 401, 404: retrying cannot help) and when nothing
listens at the address (connection refused: a wrong ``base_url``). Backoff doubles
from ``backoff_s`` up to ``max_backoff_s``. Every attempt, retries included, spends one request of the run's
budget (``max_requests``; ``None``: unlimited). A request that fails for good raises ``RequestFailed``
naming it; the job loop adds the task, doc and instance it belongs to.

The key and the answer (docs/reference/hostile-input.md, "API keys and HTTP answers"): the key comes from
``$OPENAI_API_KEY`` only (plans/apikeys.py) and goes only to the base URL the run chose; a redirect is never
followed (one line: the key would go to the redirect's target). Every answer is bounded: at most
``max_response_bytes`` (default 32 MiB) read in chunks, and ``timeout_s`` is a deadline for the whole attempt
(connect, headers and body: a server that drips its answer is cut off at the deadline, not per read).

Settings (``model.engine``): ``base_url``, ``timeout_s`` (default 600), ``retries`` (attempts after the first,
default 5), ``backoff_s`` (default 1), ``max_backoff_s`` (default 60), ``max_requests``, ``max_response_bytes``;
each checked (``http_settings``), a bad one refused in one line naming it.
"""

from __future__ import annotations

import http.client
import json
import math
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

from lmeval.executor.backends.httpsettings import http_settings
from lmeval.executor.errors import ExecuteError
from lmeval.plans import (
    API_KEY_ENV,
    BASE_URL_ENV,
    Destination,
    KeyRefused,
    api_key_from_env,
    key_destination,
    secret_problem,
)

RETRIED_STATUS = frozenset({429, 500, 502, 503, 504})
MAX_SERVER_LEN = 1 << 26  # a context longer than 64 Mi tokens is not a server's real answer
READ_CHUNK = 1 << 16

X = TypeVar("X")
Y = TypeVar("Y")


class RequestFailed(ExecuteError):
    """A request that failed for good; ``key`` is the backend input's key (the request hash) when known."""

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


@dataclass(frozen=True)
class RetryPolicy:
    retries: int = 5
    backoff_s: float = 1.0
    max_backoff_s: float = 60.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait before attempt ``attempt + 1`` (``attempt`` counts from 0)."""
        if retry_after is not None and math.isfinite(retry_after):
            return min(max(retry_after, 0.0), self.max_backoff_s)
        return min(self.backoff_s * (2 ** min(attempt, 64)), self.max_backoff_s)


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        v = float(value)
    except ValueError:
        return None  # an HTTP date: fall back to the backoff
    return v if math.isfinite(v) else None  # nan, inf: the backoff


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Never follow a redirect: ``urlopen`` raises the 3xx as an ``HTTPError`` (``request`` refuses it)."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


class _Watch:
    """The attempt's sockets, shut at the deadline (a server that drips its headers or body is cut off)."""

    def __init__(self) -> None:
        self.sockets: list[socket.socket] = []
        self.expired = False
        self.lock = threading.Lock()

    def add(self, sock: socket.socket) -> None:
        with self.lock:
            self.sockets.append(sock)
            if self.expired:
                self._shut(sock)

    def expire(self) -> None:
        with self.lock:
            self.expired = True
            for s in self.sockets:
                self._shut(s)

    @staticmethod
    def _shut(sock: socket.socket) -> None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def _opener(watch: _Watch) -> urllib.request.OpenerDirector:
    class Conn(http.client.HTTPConnection):
        def connect(self) -> None:
            super().connect()
            watch.add(self.sock)

    class TLSConn(http.client.HTTPSConnection):
        def connect(self) -> None:
            super().connect()
            watch.add(self.sock)

    class Plain(urllib.request.HTTPHandler):
        def http_open(self, req: Any) -> Any:
            return self.do_open(Conn, req)

    class TLS(urllib.request.HTTPSHandler):
        def https_open(self, req: Any) -> Any:
            return self.do_open(TLSConn, req)

    return urllib.request.build_opener(_NoRedirect, Plain, TLS)


class TooLarge(Exception):
    pass


def read_answer(resp: Any, limit: int) -> bytes:
    """The body of ``resp``, read in chunks; ``TooLarge`` past ``limit`` bytes (its Content-Length first)."""
    length = resp.headers.get("Content-Length") if getattr(resp, "headers", None) is not None else None
    if length is not None and length.strip().isdigit() and int(length) > limit:
        raise TooLarge(f"{int(length)} bytes")
    parts: list[bytes] = []
    total = 0
    while True:
        chunk = resp.read(READ_CHUNK)
        if not chunk:
            return b"".join(parts)
        total += len(chunk)
        if total > limit:
            raise TooLarge(f"more than {limit} bytes")
        parts.append(chunk)


def _host(url: str) -> str:
    try:
        return urlsplit(url).netloc.rpartition("@")[2] or "?"
    except ValueError:
        return "?"


def destination(engine: Mapping[str, Any], plan_base_url: bool) -> Destination:
    """Where an HTTP backend with these settings sends its requests and the key (plans/apikeys.py)."""
    url = engine.get("base_url")
    url = str(url) if url else None
    return key_destination(None, url) if plan_base_url else key_destination(url, None)


def destination_notice(engine: Mapping[str, Any], plan_base_url: bool) -> str | None:
    """The line printed before the first request when the plan chose the server (None otherwise)."""
    try:
        sends_key = api_key_from_env() is not None
    except KeyRefused:
        sends_key = True
    return destination(engine, plan_base_url).notice(sends_key)


class HttpClient:
    """JSON over HTTP to ``base_url`` with retries and a thread-safe request budget. ``plan_base_url``:
    ``engine["base_url"]`` is the plan's, so ``$OPENAI_BASE_URL`` comes first (plans/apikeys.py)."""

    def __init__(self, engine: Mapping[str, Any], plan_base_url: bool = False) -> None:
        self.destination = destination(engine, plan_base_url)
        self.base_url = self.destination.url
        if secret_problem({"engine": {"base_url": self.base_url}}):  # $OPENAI_BASE_URL=https://user:key@host
            where = f"${BASE_URL_ENV}" if self.destination.source == "environment" else "model.engine.base_url"
            raise ExecuteError(f"{where}: holds credentials (user:password@host), which the manifest would record; "
                               f"name the host alone and set the {API_KEY_ENV} environment variable")  # fmt: skip
        if urlsplit(self.base_url).scheme not in ("http", "https"):
            raise ExecuteError(f"model.engine.base_url={self.base_url[:200]!r}: must be an http:// or https:// URL")
        try:
            key = api_key_from_env()
        except KeyRefused as e:
            raise ExecuteError(str(e)) from None
        self.sends_key = key is not None
        self._auth = f"Bearer {key or 'EMPTY'}"
        s = http_settings(engine)
        self.settings = s
        self.timeout_s = s.timeout_s
        self.policy = RetryPolicy(retries=s.retries, backoff_s=s.backoff_s, max_backoff_s=s.max_backoff_s)
        self.max_requests = s.max_requests
        self.sent = 0  # attempts so far (the budget counts these)
        self.retried = 0
        self._lock = threading.Lock()
        self.sleep: Callable[[float], None] = time.sleep

    def __repr__(self) -> str:  # never the key
        return f"HttpClient({self.base_url!r})"

    def _spend(self, what: str, key: str | None) -> None:
        with self._lock:
            if self.max_requests is not None and self.sent >= self.max_requests:
                raise RequestFailed(
                    f"{what}: the run's request budget (model.engine.max_requests={self.max_requests}) is spent; "
                    "rerun to resume (finished requests are kept)",
                    key,
                )
            self.sent += 1

    def _attempt(self, req: urllib.request.Request) -> bytes:
        """One attempt's body, within the deadline and the size bound."""
        watch = _Watch()
        timer = threading.Timer(self.timeout_s, watch.expire)
        timer.daemon = True
        timer.start()
        try:
            with _opener(watch).open(req, timeout=self.timeout_s) as resp:
                raw = read_answer(resp, self.settings.max_response_bytes)
            if watch.expired:  # the socket was shut mid-answer: what was read is a cut-off body
                raise TimeoutError
            return raw
        except urllib.error.HTTPError as err:  # its body (the server's reason) read now, within the deadline
            try:
                err.detail = err.read(300) if err.fp is not None else b""  # type: ignore[attr-defined]
            except (OSError, http.client.HTTPException, ValueError):
                err.detail = b""  # type: ignore[attr-defined]
            raise
        except (OSError, http.client.HTTPException, ValueError):
            if watch.expired:
                raise TimeoutError from None
            raise
        finally:
            timer.cancel()

    def request(self, method: str, path: str, body: dict[str, Any] | None = None, key: str | None = None) -> Any:
        """The decoded JSON answer of ``method path``, retried as the module docstring says."""
        what = f"{method} {self.base_url}{path}"
        data = json.dumps(body).encode() if body is not None else None
        attempts = self.policy.retries + 1
        last = ""
        for attempt in range(attempts):
            self._spend(what, key)
            retry_after: float | None = None
            req = urllib.request.Request(
                self.base_url + path,
                data=data,
                method=method,
                headers={"Content-Type": "application/json", "Authorization": self._auth},
            )
            try:
                raw = self._attempt(req)
                try:
                    return json.loads(raw)
                except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser goes
                    last = f"malformed JSON in the answer ({len(raw)} bytes)"
            except TooLarge as err:
                raise RequestFailed(
                    f"{what}: the answer is larger than model.engine.max_response_bytes="
                    f"{self.settings.max_response_bytes} ({err}); raise it or send smaller requests (score_batch)",
                    key,
                ) from None
            except urllib.error.HTTPError as err:
                if 300 <= err.code < 400:
                    target = _host(err.headers.get("Location") or "") if err.headers is not None else "?"
                    raise RequestFailed(
                        f"{what}: the server answered with a redirect (HTTP {err.code} to {target}); redirects "
                        "are not followed, so the API key goes to no other server: set model.engine.base_url "
                        "to the address that answers",
                        key,
                    ) from None
                raw_err = getattr(err, "detail", b"")
                detail = " ".join(raw_err.decode("utf-8", errors="replace").split())
                last = f"HTTP {err.code}: {detail}"
                if err.code not in RETRIED_STATUS:
                    raise RequestFailed(f"{what}: {last}", key) from None
                retry_after = _retry_after(err.headers.get("Retry-After") if err.headers is not None else None)
            except TimeoutError:
                last = f"timed out after {self.timeout_s:g}s"
            except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError) as err:
                reason = getattr(err, "reason", err)
                if isinstance(reason, ConnectionRefusedError):  # nothing listens there: a wrong URL, not a hiccup
                    raise RequestFailed(f"{what}: cannot reach the server ({reason})", key) from None
                if isinstance(reason, TimeoutError):
                    last = f"timed out after {self.timeout_s:g}s"
                else:
                    last = " ".join(f"{type(reason).__name__}: {reason}".split())[:300]
            if attempt + 1 < attempts:
                with self._lock:
                    self.retried += 1
                self.sleep(self.policy.delay(attempt, retry_after))
        raise RequestFailed(f"{what}: {last} (gave up after {attempts} attempts)", key)

    def models(self) -> list[dict[str, Any]]:
        """``GET /models``'s entries; ``ExecuteError`` in one line for an answer that is not a model list."""
        resp = self.request("GET", "/models")
        data = resp.get("data") if isinstance(resp, dict) else None
        if not isinstance(data, list) or not all(isinstance(m, dict) and isinstance(m.get("id"), str) for m in data):
            raise ExecuteError(
                f"GET {self.base_url}/models: the answer is not a model list ({{'data': [{{'id': ...}}]}})"
            )
        return data

    def only_model(self) -> str:
        models = self.models()
        if len(models) != 1:
            names = ", ".join(str(m["id"])[:80] for m in models[:10])
            raise ExecuteError(f"{self.base_url}: serves {len(models)} models ({names}); set model.engine.model")
        return str(models[0]["id"])

    def server_max_len(self, model: str) -> int | None:
        for m in self.models():
            if m.get("id") == model and m.get("max_model_len") is not None:
                v = m["max_model_len"]
                if isinstance(v, bool) or not isinstance(v, int) or not 0 < v <= MAX_SERVER_LEN:
                    raise ExecuteError(
                        f"GET {self.base_url}/models: model {model[:80]}: max_model_len={str(v)[:40]!r} is not a "
                        f"context length (1 to {MAX_SERVER_LEN}); set model.max_model_len"
                    )
                return v
        return None


def asked_twice(ask: Callable[[], Any], read: Callable[[Any], X], key: str | None) -> X:
    """``read(ask())``; an answer ``read`` refuses (``ValueError``) is asked once more, then fails the request."""
    for attempt in range(2):
        resp = ask()
        try:
            return read(resp)
        except ValueError as e:
            if attempt == 1:
                raise RequestFailed(str(e), key) from None
    raise AssertionError("unreachable")


def run_concurrently(fn: Callable[[X], Y], inputs: Sequence[X], concurrency: int) -> Iterator[tuple[int, Y]]:
    """``(i, fn(inputs[i]))`` as they finish, ``concurrency`` at a time; the first failure cancels the rest."""
    with ThreadPoolExecutor(max(concurrency, 1)) as pool:
        futs: dict[Future[Y], int] = {pool.submit(fn, x): i for i, x in enumerate(inputs)}
        try:
            for f in as_completed(futs):
                yield futs[f], f.result()
        finally:
            for f in futs:
                f.cancel()
