"""The HTTP backends' settings (``model.engine``), checked: each bad value refused in one line naming it
(docs/reference/hostile-input.md, "API keys and HTTP answers")."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lmeval.executor.errors import ExecuteError

DEFAULT_MAX_RESPONSE_BYTES = 32 << 20
MAX_CONCURRENCY = 1024


@dataclass(frozen=True)
class HttpSettings:
    """``model.engine``'s HTTP settings, checked."""

    timeout_s: float = 600.0
    retries: int = 5
    backoff_s: float = 1.0
    max_backoff_s: float = 60.0
    max_requests: int | None = None
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES


def setting_int(engine: Mapping[str, Any], key: str, default: int | None, low: int, high: int | None = None) -> Any:
    """``engine[key]`` as an integer in ``[low, high]`` (``default`` when unset); ``ExecuteError`` naming it."""
    v = engine.get(key)
    if v is None:
        return default
    if isinstance(v, str) and v.strip().lstrip("-").isdigit() and len(v) < 20:
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, int) or v < low or (high is not None and v > high):
        bound = f"from {low} to {high}" if high is not None else f"at least {low}"
        raise ExecuteError(f"model.engine.{key}={str(v)[:60]}: must be an integer {bound}")
    return v


def setting_float(engine: Mapping[str, Any], key: str, default: float, positive: bool) -> float:
    """``engine[key]`` as a finite number (> 0 when ``positive``, else >= 0); ``ExecuteError`` naming it."""
    v = engine.get(key)
    if v is None:
        return default
    try:
        f = float(v) if not isinstance(v, bool) else math.nan
    except (TypeError, ValueError):
        f = math.nan
    if not math.isfinite(f) or f < 0 or (positive and f == 0):
        kind = "a positive number of seconds" if positive else "a number of seconds, 0 or more"
        raise ExecuteError(f"model.engine.{key}={str(v)[:60]}: must be {kind}")
    return f


def http_settings(engine: Mapping[str, Any]) -> HttpSettings:
    return HttpSettings(
        timeout_s=setting_float(engine, "timeout_s", 600.0, positive=True),
        retries=setting_int(engine, "retries", 5, 0, 1000),
        backoff_s=setting_float(engine, "backoff_s", 1.0, positive=False),
        max_backoff_s=setting_float(engine, "max_backoff_s", 60.0, positive=False),
        max_requests=setting_int(engine, "max_requests", None, 1),
        max_response_bytes=setting_int(engine, "max_response_bytes", DEFAULT_MAX_RESPONSE_BYTES, 1024),
    )
