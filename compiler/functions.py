"""``!function module.attr`` references: resolved to Python callables at compile time, recorded as data.

A task config may name Python functions (lm-eval's ``!function utils.doc_to_text``; in Hydra configs the
quoted string ``"!function module.attr"``). The module is looked up beside the YAML file first (lm-eval's
rule), then as an importable module. Plans never hold code: a reference is recorded as
``{"__function__": "module.attr", "sha256": <file hash>}``, plus ``"path"`` (absolute) for functions the
scorer has to run (process_results, custom metrics and filters), so a plan that needs one names the exact
file and its content hash.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from compiler.errors import fail

PREFIX = "!function "


@dataclass(frozen=True)
class FunctionRef:
    """A reference to ``module.attr`` found in a config at ``source`` (a YAML file, or None)."""

    spec: str
    base_dir: str | None = None
    source: str | None = None

    def module_file(self) -> Path | None:
        mod_path, _, _ = self.spec.rpartition(".")
        if self.base_dir is not None and mod_path:
            rel = (Path(self.base_dir) / f"{mod_path.replace('.', '/')}.py").resolve()
            if rel.is_file():
                return rel
        return None


_module_cache: dict[str, Any] = {}
_fn_cache: dict[FunctionRef, tuple[Callable[..., Any], Path | None]] = {}


def _load_file_module(path: Path) -> Any:
    key = str(path)
    mod = _module_cache.get(key)
    if mod is None:
        name = "_lmeval_fn_" + hashlib.sha256(key.encode()).hexdigest()[:16]
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {path}")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
        _module_cache[key] = mod
    return mod


def resolve(ref: FunctionRef, *, task: str | None = None, field: str | None = None) -> Callable[..., Any]:
    """The callable ``ref`` names; a CompileError naming file, task and field when it cannot be imported."""
    hit = _fn_cache.get(ref)
    if hit is not None:
        return hit[0]
    mod_path, _, attr = ref.spec.rpartition(".")
    if not mod_path or not attr:
        raise fail(f"'!function {ref.spec}' must be module.function", file=ref.source, task=task, field=field)
    file = ref.module_file()
    try:
        if file is not None:
            module = _load_file_module(file)
        else:
            module = importlib.import_module(mod_path)
    except Exception as e:  # noqa: BLE001 - any import failure is the user's module
        looked = f" (looked for {Path(ref.base_dir) / (mod_path.replace('.', '/') + '.py')})" if ref.base_dir else ""
        raise fail(
            f"cannot import '!function {ref.spec}': {type(e).__name__}: {e}{looked}",
            file=ref.source,
            task=task,
            field=field,
        ) from None
    fn = getattr(module, attr, None)
    if fn is None or not callable(fn):
        raise fail(
            f"'!function {ref.spec}': module {mod_path} has no function {attr!r}",
            file=ref.source,
            task=task,
            field=field,
        )
    origin = file if file is not None else _module_origin(module)
    _fn_cache[ref] = (fn, origin)
    return fn  # type: ignore[no-any-return]


def _module_origin(module: Any) -> Path | None:
    f = getattr(module, "__file__", None)
    return Path(f).resolve() if f else None


def _file_sha256(path: Path | None) -> str | None:
    if path is None:
        return None
    return hashlib.sha256(path.read_bytes()).hexdigest()


def as_data(ref: FunctionRef, *, with_path: bool, task: str | None = None, field: str | None = None) -> dict:
    """The plan's data form of a function reference (resolving it, so a broken one fails at compile)."""
    resolve(ref, task=task, field=field)
    origin = _fn_cache[ref][1]
    out: dict[str, Any] = {"__function__": ref.spec, "sha256": _file_sha256(origin)}
    if with_path:
        out["path"] = str(origin) if origin is not None else None
    return out


def from_hydra_value(value: Any, base_dir: str | None, source: str | None) -> Any:
    """Turn ``"!function a.b"`` strings (anywhere in a nested value) into FunctionRefs."""
    if isinstance(value, str) and value.startswith(PREFIX):
        return FunctionRef(value[len(PREFIX) :].strip(), base_dir, source)
    if isinstance(value, dict):
        return {k: from_hydra_value(v, base_dir, source) for k, v in value.items()}
    if isinstance(value, list):
        return [from_hydra_value(v, base_dir, source) for v in value]
    return value
