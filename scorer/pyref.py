"""User Python referenced by a plan (custom filters, metrics, ``process_results``).

The compiler records a function as data: ``{"__function__": "module.attr", "path": "/abs/file.py",
"sha256": "..."}``. The scorer imports such a file only when the user trusts code (``trust_code=True``,
``lmeval score --trust-code`` or ``LMEVAL_TRUST_CODE=1``) and only if the file's sha256 still equals the
one recorded at compile time, so a plan never runs code that changed after it was compiled.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scorer.errors import ScoreError

_LOADED: dict[tuple[str, str], Any] = {}


def is_ref(obj: Any) -> bool:
    return isinstance(obj, dict) and "__function__" in obj


def ref_name(ref: dict[str, Any]) -> str:
    """The attribute name of a reference (lm-eval names a callable metric by ``__name__``)."""
    return str(ref["__function__"]).rsplit(".", 1)[-1]


def trust_from_env() -> bool:
    return os.environ.get("LMEVAL_TRUST_CODE", "").strip().lower() in ("1", "true", "yes")


def load_ref(ref: dict[str, Any], trust: bool, where: str) -> Callable[..., Any]:
    """Import the referenced function; ``where`` names task and field for error messages."""
    qual = str(ref.get("__function__", ""))
    path = ref.get("path")
    if not trust:
        raise ScoreError(
            f"{where}: scoring needs user code {qual} from {path}; rerun with --trust-code "
            f"(or LMEVAL_TRUST_CODE=1) if you trust that file"
        )
    if not path:
        raise ScoreError(f"{where}: function reference {qual} has no file path")
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise ScoreError(f"{where}: cannot read {p} for {qual} ({e.strerror})") from None
    digest = hashlib.sha256(data).hexdigest()
    want = ref.get("sha256")
    if want and digest != want:
        raise ScoreError(
            f"{where}: {p} changed since the plan was compiled (sha256 {digest[:12]} != {str(want)[:12]}); "
            f"recompile the plan"
        )
    key = (str(p), digest)
    module = _LOADED.get(key)
    if module is None:
        mod_name = f"_lmeval_user_{digest[:16]}"
        spec = importlib.util.spec_from_file_location(mod_name, p)
        if spec is None or spec.loader is None:
            raise ScoreError(f"{where}: cannot import {p}")
        module = importlib.util.module_from_spec(spec)
        sys.path.insert(0, str(p.parent))
        try:
            spec.loader.exec_module(module)
        finally:
            try:
                sys.path.remove(str(p.parent))
            except ValueError:
                pass
        _LOADED[key] = module
    attr = qual.rsplit(".", 1)[-1]
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise ScoreError(f"{where}: {p} has no function {attr!r}")
    return fn  # type: ignore[no-any-return]
