"""User Python named by a task (``!function module.attr``): the plan's record of a reference. The one
definition of its format (keys, validation, hashing, the built-in table) for the compiler, which writes it,
and the scorer, which reads it; finding and loading the recorded code again is ``plans/usercode/funcload.py``.

A reference in a plan is data, and holds no machine path (plans are byte-identical wherever files live).
A user scoring hook (``ref_data``; run by the scorer only with the user's ``--trust-code``)::

    {"__function__": "utils.pass_at_k",          # the name as the YAML wrote it
     "file": "utils.py",                         # the module file, relative to its task folder
     "sha256": "...",                            # its content hash at compile time
     "files": {"utils.py": "...", "helpers/x.py": "..."}}   # every .py of the task folder, hashed at compile

(the task folder is the folder of the YAML that wrote the ``!function``), or, for a function of an importable
installed module, ``{"__function__", "module", "sha256"}``. ``user_ref_problem`` is the reader's check of
these. One of lmeval's own sandboxed hooks (``builtin_for``, ``builtin_data``): ``{"__function__",
"builtin": NAME}``. A prompt-shaping function, already run at compile time (``hashed_data``):
``{"__function__", "sha256"}``.
"""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from lmeval.common import file_sha256

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
MAX_TREE_FILES = 2000  # .py files hashed under one task folder
_SKIP_DIRS = {"__pycache__", ".git", ".ipynb_checkpoints"}
# installed packages under a task folder (a virtualenv beside a project's YAMLs) are not the task's code:
# neither hashed nor guarded, like any other installed module
_INSTALLED = {"site-packages", "dist-packages"}


def installed_tree(rel_parts: tuple[str, ...]) -> bool:
    return any(p in _INSTALLED for p in rel_parts)


class CodeRefused(Exception):
    """A module file is not the one the plan recorded (changed, never hashed, or outside its folder)."""


# --- the record's format: the only code that spells its keys -------------------------------------------------

REF_KEY = "__function__"  # the name as the YAML wrote it; the key that marks a value as a reference


def is_ref(obj: Any) -> bool:
    """A function reference in the plan's data form (any recorded kind)."""
    return isinstance(obj, dict) and isinstance(obj.get(REF_KEY), str)


def is_user_ref(obj: Any) -> bool:
    """A reference to user code (not one of lmeval's built-ins): what needs ``--trust-code`` to run."""
    return is_ref(obj) and obj.get("builtin") is None


def ref_qualname(ref: Mapping[str, Any]) -> str:
    return str(ref.get(REF_KEY, ""))


def ref_attr(ref: Mapping[str, Any]) -> str:
    """The function's own name (lm-eval names a callable metric by ``__name__``)."""
    return ref_qualname(ref).rpartition(".")[2]


def name_data(qualname: str) -> dict[str, Any]:
    """A reference by name only: what the compiler's scoring checks look at before anything is located."""
    return {REF_KEY: qualname}


def builtin_data(qualname: str, builtin: str) -> dict[str, Any]:
    return {REF_KEY: qualname, "builtin": builtin}


def hashed_data(qualname: str, path: Path) -> dict[str, Any]:
    """A prompt-shaping function, already run at compile time: its name and its module file's hash."""
    return {REF_KEY: qualname, "sha256": sha256_file(path)}


def describe_ref(ref: Mapping[str, Any]) -> str:
    """Where a user reference's code comes from, in words."""
    if isinstance(ref.get("module"), str):
        return f"from installed module {ref['module']}"
    if isinstance(ref.get("file"), str):
        return f"from {ref['file']} of its task folder"
    return "(no file recorded)"


def user_ref_problem(ref: Mapping[str, Any]) -> str | None:
    """Why a recorded user reference cannot be located (one phrase), or None when it is well formed: a
    module.function name, a sha256, and either an installed module or a task-folder file whose folder's
    file list holds only relative paths inside it and records the same sha256 for the file."""
    qual = ref_qualname(ref)
    if split_qualname(qual) is None:
        return f"function reference {qual!r} is not module.function"
    want, module, rel, files = ref.get("sha256"), ref.get("module"), ref.get("file"), ref.get("files")
    if not isinstance(want, str) or not want or not (isinstance(module, str) or isinstance(rel, str)):
        return f"function reference {qual} has no file and sha256; refusing it (recompile the plan)"
    if isinstance(module, str):
        return None
    if (
        not isinstance(files, dict)
        or not all(valid_relpath(k) and isinstance(v, str) for k, v in files.items())
        or not valid_relpath(rel)
        or files.get(rel) != want
    ):
        return f"function reference {qual} has a malformed file list; recompile the plan"
    return None


# --- names, hashes, locations --------------------------------------------------------------------------------


def split_qualname(qualname: str) -> tuple[list[str], str] | None:
    """``a.b.f`` -> (["a", "b"], "f"); None unless every part is a plain identifier (no leading dots, no
    slashes, no empty parts), so a reference can never name a path."""
    parts = qualname.split(".")
    if len(parts) < 2 or not all(_IDENT.match(p) for p in parts):
        return None
    return parts[:-1], parts[-1]


def sha256_file(path: Path) -> str:
    return file_sha256(path)


def is_inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True


