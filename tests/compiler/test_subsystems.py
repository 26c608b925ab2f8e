"""The compiler's subsystems (issue #37): ``tasks``, ``build``, ``encode``, ``cache`` and ``jsonl_spec``, each
entered through its face; the build
cache's key covers every compiler source file wherever it lives; the catalog uses the contract's
``lm_eval_tasks_dir``."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import lmeval.compiler
from lmeval.common.lazyface import read_exports

COMPILER = Path(lmeval.compiler.__file__).resolve().parent
FACES = [
    "lmeval.compiler",
    "lmeval.compiler.tasks",
    "lmeval.compiler.build",
    "lmeval.compiler.encode",
    "lmeval.compiler.cache",
]
SUBSYSTEMS = ["tasks", "build", "encode", "cache", "jsonl_spec"]


def _module_name(path: Path) -> tuple[str, bool]:
    parts = ["lmeval", "compiler", *path.relative_to(COMPILER).with_suffix("").parts]
    is_pkg = parts[-1] == "__init__"
    return ".".join(parts[:-1] if is_pkg else parts), is_pkg


MODULES = {_module_name(p)[0] for p in COMPILER.rglob("*.py")}


@pytest.mark.parametrize("face", FACES)
def test_every_face_name_is_its_modules_object(face: str) -> None:
    """Even after every module of the package is imported (a submodule named like a re-export would shadow it)."""
    mod = importlib.import_module(face)
    subs = {m.name for m in pkgutil.iter_modules(mod.__path__)}
    for m in pkgutil.walk_packages(mod.__path__, face + "."):
        importlib.import_module(m.name)
    assert sorted(set(mod.__all__) & subs) == []
    for name in mod.__all__:
        got = getattr(mod, name)
        assert not isinstance(got, ModuleType), name
        where = read_exports(Path(str(mod.__file__)).read_text(encoding="utf-8"), face).lazy.get(name)
        if where is not None:
            assert got is getattr(importlib.import_module(where[0]), where[1]), name
    with pytest.raises(AttributeError):
        mod.no_such_name  # noqa: B018


def test_faces_import_nothing_heavy() -> None:
    code = (
        "import sys, lmeval.compiler, lmeval.compiler.tasks, lmeval.compiler.build, lmeval.compiler.encode, "
        "lmeval.compiler.cache\n"
        "print(','.join(m for m in ('hydra', 'omegaconf', 'jinja2', 'yaml', 'tokenizers', 'transformers') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def _past_a_face(module: str, is_pkg: bool, text: str) -> list[str]:
    """Imports of ``lmeval.compiler.<sub>.<module>`` from outside ``<sub>`` (the face rule, inside the compiler)."""
    own = module if is_pkg else module.rpartition(".")[0]
    bad = []
    for node in ast.walk(ast.parse(text)):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            targets = [
                node.module,
                *(f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in MODULES),
            ]
        for t in targets:
            parts = t.split(".")
            if len(parts) >= 4 and parts[:2] == ["lmeval", "compiler"] and parts[2] in SUBSYSTEMS:
                sub = ".".join(parts[:3])
                if own != sub and not own.startswith(sub + "."):
                    bad.append(f"{module}:{node.lineno} {t}")
    return bad


def test_face_rule_check_sees_a_planted_violation() -> None:
    planted = (
        "from lmeval.compiler.tasks.select import Selection\n"
        "from lmeval.compiler.tasks import TaskConfig, select\n"
        "from lmeval.compiler.errors import fail\n"
    )
    assert _past_a_face("lmeval.compiler.build.render", False, planted) == [
        "lmeval.compiler.build.render:1 lmeval.compiler.tasks.select",
        "lmeval.compiler.build.render:2 lmeval.compiler.tasks.select",
    ]
    assert _past_a_face("lmeval.compiler.tasks.lookup", False, planted) == []  # inside tasks/: its own modules


def test_compiler_modules_use_other_subsystems_through_their_faces() -> None:
    bad = []
    for path in sorted(COMPILER.rglob("*.py")):
        module, is_pkg = _module_name(path)
        bad += _past_a_face(module, is_pkg, path.read_text(encoding="utf-8"))
    assert bad == []


def test_no_two_files_of_a_compiler_package_share_a_first_docstring_line() -> None:
    seen: dict[tuple[Path, str], list[str]] = {}
    for path in sorted(COMPILER.rglob("*.py")):
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
        if doc:
            seen.setdefault((path.parent, doc.splitlines()[0]), []).append(str(path.relative_to(COMPILER)))
    assert [v for v in seen.values() if len(v) > 1] == []


def test_build_cache_key_covers_every_compiler_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lmeval.compiler.cache import key

    hashed = {p.resolve() for p in key.hashed_sources()}
    every = {p.resolve() for p in COMPILER.rglob("*.py") if "__pycache__" not in p.parts}
    assert every - hashed == set()
    assert {
        COMPILER / "cache" / "key.py",
        COMPILER / "tasks" / "select.py",
        COMPILER / "tasklib" / "arith.py",
    } <= hashed
    # an edit to a module of a subsystem moves the key (a copy of the sources, so the checkout is not touched)
    for sub in ("compiler", "plans", "common"):
        shutil.copytree(COMPILER.parent / sub, tmp_path / sub, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(key, "_PACKAGE_ROOT", tmp_path)
    before = key.compiler_version.__wrapped__()
    with open(tmp_path / "compiler" / "build" / "render.py", "a", encoding="utf-8") as f:
        f.write("# edited\n")
    assert key.compiler_version.__wrapped__() != before


def test_catalog_root_is_the_contracts_lm_eval_tasks_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    from lmeval.compiler.tasks import lm_eval_catalog
    from lmeval.plans.usercode import funcref

    assert lm_eval_catalog.lm_eval_tasks_dir is funcref.lm_eval_tasks_dir  # one definition, the contract's
    assert not hasattr(lm_eval_catalog, "installed_tasks_dir")
    root = funcref.lm_eval_tasks_dir()
    assert root is not None and root.is_dir()  # lm-eval 0.4.13 is installed in the test venv
    monkeypatch.delenv("LMEVAL_NO_CATALOG", raising=False)
    assert lm_eval_catalog.catalog_root() == root
    monkeypatch.setenv("LMEVAL_NO_CATALOG", "1")
    assert lm_eval_catalog.catalog_root() is None


# tasks <- build <- encode <- cache <- the pipeline (config, pipeline, parallel, ...): each imports only those before it
ORDER = ["tasks", "build", "encode", "cache"]
PIPELINE = ["config", "pipeline", "parallel", "runconfig", "scorecheck"]


def test_subsystems_import_only_the_ones_below_them() -> None:
    bad = []
    for i, sub in enumerate(ORDER):
        later = {f"lmeval.compiler.{s}" for s in [*ORDER[i + 1 :], *PIPELINE]}
        files = sorted((COMPILER / sub).rglob("*.py"))
        assert files, sub
        for path in files:
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                mods = [a.name for a in node.names] if isinstance(node, ast.Import) else []
                if isinstance(node, ast.ImportFrom) and node.module:
                    mods = [node.module]
                bad += [f"{sub}/{path.name}: {m}" for m in mods if any(m == t or m.startswith(t + ".") for t in later)]
    assert bad == []
