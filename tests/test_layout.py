"""The layout rules (#14): one ``lmeval.*`` namespace, packages in layers, stages that never import each other and
stay light to import, no import circles, no module over ~400 lines without a stated reason, none over 500.

The design card's top-level folders (compiler/, executor/, scorer/, plans/, conf/, ...) are linked into lmeval/
(``lmeval/compiler -> ../compiler``), so the checkout, an editable install and the wheel import the same names.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests import importgraph

ROOT = Path(__file__).resolve().parents[1]
STAGES = ("compiler", "executor", "scorer")
# what each package of the namespace may import of lmeval's own (itself always); the CLI (lmeval/) may import all
LAYERS: dict[str, set[str]] = {
    "common": set(),  # shared plumbing that is not contract: atomic writes, the tiny model, model lookup, conf/
    "plans": {"common"},  # the contract
    "compiler": {"plans", "common"},
    "executor": {"plans", "common"},
    "scorer": {"plans", "common", "contamination"},  # score --exclude reads a contamination report
    "diff": {"plans", "common", "scorer"},  # tools built on the contract; runs.py: the scorer's paired statistics
    "contamination": {"plans", "common"},  # a tool on the contract: a plan checked against a corpus
    "lock": {"plans", "common", "diff", "compiler"},
    "report": {"plans", "common", "scorer", "diff"},
}
OLD_TOP_LEVEL = {"plans", "compiler", "executor", "scorer", "report", "diff", "lock", "common", "contamination"}
LONG_MODULE = 400  # lines; a longer module says why in its first lines: "# size: <reason>"
MAX_MODULE = 500  # lines; no reason makes a module longer: one idea that outgrows this splits into a subpackage


def _py_files(pkg: str) -> list[Path]:
    return sorted((ROOT / pkg).rglob("*.py"))


def _imports(path: Path) -> list[tuple[str, bool]]:
    """(module, at_top) for every absolute import in the file; at_top is False inside a function (lazy)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    lazy: set[int] = set()
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            lazy.update(id(n) for n in ast.walk(fn))
    out: list[tuple[str, bool]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, id(node) not in lazy) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "lmeval":  # from lmeval import compiler
                out += [(f"lmeval.{a.name}", id(node) not in lazy) for a in node.names]
            else:
                out.append((node.module, id(node) not in lazy))
    return out


def _lmeval_packages_imported(pkg: str) -> set[str]:
    return {m.split(".")[1] for p in _py_files(pkg) for m, _ in _imports(p) if m.startswith("lmeval.")}


def test_the_staged_run_driver_is_a_library_under_the_cli() -> None:
    """lmeval/flow/ (the staged-run driver the CLI calls) imports the stages through their faces and never the
    CLI: a notebook or a Ray job drives it without a command line."""
    files = sorted((ROOT / "lmeval" / "flow").rglob("*.py"))
    assert files
    imported = {m for p in files for m, _ in _imports(p) if m.startswith("lmeval.")}
    assert not {m for m in imported if m == "lmeval.cli" or m.startswith("lmeval.cli.")}, imported


def test_the_namespace_links_every_folder() -> None:
    for pkg in [*LAYERS, "conf"]:
        link = ROOT / "lmeval" / pkg
        assert link.is_symlink() and link.resolve() == (ROOT / pkg).resolve(), pkg


@pytest.mark.parametrize("pkg", sorted(LAYERS))
def test_each_package_imports_only_its_layers(pkg: str) -> None:
    assert _lmeval_packages_imported(pkg) - {pkg} <= LAYERS[pkg]


def test_stages_never_import_each_other() -> None:
    for stage in STAGES:
        assert _lmeval_packages_imported(stage) & (set(STAGES) - {stage}) == set(), stage


def test_nothing_imports_the_old_top_level_names() -> None:
    """``import plans`` would load a second copy of a module (or the user's own plans/ output folder)."""
    bad = []
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT)
        if rel.parts[0] in {".venv", "lmeval.egg-info", "build", "dist"} or path.is_symlink():
            continue
        if rel.parts[0] == "lmeval" and len(rel.parts) > 1 and (ROOT / "lmeval" / rel.parts[1]).is_symlink():
            continue
        bad += [f"{rel}: {m}" for m, _ in _imports(path) if m.split(".")[0] in OLD_TOP_LEVEL]
    assert bad == [], bad


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["lmeval", *parts]) if parts[0] != "lmeval" else ".".join(parts)


