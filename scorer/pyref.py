"""Scoring hooks a plan references (custom filters, metrics, aggregations, ``process_results``).

The compiler records each hook as data, never as code (``plans/funcref.py`` has the format). Two kinds:

- ``{"__function__", "builtin": NAME}``: one of lmeval's own hooks (``scorer/codehooks.py``: sandboxed
  pass@k and the humaneval/mbpp prediction builders). No user code runs; no consent needed.
- a user module: imported only when the person scoring passes ``--trust-code`` (``trust=True``); that flag
  is the one switch that grants trust (nothing in a plan, results directory or environment can). Before
  anything runs, the module file and every other Python file of its task folder are checked against the
  sha256 recorded at compile time; imports of files under that folder load only hashed source (bytecode
  caches are never read). A reference without a sha256 is refused.

A hook whose module needs a package that is not installed (lm-eval's ifeval needs ``langdetect``) fails
with one line naming the package.
"""

from __future__ import annotations

import hashlib
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from plans.funcref import CodeRefused, load_module, module_name_for, sha256_file, split_spec
from scorer.errors import ScoreError

_LOADED: dict[tuple[str, str], Any] = {}


def is_ref(obj: Any) -> bool:
    return isinstance(obj, dict) and "__function__" in obj


def ref_name(ref: dict[str, Any]) -> str:
    """The attribute name of a reference (lm-eval names a callable metric by ``__name__``)."""
    return str(ref["__function__"]).rsplit(".", 1)[-1]


def _missing_package(e: ModuleNotFoundError, where: str, qual: str) -> ScoreError:
    pkg = (e.name or str(e)).split(".")[0]
    return ScoreError(
        f"{where}: {qual} needs the Python package {pkg!r}, which is not installed here "
        f"(pip install {pkg}, then score again)"
    )


def load_ref(ref: dict[str, Any], trust: bool, where: str) -> Callable[..., Any]:
    """The referenced function; ``where`` names task and field for error messages."""
    qual = str(ref.get("__function__", ""))
    builtin = ref.get("builtin")
    if builtin is not None:
        from scorer.codehooks import HOOKS

        fn = HOOKS.get(str(builtin))
        if fn is None:
            raise ScoreError(f"{where}: unknown lmeval built-in {builtin!r} (known: {', '.join(sorted(HOOKS))})")
        return fn
    path = ref.get("path")
    if not trust:
        raise ScoreError(
            f"{where}: scoring needs user code {qual} from {path}; rerun with --trust-code if you trust that file"
        )
    parts = split_spec(qual)
    if parts is None:
        raise ScoreError(f"{where}: function reference {qual!r} is not module.function")
    want = ref.get("sha256")
    if not path or not isinstance(want, str) or not want:
        raise ScoreError(f"{where}: function reference {qual} has no file and sha256; refusing it (recompile the plan)")
    p = Path(str(path))
    try:
        digest = sha256_file(p)
    except OSError as e:
        raise ScoreError(f"{where}: cannot read {p} for {qual} ({e.strerror})") from None
    if digest != want:
        raise ScoreError(
            f"{where}: {p} changed since the plan was compiled (sha256 {digest[:12]} != {want[:12]}); "
            f"recompile the plan"
        )
    root_s = ref.get("root")
    files = ref.get("files")
    if root_s is None:
        if isinstance(ref.get("module"), str):
            return _installed(ref, str(ref["module"]), parts[1], where, qual)
        root, files = p.parent, {p.name: want}  # the file alone: any other file of its folder is refused
    else:
        root = Path(str(root_s))
        if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
            raise ScoreError(f"{where}: function reference {qual} has a malformed file list; recompile the plan")
        for rel, h in sorted(files.items()):  # every file of the task folder, before anything runs
            f = root / rel
            try:
                now = hashlib.sha256(f.read_bytes()).hexdigest()
            except OSError as e:
                raise ScoreError(f"{where}: cannot read {f} for {qual} ({e.strerror})") from None
            if now != h:
                raise ScoreError(
                    f"{where}: {f} changed since the plan was compiled (sha256 {now[:12]} != {h[:12]}); "
                    f"recompile the plan"
                )
    key = (str(p), digest)
    module = _LOADED.get(key)
    if module is None:
        try:
            module = load_module(p, root, files, module_name_for(p, digest))
        except CodeRefused as e:
            raise ScoreError(f"{where}: refusing {qual}: {e}") from None
        except ModuleNotFoundError as e:
            raise _missing_package(e, where, qual) from None
        except Exception as e:  # noqa: BLE001 - the user's module failed while loading
            raise ScoreError(f"{where}: importing {p} failed: {type(e).__name__}: {e}") from None
        _LOADED[key] = module
    return _attr(module, parts[1], where, p)


def _installed(ref: dict[str, Any], module_name: str, attr: str, where: str, qual: str) -> Callable[..., Any]:
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        raise _missing_package(e, where, qual) from None
    except Exception as e:  # noqa: BLE001
        raise ScoreError(f"{where}: importing {module_name} failed: {type(e).__name__}: {e}") from None
    origin = getattr(module, "__file__", None)
    if not origin or Path(origin).resolve() != Path(str(ref["path"])).resolve():
        raise ScoreError(f"{where}: module {module_name} now loads from {origin}, not {ref['path']}; recompile")
    return _attr(module, attr, where, Path(origin))


def _attr(module: Any, attr: str, where: str, p: Path) -> Callable[..., Any]:
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise ScoreError(f"{where}: {p} has no function {attr!r}")
    return fn  # type: ignore[no-any-return]
