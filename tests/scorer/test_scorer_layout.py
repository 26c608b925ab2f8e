"""The scorer's packages by meaning (#37): each subpackage has a face (a docstring and ``__all__``), and no two
files of one package (recursively) open their docstring with the same line."""

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
    assert {"scorer", "scorer/metrics", "scorer/filters", "scorer/usercode", "scorer/sandbox"} <= names, names
    assert not (ROOT / "scorer" / "contamination").exists() and not (ROOT / "scorer" / "compare.py").exists()


def test_every_face_has_a_docstring_and_all() -> None:
    for init in PACKAGES:
        tree = ast.parse(init.read_text(encoding="utf-8"))
        assert ast.get_docstring(tree), init
        names = {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
        assert "__all__" in names, init


def test_no_two_files_of_a_package_open_with_the_same_docstring_line() -> None:
    for init in PACKAGES:
        seen: dict[str, Path] = {}
        for f in sorted(init.parent.rglob("*.py")):
            line = _first_line(f)
            assert line, f"{f.relative_to(ROOT)}: no docstring"
            assert line not in seen, f"{f.relative_to(ROOT)} and {seen[line].relative_to(ROOT)}: {line!r}"
            seen[line] = f