def _module_graph() -> dict[str, importgraph.ModuleImports]:
    files = [p for pkg in LAYERS for p in _py_files(pkg)]
    files += [p for p in _product_files() if p.is_relative_to(ROOT / "lmeval")]  # the CLI, lmeval/cli/ too
    return importgraph.read_modules((_module_name(p), p) for p in files)


def test_no_import_circles_between_modules() -> None:
    """Imports (lazy ones too: a circle broken only by laziness is still a circle) form no cycle, read through
    the package faces: a face runs its eager imports, and a name taken from a face leads to its module (#52)."""
    assert importgraph.cycles(importgraph.edges(_module_graph())) == []


def test_no_import_circles_between_subsystems() -> None:
    """Subpackages depend one way: compiler.formats on compiler.tasks or the other way round, never both (#52)."""
    assert importgraph.cycles(importgraph.subsystem_graph(importgraph.edges(_module_graph()))) == []


def test_a_circle_through_a_face_is_found() -> None:
    """The planted circle of #52: regex_ops (which the filters use) importing the filters' face."""
    modules = _module_graph()
    planted = importgraph.parse_module(
        "lmeval.scorer.regex.ops",
        (ROOT / "scorer" / "regex" / "ops.py").read_text(encoding="utf-8")
        + "\nfrom lmeval.scorer.filters import apply\n",
        is_face=False,
    )
    found = importgraph.cycles(importgraph.edges({**modules, planted.name: planted}))
    assert any("lmeval.scorer.regex.ops" in c and "lmeval.scorer.filters" in c for c in found), found


def _product_files() -> list[Path]:
    return [
        path
        for pkg in [*LAYERS, "lmeval"]
        for path in _py_files(pkg)
        if not ((ROOT / "lmeval" / path.parent.name).is_symlink() and path.parent.parent.name == "lmeval")
    ]


def test_long_modules_say_why() -> None:
    long = []
    for path in _product_files():
        text = path.read_text(encoding="utf-8")
        n = text.count("\n")
        if n > LONG_MODULE and not re.search(r"^# size: \S.*", "\n".join(text.splitlines()[:40]), re.M):
            long.append(f"{path.relative_to(ROOT)} ({n} lines)")
    assert long == [], long


