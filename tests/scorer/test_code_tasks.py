"""Code tasks and scoring hooks loaded at score time: humaneval/mbpp (conf/task and lm-eval's own YAMLs)
scored in lmeval's sandbox; lm-eval's ifeval compiles without its scorer's packages."""

from __future__ import annotations

import json
import sys
from math import comb
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from lmeval import compiler
from lmeval.cli import main
from lmeval.plans import read_plan
from lmeval.plans.results.manifest import RunManifest, polars_schema, write_manifest
from lmeval.scorer.score import score_run
from tests.bounds import ARITHMETIC

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"


def _results(plan_path: Path, out: Path, answer: Any) -> Path:
    """A results dir for ``plan_path`` whose responses are ``answer(doc)`` (a string)."""
    plan = read_plan(plan_path)
    docs = {d.doc_id: d.doc for d in plan.docs}
    rows = []
    for inst in plan.instances:
        text = answer(docs[inst.doc_id])
        rows.append({
            "instance_id": inst.instance_id, "task": inst.task, "doc_id": inst.doc_id, "idx": inst.idx,
            "request_type": inst.request_type, "request_hash": inst.request_hash, "loglikelihood": None,
            "is_greedy": None, "n_continuation_tokens": 1, "response": text, "responses": [text],
            "finish_reason": "stop",
        })  # fmt: skip
    out.mkdir()
    pl.DataFrame(rows, schema=polars_schema()).write_parquet(out / "part-000000.parquet")
    write_manifest(out, RunManifest(plan_hash=plan.header.plan_hash, plan_path=str(plan_path),
                                    model={"name": "x"}, backend="fake"))  # fmt: skip
    return out


def _compile(tmp_path: Path, name: str, *extra: str) -> Path:
    ov = [f"run.data_dir={DATA}", *extra]
    ov.insert(0, f"run.tasks=[{name}]" if name.startswith("lm_eval:") else f"+task={name}")
    return compiler.compile_to_file(ov, out=str(tmp_path / f"{name.replace(':', '_')}.msgpack"))


@pytest.fixture(autouse=True)
def _patient_sandbox(monkeypatch: pytest.MonkeyPatch) -> None:
    """code_eval's 3 s wall clock per program flakes on a loaded 2-core CI machine; the verdicts tested here
    do not depend on it."""
    monkeypatch.setattr("lmeval.scorer.usercode.hooks.TIMEOUT_S", 30.0)


@pytest.mark.parametrize(("name", "limit"), [("humaneval", None), ("lm_eval:humaneval", 12)])
def test_humaneval_canonical_pass_and_a_broken_one_fails(name: str, limit: int | None, tmp_path: Path) -> None:
    """The canonical solutions pass in the sandbox (all 164 through conf/task; lm-eval's own YAML on a
    subset), and one broken completion fails: pass@1 = (n - 1) / n."""
    plan = _compile(tmp_path, name, *([f"run.limit={limit}"] if limit else []))
    broken = "HumanEval/0"
    rdir = _results(plan, tmp_path / "r", lambda d: "    return None\n" if d["task_id"] == broken
                    else d["canonical_solution"])  # fmt: skip
    out = score_run(str(rdir), console=False)  # built-in hooks: no --trust-code needed
    n = limit or 164
    assert len(read_plan(plan).docs) == n
    res = out.results["results"]["humaneval"]
    assert res["pass@1,create_test"] == pytest.approx((n - 1) / n, abs=ARITHMETIC.atol)


def test_mbpp_reference_code_passes_and_wrong_code_fails(tmp_path: Path) -> None:
    plan = _compile(tmp_path, "lm_eval:mbpp", "run.limit=12")
    bad = {11, 12}

    def answer(d: dict[str, Any]) -> str:  # mbpp's YAML prompts end in [BEGIN]; the model writes code
        return "def f():\n    pass\n" if d["task_id"] in bad else d["code"]

    rdir = _results(plan, tmp_path / "r", answer)
    res = score_run(str(rdir), console=False).results["results"]["mbpp"]
    n_bad = sum(1 for d in read_plan(plan).docs if d.doc["task_id"] in bad)
    assert n_bad == 2
    assert res["pass_at_1,none"] == pytest.approx(10 / 12, abs=ARITHMETIC.atol)


def _independent_pass_at_k(n: int, c: int, k: int) -> float:
    """Chen et al.'s unbiased estimator, from its definition: the chance that k of the n samples, drawn
    without replacement, include a correct one."""
    return 1.0 - comb(n - c, k) / comb(n, k)


@pytest.mark.parametrize(("n", "c", "ks"), [(5, 2, [1, 2, 3]), (4, 0, [1, 4]), (3, 3, [1, 2]), (6, 1, [1, 5])])
def test_pass_at_k_is_code_evals_estimator(n: int, c: int, ks: list[int]) -> None:
    """The built-in pass_at_k (what lm-eval's humaneval gets instead of code_eval) on n programs of which c
    pass equals the estimator computed independently; code_eval's own formula is the same."""
    from lmeval.scorer.usercode.hooks import humaneval_pass_at_k as pass_at_k

    test = "assert add(2, 3) == 5"
    good, bad = "def add(a, b):\n    return a + b", "def add(a, b):\n    return a * b"
    got = pass_at_k([test], [[good] * c + [bad] * (n - c)], k=ks)
    assert got == {f"pass@{k}": pytest.approx(_independent_pass_at_k(n, c, k), abs=ARITHMETIC.atol) for k in ks}


def test_sandboxed_hook_refuses_network_and_files(tmp_path: Path) -> None:
    """Generated code runs in the sandbox, not in the scorer's process: it cannot write outside it."""
    from lmeval.scorer.usercode.hooks import pass_at_1

    target = tmp_path / "pwned"
    prog = f"open({str(target)!r}, 'w').write('x')\ndef add(a, b):\n    return a + b"
    pass_at_1(["assert add(1, 1) == 2"], [prog])
    assert not target.exists()


IFEVAL_ROWS = [
    {"key": 1000, "prompt": "Write a short note. Do not use any commas.",
     "instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]},
    {"key": 1001, "prompt": "Answer in all lowercase letters only.",
     "instruction_id_list": ["change_case:english_lowercase"], "kwargs": [{}]},
]  # fmt: skip


class _Block:
    """Makes ``langdetect`` unimportable (as on a machine without it), whether or not it is installed."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == "langdetect" or name.startswith("langdetect."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)


def test_ifeval_compiles_without_langdetect_and_score_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data" / "IFEval"
    data.mkdir(parents=True)
    (data / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in IFEVAL_ROWS))
    for m in [m for m in sys.modules if m == "langdetect" or m.startswith(("langdetect.", "lm_eval.tasks.ifeval"))]:
        monkeypatch.delitem(sys.modules, m)
    monkeypatch.setattr(sys, "meta_path", [_Block(), *sys.meta_path])
    plan = compiler.compile_to_file(["+task=ifeval", f"run.data_dir={tmp_path / 'data'}"],
                                    out=str(tmp_path / "p.msgpack"))  # fmt: skip
    assert "langdetect" not in sys.modules
    header = read_plan(plan).header
    pr = header.tasks[0].config["process_results"]
    assert set(pr["files"]) >= {"utils.py", "instructions.py", "instructions_registry.py"}
    rdir = _results(plan, tmp_path / "r", lambda d: "a note without commas")
    assert main(["score", str(rdir), "--trust-code", "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "needs the Python package 'langdetect'" in err[0] and "task ifeval" in err[0]
