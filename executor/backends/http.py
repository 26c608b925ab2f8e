"""What the HTTP backends (``openai``, ``openai-chat``) share: one JSON client with retries, backoff and a
request budget, and the thread pool that keeps ``concurrency`` requests in flight.

A request is retried when the server says "later" (429, honouring ``Retry-After``), fails on its side (500,
502, 503, 504), times out, drops the connection or answers with a body that is not JSON (a truncated
response); it fails at once on any other HTTP status (400, 401, 404: retrying cannot help) and when nothing
listens at the address (connection refused: a wrong ``base_url``). Backoff doubles
from ``backoff_s`` up to ``max_backoff_s``. Every attempt, retries included, spends one request of the run's
budget (``max_requests``; ``None``: unlimited). A request that fails for good raises ``RequestFailed``
naming it; the job loop adds the task, doc and instance it belongs to.

Settings (``model.engine``): ``base_url``, ``api_key``, ``timeout_s`` (default 600), ``retries`` (attempts
after the first, default 5), ``backoff_s`` (default 1), ``max_backoff_s`` (default 60), ``max_requests``.
"""

from __future__ import annotations

import json
import os
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any, TypeVar

from lmeval.executor.errors import ExecuteError

RETRIED_STATUS = frozenset({429, 500, 502, 503, 504})

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
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_backoff_s)
        return min(self.backoff_s * (2**attempt), self.max_backoff_s)


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        return None  # an HTTP date: fall back to the backoff


class HttpClient:
    """JSON over HTTP to ``base_url`` with retries and a thread-safe request budget."""

    def __init__(self, engine: dict[str, Any], default_base_url: str = "http://127.0.0.1:8000/v1") -> None:
        e = engine
        self.base_url = str(e.get("base_url") or os.environ.get("OPENAI_BASE_URL") or default_base_url).rstrip("/")
        self.api_key = str(e.get("api_key") or os.environ.get("OPENAI_API_KEY") or "EMPTY")
        self.timeout_s = float(e.get("timeout_s") or 600)
        self.policy = RetryPolicy(
            retries=int(e["retries"]) if e.get("retries") is not None else 5,
            backoff_s=float(e["backoff_s"]) if e.get("backoff_s") is not None else 1.0,
            max_backoff_s=float(e["max_backoff_s"]) if e.get("max_backoff_s") is not None else 60.0,
        )
        self.max_requests = int(e["max_requests"]) if e.get("max_requests") is not None else None
        self.sent = 0  # attempts so far (the budget counts these)
        self.retried = 0
        self._lock = threading.Lock()
        self.sleep: Callable[[float], None] = time.sleep

    def _spend(self, what: str, key: str | None) -> None:
        with self._lock:
            if self.max_requests is not None and self.sent >= self.max_requests:
                raise RequestFailed(
                    f"{what}: the run's request budget (model.engine.max_requests={self.max_requests}) is spent; "
                    "rerun to resume (finished requests are kept)",
                    key,
                )
            self.sent += 1

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
                headers={"Content-Type": "application/json", "Authorization": f"Bearer {self.api_key}"},
            )
            try:
                with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                    raw = resp.read()
                try:
                    return json.loads(raw)
                except ValueError:
                    last = f"malformed JSON in the answer ({len(raw)} bytes)"
            except urllib.error.HTTPError as err:
                detail = " ".join(err.read().decode("utf-8", errors="replace")[:300].split())
                last = f"HTTP {err.code}: {detail}"
                if err.code not in RETRIED_STATUS:
                    raise RequestFailed(f"{what}: {last}", key) from None
                retry_after = _retry_after(err.headers.get("Retry-After"))
            except TimeoutError:
                last = f"timed out after {self.timeout_s:g}s"
            except (urllib.error.URLError, OSError) as err:
                reason = getattr(err, "reason", err)
                if isinstance(reason, ConnectionRefusedError):  # nothing listens there: a wrong URL, not a hiccup
                    raise RequestFailed(f"{what}: cannot reach the server ({reason})", key) from None
                last = f"timed out after {self.timeout_s:g}s" if isinstance(reason, TimeoutError) else f"{reason}"
            if attempt + 1 < attempts:
                with self._lock:
                    self.retried += 1
                self.sleep(self.policy.delay(attempt, retry_after))
        raise RequestFailed(f"{what}: {last} (gave up after {attempts} attempts)", key)

    def only_model(self) -> str:
        models = list(self.request("GET", "/models").get("data", []))
        if len(models) != 1:
            names = ", ".join(m.get("id", "?") for m in models)
            raise ExecuteError(f"{self.base_url}: serves {len(models)} models ({names}); set model.engine.model")
        return str(models[0]["id"])

    def server_max_len(self, model: str) -> int | None:
        for m in self.request("GET", "/models").get("data", []):
            if m.get("id") == model and m.get("max_model_len"):
                return int(m["max_model_len"])
        return None


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
