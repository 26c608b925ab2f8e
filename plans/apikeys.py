"""Where an API key may come from, and where it may go (one rule for the compiler, the judge and the executor).

A key is the executing user's and lives only in the environment (``OPENAI_API_KEY``): a config, a model YAML or an
override that names ``model.engine.api_key`` is refused in one line, because every config is written somewhere
(the plan, ``lmeval show --config``, ``results.json``, a judge plan, the run's manifest). A key holding a control
character (CR, LF, ...) is refused too: in a header it would split the request; so is a ``base_url`` holding
credentials (``https://user:key@host``).

Where the key is sent (``key_destination``): the base URL this user gave at execute time (a
``model.engine.base_url`` override of this command, else ``$OPENAI_BASE_URL``); only when neither is given, the
plan's ``model.engine.base_url``, and then the executor prints one line naming that host before the first request.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

API_KEY_ENV = "OPENAI_API_KEY"
BASE_URL_ENV = "OPENAI_BASE_URL"
DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"
SECRET_KEYS = ("api_key",)  # engine settings that would carry a credential


class KeyRefused(ValueError):
    """A key where keys may not be (a config) or a key that cannot be sent (a control character)."""


def secret_problem(model_cfg: Any, where: str = "model") -> str | None:
    """One line refusing a credential in a model config (``{"engine": {"api_key": ...}}``), or None."""
    engine = model_cfg.get("engine") if isinstance(model_cfg, Mapping) else None
    if not isinstance(engine, Mapping):
        return None
    for key in SECRET_KEYS:
        if key in engine and engine[key] not in (None, ""):
            return (
                f"{where}.engine.{key}: an API key is never taken from a config or an override (it would be written "
                f"into the plan, the results and the manifest); set the {API_KEY_ENV} environment variable instead"
            )
    url = engine.get("base_url")
    if isinstance(url, str) and "@" in re.split(r"[/?#]", url.split("//", 1)[-1], maxsplit=1)[0]:
        return (
            f"{where}.engine.base_url: holds credentials (user:password@host), which would be written into the "
            f"plan and the results; name the host alone and set the {API_KEY_ENV} environment variable"
        )
    return None


def override_problem(overrides: Sequence[str], where: str = "model") -> str | None:
    """One line refusing an override that would set a credential (``model.engine.api_key=...``, or a key
    inside ``model.engine={...}``), checked before anything parses it (a parser's error would echo the key)."""
    for ov in overrides:
        key, _, value = ov.partition("=")
        key = key.strip().lstrip("+~").strip()
        for secret in SECRET_KEYS:
            if key == f"{where}.engine.{secret}" or (key in (where, f"{where}.engine") and secret in value):
                return secret_problem({"engine": {secret: "?"}}, where)
        if key in (where, f"{where}.engine", f"{where}.engine.base_url") and "@" in value:
            url = value if key.endswith("base_url") else value.partition("base_url")[2].lstrip(":= \"'")
            problem = secret_problem({"engine": {"base_url": url}}, where)
            if problem:
                return problem
    return None


def check_secretless(model_cfg: Any, where: str = "model") -> None:
    """Raise ``KeyRefused`` when ``model_cfg`` names a credential (``secret_problem``)."""
    problem = secret_problem(model_cfg, where)
    if problem:
        raise KeyRefused(problem)


def api_key_from_env(env: Mapping[str, str] | None = None) -> str | None:
    """``$OPENAI_API_KEY`` (None when unset or empty); ``KeyRefused`` when it holds a control character."""
    key = (os.environ if env is None else env).get(API_KEY_ENV) or None
    if key is not None and any(ord(c) < 0x20 or ord(c) == 0x7F for c in key):
        raise KeyRefused(
            f"${API_KEY_ENV}: the key holds a control character (CR, LF, ...); it cannot be sent in a header"
        )
    return key


def without_secrets(engine: Mapping[str, Any]) -> dict[str, Any]:
    """``engine`` minus any credential (what a manifest or log may record)."""
    return {k: v for k, v in engine.items() if k not in SECRET_KEYS}


@dataclass(frozen=True)
class Destination:
    """Where requests (and the key) go: ``url`` and who chose it (``"override"``, ``"environment"``, ``"plan"``,
    ``"default"``)."""

    url: str
    source: str

    @property
    def host(self) -> str:
        parts = urlsplit(self.url)
        return parts.netloc.rpartition("@")[2] or self.url

    def notice(self, sends_key: bool) -> str | None:
        """The line printed before the first request when the plan chose the host, else None."""
        if self.source != "plan":
            return None
        what = f"the API key (${API_KEY_ENV}) and " if sends_key else ""
        return (
            f"sending {what}requests to {self.host}, the plan's model.engine.base_url; to choose the server "
            f"yourself set ${BASE_URL_ENV} or pass model.engine.base_url=URL"
        )


def key_destination(
    override_url: str | None, plan_url: str | None, env: Mapping[str, str] | None = None
) -> Destination:
    """The base URL requests go to: this command's override, else ``$OPENAI_BASE_URL``, else the plan's, else the
    local default."""
    environ = os.environ if env is None else env
    if override_url:
        return Destination(str(override_url).rstrip("/"), "override")
    if environ.get(BASE_URL_ENV):
        return Destination(environ[BASE_URL_ENV].rstrip("/"), "environment")
    if plan_url:
        return Destination(str(plan_url).rstrip("/"), "plan")
    return Destination(DEFAULT_BASE_URL, "default")
