"""The scorer's packages by meaning (#37, #52): each subpackage has a face (a docstring, each name it offers spelt
once), and no two files of one package (recursively) open their docstring with the same line."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = [p for p in sorted((ROOT / "scorer").rglob("__init__.py"))]


def _first_line(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    return doc.strip().splitlines()[0] if doc.strip() else ""


def test_the_scorer_is_cut_into_its_subsystems() -> None:
    names = {p.parent.relative_to(ROOT).as_posix() for p in PACKAGES}
    wings = {"metrics", "filters", "usercode", "sandbox", "groups", "statistics", "regex"}
    assert {"scorer", *(f"scorer/{w}" for w in wings)} <= names, names
    assert not (ROOT / "scorer" / "contamination").exists() and not (ROOT / "scorer" / "compare.py").exists()


def _offered_names(tree: ast.Module) -> tuple[list[str], list[str]]:
    """(names in ``__all__``, names re-exported as ``from x import name as name``) of a face."""
    listed: list[str] = []
    for n in tree.body:
        if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets):
            listed += [e.value for e in getattr(n.value, "elts", []) if isinstance(e, ast.Constant)]
    re_exported = [a.name for n in tree.body if isinstance(n, ast.ImportFrom) for a in n.names if a.asname == a.name]
    return listed, re_exported


def test_every_face_has_a_docstring_and_spells_each_name_once() -> None:
    """A face offers its names in one place (#52): ``__all__`` or explicit ``name as name`` re-exports, never
    both for one name, and no ``TYPE_CHECKING`` copy of its imports with a lazy table beside it."""
    for init in PACKAGES:
        tree = ast.parse(init.read_text(encoding="utf-8"))
        assert ast.get_docstring(tree), init
        listed, re_exported = _offered_names(tree)
        assert listed or re_exported, f"{init}: offers no names"
        assert not set(listed) & set(re_exported), f"{init}: spelt twice: {set(listed) & set(re_exported)}"
        assert len(listed) == len(set(listed)), init
        assert not any(isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test) for n in tree.body), init


def test_no_two_files_of_a_package_open_with_the_same_docstring_line() -> None:
    for init in PACKAGES:
        seen: dict[str, Path] = {}
        for f in sorted(init.parent.rglob("*.py")):
            line = _first_line(f)
            assert line, f"{f.relative_to(ROOT)}: no docstring"
            assert line not in seen, f"{f.relative_to(ROOT)} and {seen[line].relative_to(ROOT)}: {line!r}"
            seen[line] = f
