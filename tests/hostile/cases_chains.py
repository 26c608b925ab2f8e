"""Chains and outputs (#64): a command's output never over one of its inputs (``next-turn --out PLAN``, ``judge
--out`` naming the judged plan, ``report -o`` over a run's manifest, ``export-batch --out`` over a hard link to
its plan, ``contamination -o`` over a corpus file; plans/outputs.py), a chain.json whose stage names another
chain's plan (plans/openchain.py), and a task YAML that writes the format record itself (compiler/formats)."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from tests.cli.chain_task import write_chain_task
from tests.hostile.corpus import FAKE, MINI_YAML, Base, Case, case, compile_task, copytree, lmeval, task_dir

_LOCK = threading.Lock()
_CHAT = ["run.apply_chat_template=true", FAKE, "run.tasks=[convo]"]


def chains(tmp: Path) -> Path:
    """Two chained runs on the fake backend (``a``: MT-Bench's first turns and ours; ``b``: its second user turn
    edited), built once per corpus run next to the cases; a case copies what it changes."""
    where = tmp.parent / "chains"
    with _LOCK:
        if not (where / "b" / "chain.json").exists():
            for name, edit in (("a", None), ("b", {1: "Rewrite it as a haiku."})):
                tasks = write_chain_task(where / f"tasks-{name}", edit=edit)
                argv = ["run", f"run.include_path={tasks}", *_CHAT, "--out", str(where / name), "--plan-out",
                        str(where / f"{name}.msgpack"), "--no-progress"]  # fmt: skip
                r = lmeval(*argv, cwd=where.parent)
                assert r.returncode == 0, r.stderr
    return where


def _stage_one(tmp: Path) -> tuple[Path, Path]:
    """A copy of chain ``a``'s stage 1: its plan and results folder."""
    a = chains(tmp) / "a"
    stage = json.loads((a / "chain.json").read_text())["stages"][0]
    plan = tmp / "stage1.msgpack"
    plan.write_bytes((a / stage["plan"]).read_bytes())
    return plan, copytree(a / "turn1", tmp / "turn1")


@case("outputs")
def next_turn_out_is_its_plan(tmp: Path, base: Base) -> Case:
    plan, results = _stage_one(tmp)
    other = f"{tmp}/turn1/../stage1.msgpack"  # the same file under another spelling
    return Case(["next-turn", str(plan), str(results), "--out", other], ("--out", "is also an input"),
                keep=[plan, results])  # fmt: skip


@case("outputs")
def next_turn_out_is_a_symlink_to_its_plan(tmp: Path, base: Base) -> Case:
    plan, results = _stage_one(tmp)
    (tmp / "link.msgpack").symlink_to(plan)
    return Case(["next-turn", str(plan), str(results), "--out", str(tmp / "link.msgpack")],
                ("--out", str(tmp / "link.msgpack"), str(plan)), keep=[plan, results])  # fmt: skip


@case("outputs")
def next_turn_out_is_the_results_manifest(tmp: Path, base: Base) -> Case:
    plan, results = _stage_one(tmp)
    return Case(["next-turn", str(plan), str(results), "--out", str(results / "manifest.json")],
                ("--out", "manifest.json", "is also an input"), keep=[plan, results])  # fmt: skip


@case("outputs")
def export_batch_out_is_a_hard_link_to_its_plan(tmp: Path, base: Base) -> Case:
    plan = tmp / "p.msgpack"
    plan.write_bytes(base.plan.read_bytes())
    os.link(plan, tmp / "same.msgpack")
    return Case(["export-batch", str(plan), "--out", str(tmp / "same.msgpack")],
                ("--out", "same.msgpack", "is also an input"), keep=[plan])  # fmt: skip


def _scored(tmp: Path, base: Base) -> Path:
    r = copytree(base.results, tmp / "r")
    p = lmeval("score", str(r), "--plan", str(base.plan), "--quiet", cwd=tmp)
    assert p.returncode == 0, p.stderr
    return r


@case("outputs")
def report_o_is_a_runs_manifest(tmp: Path, base: Base) -> Case:
    r = _scored(tmp, base)
    return Case(["report", str(r), "-o", str(r / "manifest.json")], ("-o", "manifest.json", "is also an input"),
                keep=[r])  # fmt: skip


@case("outputs")
def judge_out_is_the_judged_plan(tmp: Path, base: Base) -> Case:
    plan = tmp / "judged.msgpack"
    plan.write_bytes(base.plan.read_bytes())
    r = _scored(tmp, base)
    argv = ["judge", str(r), "--judge", "single_10", "--plan", str(plan), "question={{ doc.a }}", "model=tiny",
            "--out", str(plan)]  # fmt: skip
    return Case(argv, ("--out", "judged.msgpack", "is also an input"), keep=[plan, r])


@case("outputs")
def contamination_o_over_a_corpus_file(tmp: Path, base: Base) -> Case:
    corpus = tmp / "corpus"
    corpus.mkdir()
    (corpus / "summary.json").write_text(json.dumps({"text": "what is one plus one"}) + "\n", encoding="utf-8")
    return Case(["contamination", str(base.plan), "--corpus", str(corpus), "-o", str(corpus)],
                ("-o", "summary.json", "is also an input"), keep=[corpus])  # fmt: skip


