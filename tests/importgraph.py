"""lmeval's import graph read *through* package faces (#52), for the circle rule of tests/test_layout.py.

A face (a package ``__init__``) is a node of its own: importing it runs its module-level imports, so it has an
edge to each module it imports eagerly. ``from lmeval.pkg import name`` has an edge to the face and one to the
module that defines ``name`` (found through the face's eager imports, its ``TYPE_CHECKING`` block or its lazy
``_LAZY`` table, face after face); ``import lmeval.pkg.mod`` and ``from lmeval.pkg import mod`` go to the module.
Imports inside functions count too (a circle broken only by laziness is still a circle), imports under
``if TYPE_CHECKING:`` do not (they never run). A face's lazy table is no edge of the face: a lazy name costs an
import only when some module asks for it, and that module has the edge.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class ModuleImports:
    """What one module imports: (target module, names taken from it or () for a plain import)."""

    name: str
    is_face: bool
    imports: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)
    # for a face: name -> the module it is imported from (eager, TYPE_CHECKING or lazy table)
    exports: dict[str, str] = field(default_factory=dict)
    eager: set[str] = field(default_factory=set)  # modules a face imports when it runs


def _type_checking_nodes(tree: ast.Module) -> set[int]:
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            out.update(id(n) for b in node.body for n in ast.walk(b))
    return out


def _function_nodes(tree: ast.Module) -> set[int]:
    out: set[int] = set()
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            out.update(id(n) for n in ast.walk(fn))
    return out


def _lazy_table(tree: ast.Module) -> dict[str, str]:
    """A face's ``_LAZY = {"name": "lmeval.x.y", ...}`` (or any module-level dict of str -> lmeval module)."""
    out: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Dict):
            for k, v in zip(node.value.keys, node.value.values, strict=True):
                if isinstance(k, ast.Constant) and isinstance(v, ast.Constant) and isinstance(v.value, str):
                    if v.value.startswith("lmeval.") and isinstance(k.value, str):
                        out[k.value] = v.value
    return out


def parse_module(name: str, source: str, is_face: bool) -> ModuleImports:
    tree = ast.parse(source)
    typing_only = _type_checking_nodes(tree)
    in_function = _function_nodes(tree)
    mod = ModuleImports(name, is_face)
    package = name if is_face else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [(a.name, ()) for a in node.names if a.name.startswith("lmeval")]
        elif isinstance(node, ast.ImportFrom) and node.module:
            module = node.module
            if node.level:  # relative: from .x import y
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, node.module])
            if not module.startswith("lmeval"):
                continue
            targets = [(module, tuple(a.name for a in node.names))]
            if is_face:
                mod.exports.update({a.asname or a.name: module for a in node.names})
        else:
            continue
        if id(node) in typing_only:
            continue
        mod.imports += targets
        if is_face and id(node) not in in_function:
            mod.eager.update(t for t, _ in targets)
    if is_face:
        mod.exports.update(_lazy_table(tree))
    return mod


def _defining_module(modules: dict[str, ModuleImports], target: str, name: str, depth: int = 0) -> str | None:
    """The module that defines ``name`` as taken from ``target`` (a face is looked through, face after face)."""
    if f"{target}.{name}" in modules:  # from lmeval.pkg import submodule
        return f"{target}.{name}"
    mod = modules.get(target)
    if mod is None or not mod.is_face or depth > 20:
        return target if mod is not None else None
    source = mod.exports.get(name)
    if source is None or source not in modules:
        return None  # defined in the face itself
    return _defining_module(modules, source, name, depth + 1) if modules[source].is_face else source


def _known(modules: dict[str, ModuleImports], dotted: str) -> str | None:
    while dotted and dotted not in modules:
        dotted = dotted.rpartition(".")[0]
    return dotted or None


def _faces_run(modules: dict[str, ModuleImports], importer: str, target: str) -> set[str]:
    """The packages whose faces an import of ``target`` runs: each package on its path that is not already a
    package of the importer (those are initialised, or initialising, before the importer runs)."""
    parts = target.split(".")
    packages = {".".join(parts[:i]) for i in range(2, len(parts) + 1)}
    own = {importer.rsplit(".", i)[0] for i in range(importer.count("."))} | {importer}
    return {p for p in packages - own if p in modules and modules[p].is_face}


def edges(modules: dict[str, ModuleImports]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {n: set() for n in modules}
    for mod in modules.values():
        for target, names in mod.imports:
            known = _known(modules, target)
            if known is None:
                continue
            deps = graph[mod.name]
            deps |= _faces_run(modules, mod.name, known)
            submodules = [f"{known}.{n}" for n in names if f"{known}.{n}" in modules]
            deps.update(submodules)
            if not names or len(submodules) < len(names):  # a plain import, or a name looked up in the module
                deps.add(known)
            for n in names:
                defining = _defining_module(modules, known, n)
                if defining is not None:
                    deps.add(defining)
        if mod.is_face:
            graph[mod.name] |= {k for t in mod.eager if (k := _known(modules, t))}
    for n, deps in graph.items():
        deps.discard(n)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per back edge of a depth-first walk (empty: no circle)."""
    state: dict[str, int] = {}
    found: list[list[str]] = []

    def visit(n: str, stack: list[str]) -> None:
        state[n] = 1
        for d in sorted(graph.get(n, ())):
            if state.get(d) == 1:
                found.append(stack[stack.index(d) :] + [d])
            elif d not in state:
                visit(d, [*stack, d])
        state[n] = 2

    for n in sorted(graph):
        if n not in state:
            visit(n, [n])
    return found


def read_modules(files: Iterable[tuple[str, Path]]) -> dict[str, ModuleImports]:
    """(dotted name, path) of every module -> its imports; a path named __init__.py is a face."""
    return {
        name: parse_module(name, path.read_text(encoding="utf-8"), path.name == "__init__.py") for name, path in files
    }


def subsystem_graph(graph: dict[str, set[str]], depth: int = 3) -> dict[str, set[str]]:
    """The module graph seen a level up: each module as its subsystem (``lmeval.compiler.tasks.select`` ->
    ``lmeval.compiler.tasks``; a top-level module of a stage stays itself), edges inside one subsystem dropped."""

    def unit(name: str) -> str:
        return ".".join(name.split(".")[:depth])

    out: dict[str, set[str]] = {}
    for name, deps in graph.items():
        out.setdefault(unit(name), set()).update(u for d in deps if (u := unit(d)) != unit(name))
    return out
