"""The stage boundary: compiler, executor and scorer share only plans/, and stay light to import. Tools built
on the contract (report/) may import plans/ and scorer/, and no stage imports them."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STAGES = ("compiler", "executor", "scorer")
TOOLS = ("report",)


def _imported_top_levels(pkg: str) -> set[str]:
    names: set[str] = set()
    for path in (ROOT / pkg).rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("stage", STAGES)
def test_stages_never_import_each_other(stage: str) -> None:
    others = set(STAGES) - {stage} | {"lmeval"} | set(TOOLS)
    assert _imported_top_levels(stage) & others == set()


def test_plans_imports_no_stage() -> None:
    assert _imported_top_levels("plans") & (set(STAGES) | {"lmeval"} | set(TOOLS)) == set()


def test_report_imports_only_the_contract_and_the_scorer() -> None:
    assert _imported_top_levels("report") & {"compiler", "executor", "lmeval"} == set()
    assert {"plans", "scorer"} <= _imported_top_levels("report")


@pytest.mark.parametrize(
    ("stage", "forbidden"),
    [
        ("executor", ["jinja2", "datasets", "hydra"]),
        ("compiler", ["torch", "vllm"]),
        ("scorer", ["torch", "vllm", "jinja2", "hydra", "datasets"]),
        ("plans", ["torch", "vllm", "jinja2", "hydra", "datasets", "transformers"]),
        ("report", ["torch", "vllm", "jinja2", "hydra", "datasets", "transformers", "compiler", "executor"]),
    ],
)
def test_import_does_not_pull_heavy_modules(stage: str, forbidden: list[str]) -> None:
    """Not just the package's ``__init__``: every module of the stage (the compile, execute and score paths,
    each backend module) is imported; the heavy libraries may only be imported lazily, inside functions."""
    code = (
        f"import importlib, pkgutil, sys, {stage}\n"
        f"mods = [m.name for m in pkgutil.walk_packages({stage}.__path__, '{stage}.')]\n"
        "for m in mods:\n"
        "    importlib.import_module(m)\n"
        f"bad = [m for m in {forbidden!r} if m in sys.modules]\n"
        "print(len(mods), ','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    n, bad = out.stdout.split(" ", 1)
    assert int(n) >= 10, out.stdout  # the walk really found the stage's modules
    assert bad.strip() == ""