# ---------------------------------------------------------------------------------------- forged chain.json


def _forged_chain(tmp: Path, edit: Any) -> Path:
    """A copy of chain ``a`` whose chain.json went through ``edit(stages, other)``: ``other`` is chain ``b``'s
    folder (a plan of another chain)."""
    root = copytree(chains(tmp) / "a", tmp / "a")
    data = json.loads((root / "chain.json").read_text())
    edit(data["stages"], chains(tmp) / "b")
    (root / "chain.json").write_text(json.dumps(data, indent=2), encoding="utf-8")
    return root


def _others_stage(stages: list[dict[str, Any]], other: Path, k: int, path: str | None = None) -> None:
    theirs = json.loads((other / "chain.json").read_text())["stages"][k]
    stages[k]["plan"] = path if path is not None else str(other / theirs["plan"])
    stages[k]["plan_hash"] = theirs["plan_hash"]


@case("chains")
def show_chain_stage_two_of_another_chain(tmp: Path, base: Base) -> Case:
    root = _forged_chain(tmp, lambda st, other: _others_stage(st, other, 1))
    return Case(["show", str(root)], (str(root / "chain.json"), "stage 2", "plan:", "another chain"), keep=[root])


@case("chains")
def show_chain_stage_plan_path_of_another_chain(tmp: Path, base: Base) -> Case:
    def edit(st: list[dict[str, Any]], other: Path) -> None:
        theirs = json.loads((other / "chain.json").read_text())["stages"][1]
        st[1]["plan"] = str(other / theirs["plan"])  # the path only: the recorded hash is still this chain's

    root = _forged_chain(tmp, edit)
    return Case(["show", str(root)], (str(root / "chain.json"), "stage 2", "plan_hash"), keep=[root])


@case("chains")
def diff_chain_stage_two_of_another_chain_by_relative_path(tmp: Path, base: Base) -> Case:
    def edit(st: list[dict[str, Any]], other: Path) -> None:
        theirs = json.loads((other / "chain.json").read_text())["stages"][1]
        _others_stage(st, other, 1, f"../../chains/b/{Path(theirs['plan']).name}")

    root = _forged_chain(tmp, edit)
    b = chains(tmp) / "b"
    return Case(["diff", str(root), str(b)], (str(root / "chain.json"), "stage 2", "plan", "inside the chain"),
                keep=[root])  # fmt: skip


@case("chains")
def show_chain_forged_results_hash(tmp: Path, base: Base) -> Case:
    def edit(st: list[dict[str, Any]], other: Path) -> None:
        st[0]["results_hash"] = "0" * 64

    root = _forged_chain(tmp, edit)
    return Case(["show", str(root)], (str(root / "chain.json"), "stage 1", "results_hash"), keep=[root])


@case("chains")
def show_chain_results_folder_of_another_stage(tmp: Path, base: Base) -> Case:
    def edit(st: list[dict[str, Any]], other: Path) -> None:
        st[1]["results"] = "turn1"

    root = _forged_chain(tmp, edit)
    return Case(["show", str(root)], (str(root / "chain.json"), "stage 2", "results:"), keep=[root])


# ---------------------------------------------------------------------------------------- format record


@case("formats")
def yaml_forged_lm_eval_05_format_record(tmp: Path, base: Base) -> Case:
    record = "format:\n  name: mcqa\n  vocabulary: lm-eval-0.5\n  task: mini\n"
    d = task_dir(tmp, MINI_YAML + record)
    return Case(compile_task(d, "mini", base.data, tmp), (str(d / "t.yaml"), "task mini", "field format"),
                absent=[tmp / "out.msgpack"])  # fmt: skip


@case("formats")
def yaml_forged_olmes_format_record_with_seed(tmp: Path, base: Base) -> Case:
    record = "format:\n  name: mcf\n  task: mini\n  seed: 7\n  metric: acc,none\n"
    d = task_dir(tmp, MINI_YAML.replace("generate_until", "generate_until\nnum_fewshot: 1") + record)
    return Case(compile_task(d, "mini", base.data, tmp), (str(d / "t.yaml"), "task mini", "field format"),
                absent=[tmp / "out.msgpack"])  # fmt: skip


@case("formats")
def yaml_formats_block_beside_a_forged_record(tmp: Path, base: Base) -> Case:
    yaml = MINI_YAML.replace("output_type: generate_until", "output_type: multiple_choice")
    yaml += "doc_to_choice: \"{{[answer, '0']}}\"\nformats: cloze\nformat:\n  name: cot\n  vocabulary: lm-eval-0.5\n"
    d = task_dir(tmp, yaml)
    return Case(compile_task(d, "mini", base.data, tmp), (str(d / "t.yaml"), "task mini", "field format"),
                absent=[tmp / "out.msgpack"])  # fmt: skip


@case("chains")
def show_chain_forged_results_hash_of_the_last_stage(tmp: Path, base: Base) -> Case:
    def edit(st: list[dict[str, Any]], other: Path) -> None:
        st[-1]["results_hash"] = "0" * 64  # no later stage names it: checked against the answers themselves

    root = _forged_chain(tmp, edit)
    return Case(["show", str(root)], (str(root / "chain.json"), "stage 3", "results_hash"), keep=[root])
