"""Scoring hooks a plan references (custom filters, metrics, aggregations, ``process_results``).

The compiler records each hook as data, never as code (``plans/usercode/funcref.py`` has the format). Two kinds:

- ``{"__function__", "builtin": NAME}``: one of lmeval's own hooks (``scorer/usercode/hooks.py``: sandboxed
  pass@k and the humaneval/mbpp prediction builders). No user code runs; no consent needed.
- a user module: imported only when the person scoring passes ``--trust-code`` (a ``Trust``); that flag
  is the one switch that grants trust (nothing in a plan, results directory or environment can). A plan
  holds no machine path, so the task folder is found again by content: the folder under the user's
  ``--include-path`` folders (then conf/task and lm-eval's tasks) whose module file and every other Python
  file match the sha256 recorded at compile time. Imports of files under that folder load only hashed
  source (bytecode caches are never read). A reference without a sha256 is refused. An installed module is
  found by its import machinery; its file must match the recorded sha256.

A hook whose module needs a package that is not installed (lm-eval's ifeval needs ``langdetect``) fails
with one line naming the package.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lmeval.plans import (
    CodeRefused,
    FolderSearch,
    default_task_roots,
    describe_ref,
    find_task_folder,
    first_mismatch,
    is_ref,
    load_module,
    module_file,
    module_name_for,
    ref_attr,
    ref_qualname,
    sha256_file,
    user_ref_problem,
)
from lmeval.scorer.errors import ScoreError

_LOADED: dict[tuple[str, str], Any] = {}


def forget_scoring_modules() -> None:
    """The next ``load_ref`` of a task-folder module executes it afresh (its top-level code runs again, as a
    new process's first import does: ``scorer/usercode/globalrandom.py``)."""
    _LOADED.clear()


__all__ = ["Trust", "forget_scoring_modules", "is_ref", "load_ref", "locate_ref", "ref_name"]

ref_name = ref_attr  # the attribute name of a reference (lm-eval names a callable metric by ``__name__``)


def _missing_package(e: ModuleNotFoundError, where: str, qual: str) -> ScoreError:
    pkg = (e.name or str(e)).split(".")[0]
    return ScoreError(
        f"{where}: {qual} needs the Python package {pkg!r}, which is not installed here "
        f"(pip install {pkg}, then score again)"
    )


@dataclass(frozen=True)
class Trust:
    """The person scoring passed ``--trust-code``: user code the plan references may run once its hashes
    check. ``include_paths``: folders to find task folders under (``lmeval score --include-path DIR``;
    ``lmeval run`` passes its own ``run.include_path``)."""

    include_paths: tuple[Path, ...] = ()

    @classmethod
    def of(cls, include_path: str | Path | Sequence[str | Path] | None) -> Trust:
        if include_path is None:
            return cls()
        paths = [include_path] if isinstance(include_path, str | Path) else list(include_path)
        return cls(tuple(Path(p) for p in paths))


@dataclass(frozen=True)
class Located:
    path: Path  # the module file
    root: Path | None  # its task folder (None for an installed module)
    files: dict[str, str]
    digest: str


def locate_ref(ref: dict[str, Any], trust: Trust | None, where: str) -> Located | None:
    """Where a user reference's code is now, every hash checked, nothing imported; None for a built-in.
    A ScoreError (one line) without ``trust``, for a reference without a sha256, or when no folder holds
    the recorded files."""
    if ref.get("builtin") is not None:
        return None
    qual = ref_qualname(ref)
    if trust is None:
        raise ScoreError(
            f"{where}: scoring needs user code {qual} {describe_ref(ref)}; rerun with --trust-code if you trust "
            "that code"
        )
    problem = user_ref_problem(ref)
    if problem is not None:
        raise ScoreError(f"{where}: {problem}")
    want, module, rel, files = ref["sha256"], ref.get("module"), ref.get("file"), ref.get("files")
    if isinstance(module, str):
        return _locate_installed(module, want, where, qual)
    assert isinstance(rel, str) and isinstance(files, dict)
    found = _find(rel, files, trust)
    if found.folder is not None:
        path = found.folder / rel
        return Located(path, found.folder, dict(files), want)
    if found.changed is not None:
        c = found.changed
        now = f"sha256 {c.now[:12]} != {c.want[:12]}" if c.now else "cannot be read"
        raise ScoreError(f"{where}: {c.path} changed since the plan was compiled ({now}); recompile the plan")
    if not trust.include_paths:
        raise ScoreError(
            f"{where}: {qual} lives in its task folder ({rel}, sha256 {want[:12]}), which the plan does not "
            f"locate; pass the folder holding the task's YAML with --include-path DIR"
        )
    dirs = ", ".join(str(p) for p in trust.include_paths)
    raise ScoreError(
        f"{where}: no folder under {dirs} holds {rel} with sha256 {want[:12]} and the task folder's other "
        f"files as compiled ({qual}); pass the folder holding the task's YAML with --include-path DIR"
    )


_FOUND: dict[tuple[str, tuple[tuple[str, str], ...], tuple[Path, ...]], Path] = {}


def _find(rel: str, files: dict[str, str], trust: Trust) -> FolderSearch:
    """``find_task_folder`` under the user's folders, then the default ones; a folder found before is
    reused while its files still match."""
    key = (rel, tuple(sorted(files.items())), trust.include_paths)
    hit = _FOUND.get(key)
    if hit is not None and first_mismatch(hit, files) is None:
        return FolderSearch(hit, None)
    found = find_task_folder(rel, files, trust.include_paths, default_task_roots())
    if found.folder is not None:
        _FOUND[key] = found.folder
    return found


def _locate_installed(module: str, want: str, where: str, qual: str) -> Located:
    try:
        found = module_file(module)
    except ModuleNotFoundError as e:
        raise _missing_package(e, where, qual) from None
    except Exception as e:  # noqa: BLE001 - a parent package that fails to import
        raise ScoreError(f"{where}: finding module {module} failed: {type(e).__name__}: {e}") from None
    if found is None:
        raise ScoreError(f"{where}: {qual} needs the module {module!r}, which is not importable here")
    path = found
    try:
        digest = sha256_file(path)
    except OSError as e:
        raise ScoreError(f"{where}: cannot read {path} for {qual} ({e.strerror})") from None
    if digest != want:
        raise ScoreError(
            f"{where}: {path} (module {module}) is not the file the plan was compiled with "
            f"(sha256 {digest[:12]} != {want[:12]}); recompile the plan"
        )
    return Located(path, None, {}, digest)


def load_ref(ref: dict[str, Any], trust: Trust | None, where: str) -> Callable[..., Any]:
    """The referenced function; ``where`` names task and field for error messages."""
    qual = ref_qualname(ref)
    builtin = ref.get("builtin")
    if builtin is not None:
        from lmeval.scorer.usercode.hooks import HOOKS

        fn = HOOKS.get(str(builtin))
        if fn is None:
            raise ScoreError(f"{where}: unknown lmeval built-in {builtin!r} (known: {', '.join(sorted(HOOKS))})")
        return fn
    loc = locate_ref(ref, trust, where)
    assert loc is not None
    attr = ref_attr(ref)
    if loc.root is None:
        return _installed(str(ref["module"]), loc.path, attr, where, qual)
    key = (str(loc.path), loc.digest)
    module = _LOADED.get(key)
    if module is None:
        try:
            module = load_module(loc.path, loc.root, loc.files, module_name_for(loc.path, loc.digest))
        except CodeRefused as e:
            raise ScoreError(f"{where}: refusing {qual}: {e}") from None
        except ModuleNotFoundError as e:
            raise _missing_package(e, where, qual) from None
        except Exception as e:  # noqa: BLE001 - the user's module failed while loading
            raise ScoreError(f"{where}: importing {loc.path} failed: {type(e).__name__}: {e}") from None
        _LOADED[key] = module
    return _attr(module, attr, where, loc.path)


def _installed(module_name: str, path: Path, attr: str, where: str, qual: str) -> Callable[..., Any]:
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        raise _missing_package(e, where, qual) from None
    except Exception as e:  # noqa: BLE001
        raise ScoreError(f"{where}: importing {module_name} failed: {type(e).__name__}: {e}") from None
    origin = getattr(module, "__file__", None)
    if not origin or Path(origin).resolve() != path:
        raise ScoreError(f"{where}: module {module_name} loaded from {origin}, not the checked {path}; recompile")
    return _attr(module, attr, where, path)


def _attr(module: Any, attr: str, where: str, p: Path) -> Callable[..., Any]:
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise ScoreError(f"{where}: {p} has no function {attr!r}")
    return fn  # type: ignore[no-any-return]
