"""Faces spelt once (#52): ``lmeval.common.lazyface`` derives a face's ``__all__`` (and, for a lazy face, its
``__getattr__``) from the face's own import lines, and no face spells a name three times (an import, ``__all__``
and a name -> module table)."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lmeval.common.lazyface import read_exports

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("common", "compiler", "contamination", "diff", "executor", "lmeval", "lock", "plans", "report", "scorer")


def spelt_thrice(source: str) -> list[str]:
    """Names a face spells three times: imported (at the top or under ``if TYPE_CHECKING:``), listed in a
    literal ``__all__`` and a key of a module-level dict literal (the lazy table)."""
    imported: set[str] = set()
    listed: set[str] = set()
    keys: set[str] = set()
    for node in ast.parse(source).body:
        inner = node.body if isinstance(node, ast.If) else [node]
        for sub in inner:
            if isinstance(sub, ast.ImportFrom):
                imported |= {a.asname or a.name for a in sub.names}
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.List | ast.Tuple):
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
                listed |= {e.value for e in node.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
        if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Dict):
            keys |= {k.value for k in node.value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
    return sorted(imported & listed & keys)


def _faces() -> list[Path]:
    return sorted(p for pkg in PRODUCT for p in (ROOT / pkg).rglob("__init__.py") if not p.is_symlink())


OLD_FACE = """
from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lmeval.x.a import Thing

__all__ = ["Thing"]

_WHERE = {"Thing": "lmeval.x.a"}


def __getattr__(name: str) -> Any:
    return getattr(import_module(_WHERE[name]), name)
"""


def test_planted_face_spelt_three_times_is_caught() -> None:
    assert spelt_thrice(OLD_FACE) == ["Thing"]
    assert spelt_thrice(OLD_FACE.replace('_WHERE = {"Thing": "lmeval.x.a"}', "")) == []


def test_no_face_spells_a_name_three_times() -> None:
    found = {str(p.relative_to(ROOT)): spelt_thrice(p.read_text(encoding="utf-8")) for p in _faces()}
    assert len(found) >= 20, sorted(found)  # the walk found the faces
    assert {f: names for f, names in found.items() if names} == {}


def test_faces_built_by_lazyface_list_no_name_twice() -> None:
    """A face that calls ``lazy_face``/``face_names`` has no ``__all__`` list and no table of its own."""
    users = [p for p in _faces() if "face_names(__name__)" in p.read_text() or "lazy_face(__name__)" in p.read_text()]
    assert len(users) >= 15
    for path in users:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        lists = [n for n in tree.body if isinstance(n, ast.Assign) and isinstance(n.value, ast.List | ast.Dict)]
        assert [ast.unparse(n)[:60] for n in lists if "__all__" in ast.unparse(n) or "_WHERE" in ast.unparse(n)] == []


def test_read_exports_reads_imports_as_written() -> None:
    source = textwrap.dedent(
        """
        from typing import TYPE_CHECKING
        from lmeval.p.a import kept as kept
        from lmeval.p.a import original as renamed
        from lmeval.p.a import private_use
        from .b import relative as relative
        from lmeval.p.a import hidden as _hidden

        if TYPE_CHECKING:
            from lmeval.p.c import Later as Later
            from lmeval.p.c import Annotation

        LIMIT = 3
        _PRIVATE = 4


        def helper() -> None: ...


        class Face: ...
        """
    )
    exports = read_exports(source, "lmeval.p")
    assert exports.eager == ["kept", "renamed", "relative", "LIMIT", "helper", "Face"]
    assert exports.lazy == {"Later": ("lmeval.p.c", "Later")}


def test_lazy_face_imports_on_first_use(tmp_path: Path) -> None:
    """A planted package: importing its face loads no module it names; the first lookup does, and keeps it."""
    pkg = tmp_path / "plantedface"
    pkg.mkdir()
    (pkg / "heavy.py").write_text("LOADED = True\nclass Big: ...\n")
    (pkg / "light.py").write_text("def small() -> int:\n    return 1\n")
    (pkg / "__init__.py").write_text(
        "from typing import TYPE_CHECKING\n\n"
        "from lmeval.common import lazy_face\n"
        "from plantedface.light import small as small\n\n"
        "if TYPE_CHECKING:\n"
        "    from plantedface.heavy import Big as Big\n"
        "    from plantedface.heavy import LOADED as loaded\n\n"
        "__all__, __getattr__, __dir__ = lazy_face(__name__)\n"
    )
    code = (
        "import sys, plantedface as f\n"
        "print(sorted(f.__all__), 'plantedface.heavy' in sys.modules)\n"
        "print(f.loaded, f.Big.__module__, 'plantedface.heavy' in sys.modules, 'Big' in vars(f), 'Big' in dir(f))\n"
        "try:\n"
        "    f.nothing\n"
        "except AttributeError as e:\n"
        "    print(e)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": f"{tmp_path}:{ROOT}"},
    ).stdout.splitlines()
    assert out == [
        "['Big', 'loaded', 'small'] False",
        "True plantedface.heavy True True True",
        "module 'plantedface' has no attribute 'nothing'",
    ]


@pytest.mark.parametrize("face", ["lmeval.compiler", "lmeval.compiler.tasks", "lmeval.common"])
def test_compiler_faces_stay_light(face: str) -> None:
    code = f"import sys, {face}\nprint(sorted(m for m in sys.modules if m.startswith('lmeval.')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    loaded = set(ast.literal_eval(out.stdout))
    assert loaded - {"lmeval", "lmeval.common", "lmeval.common.lazyface", "lmeval.compiler", face} == set()