def test_no_module_over_the_hard_limit() -> None:
    """The 400-line mark is a warning sign a module may pass with a stated reason; 500 is the limit (#52)."""
    sizes = {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8").count("\n") for p in _product_files()}
    assert len(sizes) > 250 and "plans/plan/records.py" in sizes  # the walk reads every package, wings included
    assert {f: n for f, n in sizes.items() if n > MAX_MODULE} == {}


LONG_FUNCTION = 80  # lines; a longer function says why on its def line: "# long: <reason>"


def _long_functions(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    out = []
    for node in ast.walk(ast.parse("\n".join(lines))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            n = (node.end_lineno or node.lineno) - node.lineno + 1
            head = " ".join(lines[node.lineno - 1 : (node.body[0].lineno if node.body else node.lineno)])
            if n > LONG_FUNCTION and not re.search(r"# long: \S", head):
                out.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({n} lines)")
    return out


def test_long_functions_say_why() -> None:
    long = []
    for path in [p for pkg in [*LAYERS, "lmeval"] for p in _py_files(pkg)]:
        if path.parent.parent.name == "lmeval" and (ROOT / "lmeval" / path.parent.name).is_symlink():
            continue
        long += _long_functions(path)
    assert long == [], long


def test_the_scored_run_files_are_named_only_by_their_contract() -> None:
    """results.json and samples.parquet are spelt (as a string, not in prose) only in plans/scored/files.py: every
    writer and reader goes through it (#27)."""
    names = {"results.json", "samples.parquet"}
    spelt = []
    for path in [p for pkg in [*LAYERS, "lmeval"] for p in _py_files(pkg)]:
        rel = path.relative_to(ROOT).as_posix()
        if (
            rel == "plans/scored/files.py"
            or (ROOT / "lmeval" / path.parent.name).is_symlink()
            and rel.startswith("lmeval/")
        ):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in names:
                spelt.append(f"{rel}:{node.lineno} {node.value}")
    assert spelt == [], spelt


def test_cli_package_holds_only_the_command_line() -> None:
    """lmeval/ (and lmeval/cli/) is argument parsing and printing: no dataclasses, no classes of its own; the
    library it drives stages with is lmeval/flow/ (its own test above)."""
    cli_files = [
        p
        for p in _product_files()
        if p.is_relative_to(ROOT / "lmeval") and not p.is_relative_to(ROOT / "lmeval" / "flow")
    ]
    assert ROOT / "lmeval" / "cli.py" in cli_files or ROOT / "lmeval" / "cli" / "__init__.py" in cli_files
    for path in cli_files:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        classes = [n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
        assert classes == [], f"{path.name}: {classes}"


@pytest.mark.parametrize(
    ("pkg", "forbidden"),
    [
        ("executor", ["jinja2", "datasets", "hydra"]),
        ("compiler", ["torch", "vllm"]),
        ("scorer", ["torch", "vllm", "jinja2", "hydra", "datasets"]),
        ("plans", ["torch", "vllm", "jinja2", "hydra", "datasets", "transformers"]),
        ("common", ["torch", "vllm", "jinja2", "hydra", "datasets", "transformers"]),
        ("diff", ["torch", "vllm", "jinja2", "hydra", "datasets", "transformers"]),
        ("contamination", ["torch", "vllm", "jinja2", "hydra", "datasets", "transformers", "ray"]),
        (
            "report",
            [
                "torch",
                "vllm",
                "jinja2",
                "hydra",
                "datasets",
                "transformers",
                "lmeval.compiler",
                "wandb",
                "trackio",
                "mlflow",
            ],
        ),
    ],
)
def test_import_does_not_pull_heavy_modules(pkg: str, forbidden: list[str], tmp_path: Path) -> None:
    """Not just the package's ``__init__``: every module of the package (the compile, execute and score paths,
    each backend module) is imported, from a folder that holds lmeval's own output folders (plans/, results/);
    the heavy libraries may only be imported lazily, inside functions."""
    code = (
        f"import importlib, pkgutil, sys, lmeval.{pkg} as p\n"
        f"mods = [m.name for m in pkgutil.walk_packages(p.__path__, 'lmeval.{pkg}.')]\n"
        "for m in mods:\n"
        "    importlib.import_module(m)\n"
        f"bad = [m for m in {forbidden!r} if m in sys.modules]\n"
        "print(len(mods), ','.join(bad))\n"
    )
    for out_dir in ("plans", "results", "compiler", "scorer"):  # what `lmeval run` writes, and lookalikes
        (tmp_path / out_dir).mkdir()
        (tmp_path / out_dir / "__init__.py").write_text("raise ImportError('the working folder was imported')\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True)
    n, bad = out.stdout.split(" ", 1)
    assert int(n) >= 2, out.stdout  # the walk really found the package's modules
    assert bad.strip() == ""


# Subsystems are subpackages with a public face (their __init__), not file-name prefixes among flat modules.
SUBSYSTEMS = {
    "executor/pool": "lmeval.executor.pool",
    "plans/plan": "lmeval.plans.plan",
    "plans/results": "lmeval.plans.results",
    "plans/scored": "lmeval.plans.scored",
    "plans/usercode": "lmeval.plans.usercode",
    "plans/vocab": "lmeval.plans.vocab",
    "scorer/groups": "lmeval.scorer.groups",
    "scorer/regex": "lmeval.scorer.regex",
    "scorer/sandbox": "lmeval.scorer.sandbox",
    "scorer/statistics": "lmeval.scorer.statistics",
}


@pytest.mark.parametrize("room", sorted(SUBSYSTEMS))
def test_subsystems_are_subpackages_used_through_their_face(room: str) -> None:
    face = SUBSYSTEMS[room]
    assert (ROOT / room / "__init__.py").is_file(), room
    stage = room.split("/")[0]
    flat_prefix = room.split("/")[1] + "_"
    assert [p.name for p in (ROOT / stage).glob(f"{flat_prefix}*.py")] == [], "subsystem spelt as a file prefix"
    inner = []
    for pkg in [*LAYERS, "lmeval"]:
        for path in _py_files(pkg):
            if path.is_relative_to(ROOT / room) or path.is_symlink():
                continue
            inner += [f"{path.relative_to(ROOT)}: {m}" for m, _ in _imports(path) if m.startswith(face + ".")]
    assert inner == [], f"import {face} itself, not its inner modules: {inner}"


def test_the_sandbox_launcher_is_stdlib_only() -> None:
    """It runs as ``python -I -S launcher.py`` inside the sandbox: nothing of lmeval, nothing installed."""
    mods = {m.split(".")[0] for m, _ in _imports(ROOT / "scorer" / "sandbox" / "launcher.py")}
    assert mods and mods <= set(sys.stdlib_module_names), mods - set(sys.stdlib_module_names)


# The face rule (#37): a product module M may import ``lmeval.X.Y.Z`` only when the package ``lmeval.X.Y``
# contains M (a sibling module, or the face of a subpackage one level below M's package); otherwise it imports
# the face, the outermost package of the target that does not contain M. Tests are exempt.
def _product_files() -> list[Path]:
    files = [p for pkg in LAYERS for p in _py_files(pkg)]
    # the CLI's own files (lmeval/*.py, lmeval/cli/), not the linked folders (lmeval/compiler -> ../compiler)
    for dirpath, dirs, names in os.walk(ROOT / "lmeval"):
        dirs[:] = [d for d in dirs if not (Path(dirpath) / d).is_symlink()]
        files += [Path(dirpath) / n for n in names if n.endswith(".py")]
    return sorted(files)


def _importer_name(path: Path) -> str:
    """A package's ``__init__`` keeps its own name plus ``.__init__``: the package contains it."""
    rel = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(["lmeval", *(rel[1:] if rel[0] == "lmeval" else rel)])


def _is_module(dotted: str) -> bool:
    base = ROOT.joinpath("lmeval", *dotted.split(".")[1:])
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _imported_modules(source: str) -> list[str]:
    """Every lmeval module an import names, at any depth (lazy and TYPE_CHECKING ones too);
    ``from lmeval.plans import records`` names the module ``lmeval.plans.plan.records``."""
    out: list[str] = []
    for n in ast.walk(ast.parse(source)):
        if isinstance(n, ast.Import):
            out += [a.name for a in n.names if a.name.startswith("lmeval.")]
        elif isinstance(n, ast.ImportFrom) and n.module and n.level == 0 and f"{n.module}.".startswith("lmeval."):
            subs = [f"{n.module}.{a.name}" for a in n.names if _is_module(f"{n.module}.{a.name}")]
            out += subs if len(subs) == len(n.names) else [n.module, *subs]
    return out


def past_face(importer: str, target: str) -> bool:
    """True when ``importer`` (dotted, ``pkg.__init__`` for a face) may not import ``target`` by that name."""
    return not importer.startswith(target.rpartition(".")[0] + ".")


def _face_violations() -> set[str]:
    return {
        f"{_importer_name(p)}: {t}"
        for p in _product_files()
        for t in _imported_modules(p.read_text(encoding="utf-8"))
        if past_face(_importer_name(p), t)
    }


def test_no_import_past_a_package_face() -> None:
    found = sorted(_face_violations())
    assert found == [], f"import the package's face (its __init__), not its inner module: {found}"


@pytest.mark.parametrize(
    ("importer", "target", "refused"),
    [
        ("lmeval.compiler.build.render", "lmeval.compiler.build.seeds", False),  # a sibling
        ("lmeval.compiler.build.render", "lmeval.compiler.tasks", False),  # a face one level below the parent
        ("lmeval.compiler.build.render", "lmeval.plans", False),  # another package's face
        ("lmeval.compiler.build.render", "lmeval.compiler.tasks.select", True),  # past the tasks face
        ("lmeval.compiler.build.render", "lmeval.plans.plan.records", True),  # past the plans face
        ("lmeval.plans.plan.__init__", "lmeval.plans.plan.records", False),  # a face re-exports its own modules
        ("lmeval.cli.score", "lmeval.scorer.score", True),  # the CLI too
        ("lmeval.cli.__init__", "lmeval.cli.score", False),
    ],
)
def test_the_face_rule_on_synthetic_imports(importer: str, target: str, refused: bool) -> None:
    assert past_face(importer, target) is refused


def test_a_planted_violation_is_refused() -> None:
    """A module written into report/ that reaches into plans' records is found; its face import is not."""
    path = ROOT / "report" / "_planted_face_violation.py"
    planted = "from lmeval.plans.plan.records import Plan\nfrom lmeval.plans import read_plan\n"
    path.write_text(planted, encoding="utf-8")
    try:
        found = {v for v in _face_violations() if v.startswith("lmeval.report._planted_face_violation:")}
    finally:
        path.unlink()
    assert found == {"lmeval.report._planted_face_violation: lmeval.plans.plan.records"}


# Acceptance 4 of #37: one name per idea. The protocols are the documented exception: the CLI's commands (each
# command module's ``register`` and ``run``; the entry points' ``main``) and the shipped task library's loaders
# (``compiler/tasklib/<task>.py``'s ``dataset``, named by the task's ``custom_dataset: !function``).
PROTOCOL_NAMES = {"register", "run", "main", "dataset"}


def _defined_names(tree: ast.Module) -> list[str]:
    """Public names a module defines at top level (def, class, assignment), imports (re-exports) aside."""
    out: list[str] = []
    for n in tree.body:
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.append(n.name)
        elif isinstance(n, ast.Assign):
            out += [t.id for t in n.targets if isinstance(t, ast.Name)]
        elif isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name):
            out.append(n.target.id)
    return [x for x in out if not x.startswith("_")]


def duplicate_definitions(modules: dict[str, ast.Module]) -> dict[str, list[str]]:
    """Public name -> the modules defining it, where more than one does. A face (``pkg.__init__``) defining a
    name that a module of its own package defines is a (lazy) re-export, not a second definition."""
    where: dict[str, set[str]] = {}
    for mod, tree in modules.items():
        for name in _defined_names(tree):
            where.setdefault(name, set()).add(mod)
    out = {}
    for name, mods in where.items():
        faces = {m for m in mods if m.endswith(".__init__")}
        inner = {f for f in faces if any(o != f and o.startswith(f.removesuffix("__init__")) for o in mods)}
        if len(mods - inner) > 1:
            out[name] = sorted(mods - inner)
    return out


def _product_modules() -> dict[str, ast.Module]:
    return {_importer_name(p): ast.parse(p.read_text(encoding="utf-8")) for p in _product_files()}


def test_one_name_per_idea() -> None:
    dups = duplicate_definitions(_product_modules())
    found = {k: v for k, v in dups.items() if k not in PROTOCOL_NAMES}
    assert found == {}, f"one public name, one definition (rename one, or import the other): {found}"


def test_a_duplicate_definition_is_found_and_a_re_export_is_not() -> None:
    mods = {
        "lmeval.plans.a": ast.parse("def read_thing(): ...\nX = 1\n"),
        "lmeval.report.b": ast.parse("from lmeval.plans import read_thing\nclass X: ...\n"),
        "lmeval.report.__init__": ast.parse("def build(): ...\n"),
        "lmeval.report.c": ast.parse("def build(): ...\n_private = 2\n"),
        "lmeval.diff.d": ast.parse("_private = 3\n"),
    }
    assert duplicate_definitions(mods) == {"X": ["lmeval.plans.a", "lmeval.report.b"]}


def _first_docstring_lines(folder: Path) -> dict[str, list[str]]:
    seen: dict[str, list[str]] = {}
    for path in sorted(folder.glob("*.py")):
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
        if doc:
            seen.setdefault(doc.strip().splitlines()[0], []).append(path.name)
    return {line: names for line, names in seen.items() if len(names) > 1}


def test_no_two_files_in_one_folder_share_a_docstrings_first_line(tmp_path: Path) -> None:
    folders = {p.parent for p in _product_files()}
    shared = {str(f.relative_to(ROOT)): d for f in sorted(folders) if (d := _first_docstring_lines(f))}
    assert shared == {}, shared
    (tmp_path / "a.py").write_text('"""Which tasks a compile covers."""\n', encoding="utf-8")
    (tmp_path / "b.py").write_text('"""Which tasks a compile covers.\n\nMore."""\n', encoding="utf-8")
    assert _first_docstring_lines(tmp_path) == {"Which tasks a compile covers.": ["a.py", "b.py"]}
