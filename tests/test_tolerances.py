"""No test compares floats with a literal tolerance: every one comes from ``tests/bounds.py`` (issue #51).

``literal_tolerances(source)`` finds, in a test file's syntax tree:

- a tolerance argument with a number in it: ``math.isclose(.., rel_tol=1e-6)``, ``pytest.approx(.., abs=1e-12)``,
  ``numpy.isclose/allclose/testing.assert_allclose(.., rtol=.., atol=..)`` (keywords, or the positional
  tolerance slots of ``approx`` and numpy's calls);
- a comparison of an ``abs(...)`` (or ``.abs()``) with a float literal: ``abs(a - b) <= 1e-4``;
- a float literal bound to a name that says tolerance (``*TOL*``): ``PPL_REL_TOL = 1e-6``;
- in the folders that compare engine numbers (``tests/e2e``, ``tests/executor``), ``approx``/``isclose`` with no
  tolerance at all (their defaults are literals too).

``EXCEPTIONS`` lists, with the reason, the few literals that are not bounds on a number computed two ways (a
statistical approximation's width, pixels of a rendered page); an entry no file uses any more fails too.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

TESTS = Path(__file__).resolve().parent
BOUNDS = TESTS / "bounds.py"

TOLERANCE_KEYWORDS = frozenset({"rel_tol", "abs_tol", "rel", "abs", "rtol", "atol"})
# callee name -> index of its first positional tolerance argument
CALLS = {"isclose": 2, "approx": 1, "allclose": 2, "assert_allclose": 2}
ENGINE_FOLDERS = ("e2e", "executor")

# (path relative to tests/, the literal tolerance as written) -> why it is not derived from tests/bounds.py
EXCEPTIONS: dict[tuple[str, str], str] = {
    ("report/test_browser.py", "abs=0.6"): "pixels: a bar's rendered height against its value, SVG rounding",
    ("report/test_browser.py", "abs=1.5"): "pixels: an interval box's rendered height, SVG rounding and stroke",
    ("scorer/test_compare_groups.py", "rel=0.05"): "a pooled stderr against its large-sample approximation",
    ("scorer/test_subsample_interval.py", "rel=0.05"): "an interval's width against its normal approximation",
    ("scorer/test_power.py", "abs=1e-300"): "p-values down to underflow: only the relative 1e-9 applies",
}


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    text: str  # the tolerance as written


def _has_number(node: ast.AST) -> bool:
    return any(
        isinstance(n, ast.Constant) and isinstance(n.value, (int, float)) and not isinstance(n.value, bool)
        for n in ast.walk(node)
    )


def _callee(node: ast.Call) -> str:
    f = node.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _is_abs(node: ast.AST) -> bool:
    """``abs(x)`` or ``x.abs()``."""
    return isinstance(node, ast.Call) and _callee(node) == "abs"


def literal_tolerances(source: str, path: str = "<test>", engine_numbers: bool = False) -> list[Finding]:
    """Every float comparison in ``source`` whose tolerance is written as a literal."""
    out: list[Finding] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and _callee(node) in CALLS:
            tols = [k for k in node.keywords if k.arg in TOLERANCE_KEYWORDS]
            for k in tols:
                if _has_number(k.value):
                    out.append(Finding(path, node.lineno, f"{k.arg}={ast.unparse(k.value)}"))
            for a in node.args[CALLS[_callee(node)] :]:
                if _has_number(a):
                    out.append(Finding(path, node.lineno, ast.unparse(a)))
            if engine_numbers and not tols and len(node.args) <= CALLS[_callee(node)]:
                out.append(Finding(path, node.lineno, f"{_callee(node)}() with its default tolerance"))
        elif isinstance(node, ast.Compare):  # abs(a - b) <= 1e-4 (or 1e-4 >= abs(a - b)): within a literal
            sides = [node.left, *node.comparators]
            for op, left, right in zip(node.ops, sides[:-1], sides[1:], strict=True):
                small, big = (left, right) if isinstance(op, (ast.Lt, ast.LtE)) else (right, left)
                if not isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)) or not _is_abs(small):
                    continue
                if isinstance(big, ast.Constant) and isinstance(big.value, float):
                    out.append(Finding(path, node.lineno, ast.unparse(node)))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            value = node.value
            if value is not None and any("TOL" in n.upper() for n in names):
                if any(isinstance(c, ast.Constant) and isinstance(c.value, float) for c in ast.walk(value)):
                    out.append(Finding(path, node.lineno, ast.unparse(node)))
    return sorted(out, key=lambda f: (f.line, f.text))


def scan(root: Path = TESTS) -> list[Finding]:
    """Every literal tolerance in the test files under ``root`` (``tests/bounds.py`` itself excepted)."""
    out = []
    for f in sorted(root.rglob("*.py")):
        if f == BOUNDS:
            continue
        rel = f.relative_to(root).as_posix()
        out += literal_tolerances(f.read_text(encoding="utf-8"), rel, rel.split("/")[0] in ENGINE_FOLDERS)
    return out


def test_every_tolerance_comes_from_the_bounds_module() -> None:
    findings = scan()
    unexcused = [f for f in findings if (f.path, f.text) not in EXCEPTIONS]
    assert unexcused == [], "\n".join(f"{f.path}:{f.line}: {f.text}" for f in unexcused)
    stale = set(EXCEPTIONS) - {(f.path, f.text) for f in findings}
    assert stale == set(), stale


PLANTED = """
import math
import pytest
from tests.bounds import VS_LM_EVAL, perplexity_tolerance

LL_TOL = 1e-4
OK_TOL = VS_LM_EVAL.atol

def test_x(a, b, lls):
    assert math.isclose(a, b, rel_tol=1e-6)
    assert a == pytest.approx(b, abs=2 * VS_LM_EVAL.atol)
    assert a == pytest.approx(b, 1e-3)
    assert abs(a - b) <= 1e-4
    assert math.isclose(a, b, rel_tol=perplexity_tolerance(VS_LM_EVAL, lls).rtol)
    assert a == pytest.approx(b, abs=VS_LM_EVAL.atol) and abs(a - b) <= OK_TOL
    assert a == pytest.approx(b)
"""


def test_planted_literal_tolerances_are_found() -> None:
    found = [(f.line, f.text) for f in literal_tolerances(PLANTED)]
    assert found == [
        (6, "LL_TOL = 0.0001"),
        (10, "rel_tol=1e-06"),
        (11, "abs=2 * VS_LM_EVAL.atol"),
        (12, "0.001"),
        (13, "abs(a - b) <= 0.0001"),
    ]
    engine = literal_tolerances(PLANTED, engine_numbers=True)
    assert [(f.line, f.text) for f in engine][-1] == (16, "approx() with its default tolerance")


def test_planted_file_fails_the_scan(tmp_path: Path) -> None:
    """The scan of a tree refuses a file with a literal tolerance, and names its path and line."""
    (tmp_path / "e2e").mkdir()
    (tmp_path / "e2e" / "test_planted.py").write_text(PLANTED)
    (tmp_path / "test_clean.py").write_text("from tests.bounds import SCORES\n\nassert SCORES.close(1.0, 1.0)\n")
    got = {(f.path, f.line) for f in scan(tmp_path)}
    assert ("e2e/test_planted.py", 10) in got and ("e2e/test_planted.py", 16) in got
    assert all(p == "e2e/test_planted.py" for p, _ in got)
