"""``!function module.attr`` references: located at compile time, recorded as data, run only where needed.

A task config may name Python functions (lm-eval's ``!function utils.doc_to_text``; in Hydra configs the
quoted string ``"!function module.attr"``). ``module`` is a dotted name of plain identifiers; it is looked up
as a file in the YAML's own folder tree first (lm-eval's rule: ``utils`` -> ``<yaml dir>/utils.py``,
``a.b`` -> ``<yaml dir>/a/b.py``), then as an importable installed module. Nothing else: no leading dots,
no paths, and a file that resolves (through a symlink) outside the YAML's folder is refused.

Functions that shape prompts (``process_docs``, ``doc_to_*``, few-shot ``samples``, ``custom_dataset``) run
at compile time. Their module's source is executed from verified bytes (``plans.funcref.load_module``: no
bytecode caches). A function whose body only returns a literal (lm-eval's ``list_fewshot_samples``) is
evaluated from the source without importing its module at all.

Scoring hooks (``process_results``, metric and aggregation functions, filters) are never imported here:
``score_ref_data`` records the module file relative to its task folder and the sha256 of every Python file
of that folder (no machine path: ``plans.funcref``), so a plan compiles where the scorer's extra packages
are missing, and the scorer runs exactly those files (with the user's ``--trust-code``). lm-eval's
humaneval/mbpp hooks, which load Hugging Face ``evaluate``'s unsandboxed ``code_eval``, are recorded
as lmeval's sandboxed built-ins instead (``plans.funcref.builtin_for``).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lmeval.compiler.errors import fail
from lmeval.compiler.functionref import FunctionRef
from lmeval.plans import (
    BUILTIN_HOOKS,
    BUILTIN_MODULE,
    CodeRefused,
    builtin_data,
    builtin_for,
    hash_tree,
    hashed_data,
    is_inside,
    load_module,
    module_file,
    module_name_for,
    ref_data,
    sha256_file,
    split_qualname,
)

PREFIX = "!function "


@dataclass(frozen=True)
class Location:
    path: Path  # the module file
    root: Path | None  # the YAML's folder, for a module file found there
    module: str | None  # the dotted name, for an importable installed module


def _bad_name(ref: FunctionRef, task: str | None, field: str | None) -> Exception:
    return fail(
        f"'!function {ref.qualname}' must be module.function made of plain identifiers (no leading dots, no paths)",
        file=ref.source,
        task=task,
        field=field,
    )


# The shipped task configs name lmeval's own task functions ``compiler.tasklib.<module>.<fn>`` (the spelling is
# part of their hashed config, so it stays); they live in the installed package as ``lmeval.compiler.tasklib``.
SHIPPED_TASKLIB = "compiler.tasklib."


def locate(ref: FunctionRef, *, task: str | None = None, field: str | None = None) -> Location:
    """Where ``ref``'s module is, without running any of it (an installed package's parents may import)."""
    parts = split_qualname(ref.qualname)
    if parts is None:
        raise _bad_name(ref, task, field)
    mod_parts, _attr = parts
    mod = ".".join(mod_parts)
    if ref.base_dir is not None:
        base = Path(ref.base_dir).resolve()
        cand = base.joinpath(*mod_parts[:-1], mod_parts[-1] + ".py")
        if cand.exists():
            real = cand.resolve()
            if not is_inside(real, base) or not real.is_file():
                raise fail(
                    f"'!function {ref.qualname}': {cand} resolves to {real}, outside the task folder {base}",
                    file=ref.source,
                    task=task,
                    field=field,
                )
            return Location(real, base, None)
    if mod.startswith(SHIPPED_TASKLIB):  # lmeval's own task library, as the shipped configs spell it
        mod = "lmeval." + mod
    try:
        path = module_file(mod)
    except Exception as e:  # noqa: BLE001 - a parent package that fails to import
        path = None
        why = f" ({type(e).__name__}: {e})"
    else:
        why = ""
    if path is None:
        looked = f" (looked for {Path(ref.base_dir) / (mod.replace('.', '/') + '.py')})" if ref.base_dir else ""
        raise fail(
            f"cannot import '!function {ref.qualname}': no module {mod!r}{why}{looked}",
            file=ref.source,
            task=task,
            field=field,
        )
    return Location(path, None, mod)


_modules: dict[Path, Any] = {}
_fn_cache: dict[FunctionRef, Callable[..., Any]] = {}


def forget_loaded() -> None:
    """Drop the task-folder modules and functions resolved so far: each compile runs the code its files hold
    now (a long-lived process that compiles, edits a task's Python and compiles again sees the edit, and the
    build cache never stores prompts made by older code under the new code's key)."""
    _modules.clear()
    _fn_cache.clear()


def literal_function(path: Path, attr: str) -> Callable[[], Any] | None:
    """A module-level ``def attr():`` whose body only returns a literal, as a function returning a fresh copy
    of that literal (from the source: the module is not imported); None for anything else."""
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (SyntaxError, ValueError, OSError):
        return None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == attr:
            a = node.args
            if a.args or a.posonlyargs or a.kwonlyargs or a.vararg or a.kwarg or node.decorator_list:
                return None
            body = list(node.body)
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                body = body[1:]  # docstring
            if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
                return None
            try:
                ast.literal_eval(body[0].value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                return None
            src = ast.unparse(body[0].value)
            return lambda: ast.literal_eval(src)
    return None


def resolve(ref: FunctionRef, *, task: str | None = None, field: str | None = None) -> Callable[..., Any]:
    """The callable ``ref`` names (running its module); a CompileError naming file, task and field."""
    hit = _fn_cache.get(ref)
    if hit is not None:
        return hit
    loc = locate(ref, task=task, field=field)
    parts = split_qualname(ref.qualname)
    assert parts is not None
    attr = parts[1]
    fn: Any = None
    if loc.root is not None:
        fn = literal_function(loc.path, attr)
    if fn is None:
        try:
            if loc.root is not None:
                module = _modules.get(loc.path)
                if module is None:
                    module = load_module(
                        loc.path, loc.root, hash_tree(loc.root), module_name_for(loc.path, sha256_file(loc.path))
                    )
                    _modules[loc.path] = module
            else:
                assert loc.module is not None
                module = importlib.import_module(loc.module)
        except CodeRefused as e:
            raise fail(f"'!function {ref.qualname}': {e}", file=ref.source, task=task, field=field) from None
        except Exception as e:  # noqa: BLE001 - any import failure is the user's module
            raise fail(
                f"cannot import '!function {ref.qualname}' from {loc.path}: {type(e).__name__}: {e}",
                file=ref.source,
                task=task,
                field=field,
            ) from None
        fn = getattr(module, attr, None)
    if fn is None or not callable(fn):
        raise fail(
            f"'!function {ref.qualname}': {loc.path} has no function {attr!r}", file=ref.source, task=task, field=field
        )
    _fn_cache[ref] = fn
    return fn  # type: ignore[no-any-return]


def score_ref_data(ref: FunctionRef, *, task: str | None = None, field: str | None = None) -> dict[str, Any]:
    """The plan's record of a scoring hook, located but not imported (see the module docstring)."""
    parts = split_qualname(ref.qualname)
    if parts is None:
        raise _bad_name(ref, task, field)
    if parts[0] == [BUILTIN_MODULE]:
        name = builtin_for(ref.qualname)
        if name is None:
            known = ", ".join(sorted(BUILTIN_HOOKS))
            raise fail(
                f"'!function {ref.qualname}': no such lmeval built-in (known: {known})",
                file=ref.source,
                task=task,
                field=field,
            )
        return builtin_data(ref.qualname, name)
    loc = locate(ref, task=task, field=field)
    name = builtin_for(ref.qualname, loc.path, loc.root)
    if name is not None:
        return builtin_data(ref.qualname, name)
    try:
        return ref_data(ref.qualname, loc.path, loc.root, loc.module)
    except (CodeRefused, OSError) as e:
        raise fail(f"'!function {ref.qualname}': {e}", file=ref.source, task=task, field=field) from None


def as_data(ref: FunctionRef, *, with_path: bool, task: str | None = None, field: str | None = None) -> dict:
    """The plan's data form of a function reference. Scoring hooks (``with_path``): ``score_ref_data``.
    Prompt-shaping functions (already run): name and file hash."""
    if with_path:
        return score_ref_data(ref, task=task, field=field)
    resolve(ref, task=task, field=field)
    loc = locate(ref, task=task, field=field)
    return hashed_data(ref.qualname, loc.path)


def from_hydra_value(value: Any, base_dir: str | None, source: str | None) -> Any:
    """Turn ``"!function a.b"`` strings (anywhere in a nested value) into FunctionRefs."""
    if isinstance(value, str) and value.startswith(PREFIX):
        return FunctionRef(value[len(PREFIX) :].strip(), base_dir, source)
    if isinstance(value, dict):
        return {k: from_hydra_value(v, base_dir, source) for k, v in value.items()}
    if isinstance(value, list):
        return [from_hydra_value(v, base_dir, source) for v in value]
    return value