def walk_code(root: Path) -> Iterator[tuple[str, list[str]]]:
    """``os.walk`` over a task folder's own code, sorted: bytecode caches, VCS folders, installed packages
    and virtualenvs skipped. Yields (folder, file names)."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(
            d
            for d in dirnames
            if d not in _SKIP_DIRS and d not in _INSTALLED and not (Path(dirpath) / d / "pyvenv.cfg").exists()
        )
        yield dirpath, filenames


def hash_tree(root: Path) -> dict[str, str]:
    """sha256 of every ``.py`` file under ``root`` (relative POSIX path -> hash), bytecode caches skipped."""
    out: dict[str, str] = {}
    for dirpath, filenames in walk_code(root):
        for name in sorted(filenames):
            if name.endswith(".py"):
                p = Path(dirpath) / name
                if p.is_file():
                    out[p.relative_to(root).as_posix()] = sha256_file(p)
                    if len(out) > MAX_TREE_FILES:
                        raise CodeRefused(f"more than {MAX_TREE_FILES} Python files under {root}")
    return out


def ref_data(qualname: str, path: Path, root: Path | None, module: str | None) -> dict[str, Any]:
    """The plan's record of a user scoring hook (see the module docstring): ``path`` relative to ``root`` for
    a task-folder module, the module name for an installed one; never an absolute path."""
    out: dict[str, Any] = {REF_KEY: qualname}
    if root is not None:
        root = root.resolve()
        real = path.resolve()
        if not is_inside(real, root):
            raise CodeRefused(f"{path} is outside its task folder {root}")
        files = hash_tree(root)
        rel = real.relative_to(root).as_posix()
        if rel not in files:
            raise CodeRefused(f"{path} is not a Python source file of its task folder {root}")
        out["file"] = rel
        out["sha256"] = files[rel]
        out["files"] = files
    elif module is not None:
        out["module"] = module
        out["sha256"] = sha256_file(path)
    else:
        raise CodeRefused(f"{path}: neither in a task folder nor an installed module")
    return out


def valid_relpath(rel: object) -> bool:
    """A recorded file name is a relative POSIX path inside its folder (no ``..``, not absolute, no
    backslashes), so a plan can never make the scorer read outside a folder it searches."""
    if not isinstance(rel, str) or not rel or "\\" in rel or "\0" in rel:
        return False
    parts = rel.split("/")
    return not rel.startswith("/") and all(p not in ("", ".", "..") for p in parts)


def module_file(module: str) -> Path | None:
    """The source file an importable module would load from (resolved), found without running it (its parent
    packages may import); None when there is no such file. Errors finding it (a broken parent) propagate."""
    module_spec = importlib.util.find_spec(module)
    origin = getattr(module_spec, "origin", None) if module_spec is not None else None
    if not origin or not Path(origin).is_file():
        return None
    return Path(origin).resolve()


def lm_eval_tasks_dir() -> Path | None:
    """lm-eval's installed task folders (``.../lm_eval/tasks``), found without importing lm_eval."""
    try:
        init = module_file("lm_eval")
    except Exception:  # noqa: BLE001
        return None
    return None if init is None else init.parent / "tasks"


# lmeval's built-in scoring hooks (implemented by the scorer, run in its sandbox), named in task configs as
# ``!function lmeval_builtin.NAME``; a plan records them as ``{"__function__": ..., "builtin": NAME}``.
BUILTIN_MODULE = "lmeval_builtin"
BUILTIN_HOOKS = {
    "pass_at_k": "metric: unbiased pass@k over a document's candidate programs (keys pass@K for each k)",
    "pass_at_1": "metric: pass@1 of a document's first candidate program (a number)",
    "humaneval_build_predictions": "filter: the document's prompt followed by each response",
    "humaneval_build_predictions_instruct": "filter: the prompt followed by each response up to a ``` fence",
    "mbpp_build_predictions": "filter: the first fenced code block of each response",
}
# lm-eval's code tasks whose utils.py loads Hugging Face evaluate's code_eval: (task folder, function) ->
# the built-in that replaces it (same numbers, generated code in lmeval's sandbox)
LM_EVAL_CODE_HOOKS = {
    ("humaneval", "pass_at_k"): "pass_at_k",
    ("humaneval", "build_predictions"): "humaneval_build_predictions",
    ("humaneval", "build_predictions_instruct"): "humaneval_build_predictions_instruct",
    ("mbpp", "pass_at_1"): "pass_at_1",
    ("mbpp", "build_predictions"): "mbpp_build_predictions",
}


def builtin_for(qualname: str, path: Path | None = None, root: Path | None = None) -> str | None:
    """The built-in a reference is recorded as, or None: ``lmeval_builtin.NAME`` names one directly (a
    known NAME); lm-eval's own humaneval/mbpp hooks (``utils.py`` of its installed task folder ``root``,
    ``path`` the module file) map to the sandboxed equivalents."""
    parts = split_qualname(qualname)
    if parts is None:
        return None
    mod_parts, attr = parts
    if mod_parts == [BUILTIN_MODULE]:
        return attr if attr in BUILTIN_HOOKS else None
    if path is None or root is None or path.name != "utils.py":
        return None
    tasks = lm_eval_tasks_dir()
    if tasks is None or root.parent != tasks:
        return None
    return LM_EVAL_CODE_HOOKS.get((root.name, attr))
