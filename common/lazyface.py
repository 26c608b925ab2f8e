"""A package face spelt once: each public name is written in one import line, ``from .mod import name as name``.

A face (a package's ``__init__``) exports what it imports in the explicit re-export form ``name as name`` (the
form mypy and ruff read as a re-export), and its public top-level functions and classes. ``lazy_face(__name__)``
reads the face's own source once and returns its ``__all__``, a PEP 562 ``__getattr__`` and ``__dir__``:

- imports at the top level are eager: the name is bound when the face is imported;
- imports under ``if TYPE_CHECKING:`` are lazy: mypy types them from that line, and at run time the name is
  imported from its module on first use (and kept), so importing the face loads nothing it names.

So a face lists no name a second time: no ``__all__`` list, no name -> module table. Used where laziness was
measured to matter (the compiler's faces keep ``import lmeval.compiler`` from loading Hydra, jinja2 and the
tokenizers, about 350 ms) and, for ``__all__`` alone, by the eager faces. Stdlib only, so every stage may use it.
"""

from __future__ import annotations

import _ast as ast  # the node classes; `import ast` itself (about 5 ms) is not needed to parse
import sys
from collections.abc import Callable
from importlib import import_module
from importlib.util import resolve_name
from typing import Any, NamedTuple


class Exports(NamedTuple):
    """What a face's source exports: eager names in order, and lazy name -> (module, attribute)."""

    eager: list[str]
    lazy: dict[str, tuple[str, str]]


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _reexports(node: ast.ImportFrom, package: str) -> list[tuple[str, str, str]]:
    """(public name, module, attribute) for each ``attr as name`` of one import line (a plain import is private)."""
    module = resolve_name("." * node.level + (node.module or ""), package) if node.level else node.module or ""
    return [(a.asname, module, a.name) for a in node.names if a.asname and not a.asname.startswith("_")]


def read_exports(source: str, package: str) -> Exports:
    """The names a face's source exports (see the module docstring); ``package`` resolves relative imports."""
    eager: list[str] = []
    lazy: dict[str, tuple[str, str]] = {}
    tree = compile(source, package, "exec", ast.PyCF_ONLY_AST)
    assert isinstance(tree, ast.Module)
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            eager += [name for name, _, _ in _reexports(node, package)]
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            for inner in node.body:
                if isinstance(inner, ast.ImportFrom):
                    lazy.update({name: (module, attr) for name, module, attr in _reexports(inner, package)})
        elif isinstance(node, ast.FunctionDef | ast.ClassDef) and not node.name.startswith("_"):
            eager.append(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            eager += [t.id for t in targets if isinstance(t, ast.Name) and not t.id.startswith("_")]
    return Exports(eager, lazy)


def _source(name: str) -> str:
    path = getattr(sys.modules[name], "__file__", None)
    if not path or not path.endswith(".py"):
        raise ImportError(f"{name}: a face built by lmeval.common.lazyface needs its source (.py) installed")
    with open(path, encoding="utf-8") as f:
        return f.read()


def lazy_face(name: str) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """``__all__, __getattr__, __dir__`` for the face ``name`` (call it with ``__name__`` at its end)."""
    exports = read_exports(_source(name), name)
    public = [*exports.eager, *exports.lazy]
    namespace = vars(sys.modules[name])

    def __getattr__(attr: str) -> Any:
        where = exports.lazy.get(attr)
        if where is None:
            raise AttributeError(f"module {name!r} has no attribute {attr!r}")
        value = getattr(import_module(where[0]), where[1])
        namespace[attr] = value  # the next lookup finds it without this function
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *public})

    return public, __getattr__, __dir__


def face_names(name: str) -> list[str]:
    """``__all__`` of the eager face ``name``: its ``name as name`` imports and public definitions."""
    exports = read_exports(_source(name), name)
    return [*exports.eager, *exports.lazy]
