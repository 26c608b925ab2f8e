"""``run.seed_mode`` (compiler/build/seeds.py): ``per_task`` seeds the global generators afresh for each task (the
default); ``lm_eval`` seeds them once and the tasks draw from that one stream in lm-eval's load order, every
task's documents processed before any is rendered, the few-shot source before the evaluation split."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from lmeval import compiler
from lmeval.compiler.errors import CompileError
from lmeval.diff import diff_plans, render_text
from lmeval.plans.plan import DocRecord

UTILS = """\
import random


def process_docs(dataset):
    def one(doc):
        choices = [doc["a"], doc["b"], doc["c"]]
        random.shuffle(choices)
        return {"q": doc["q"], "choices": choices, "answer": choices.index(doc["a"])}

    return dataset.map(one)
"""


def _rows(task: str, split: str, n: int) -> list[dict[str, str]]:
    return [{"q": f"{task} {split} {i}?", "a": f"yes {i}", "b": f"no {i}", "c": f"maybe {i}"} for i in range(n)]


SPLITS = {"t1": {"validation": 5}, "t2": {"train": 7, "validation": 4}}


def _folder(tmp_path: Path) -> Path:
    """t1 (a validation split) and t2 (train and validation), both shuffling with the global ``random``, and
    group g listing t2 before t1 (load order t2, t1; plan order t1, t2)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "utils.py").write_text(UTILS)
    for task, splits in SPLITS.items():
        files = {}
        for split, n in splits.items():
            f = tmp_path / f"{task}-{split}.jsonl"
            f.write_text("".join(json.dumps(r) + "\n" for r in _rows(task, split, n)))
            files[split] = str(f)
        train = "training_split: train\n" if "train" in splits else ""
        (tmp_path / f"{task}.yaml").write_text(
            f"task: {task}\ndataset_path: json\ndataset_kwargs: {{data_files: {json.dumps(files)}}}\n"
            f"{train}validation_split: validation\noutput_type: multiple_choice\n"
            "process_docs: !function utils.process_docs\n"
            'doc_to_text: "{{q}}"\ndoc_to_target: answer\ndoc_to_choice: "{{choices}}"\nnum_fewshot: 0\n'
        )
    (tmp_path / "g.yaml").write_text("group: g\ntask: [t2, t1]\n")
    return tmp_path


def _shuffled(rows: list[dict[str, str]]) -> list[list[str]]:
    """What the hook draws for ``rows`` from the global ``random`` in its current state."""
    out = []
    for r in rows:
        c = [r["a"], r["b"], r["c"]]
        random.shuffle(c)
        out.append(c)
    return out


def _expected(seed: int, order: list[tuple[str, str]]) -> dict[tuple[str, str], list[list[str]]]:
    """One stream seeded with ``seed``, each (task, split) processed in ``order``."""
    state = random.getstate()
    random.seed(seed)
    try:
        return {(t, s): _shuffled(_rows(t, s, SPLITS[t][s])) for t, s in order}
    finally:
        random.setstate(state)


def _choices(folder: Path, *extra: str, tasks: str = "g") -> dict[str, list[Any]]:
    header, records = compiler.compile_plan([f"run.include_path={folder}", f"run.tasks=[{tasks}]", *extra])
    out: dict[str, list[Any]] = {}
    for r in records:
        if isinstance(r, DocRecord):
            out.setdefault(r.task, []).append(r.doc["choices"])
    return out


def test_lm_eval_mode_draws_one_stream_in_load_order(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    before = random.getstate()
    got = _choices(folder, "run.seed_mode=lm_eval", "run.seed=3")
    assert random.getstate() == before  # the caller's generator is put back
    # lm-eval: t2 loads first (the group's order), its few-shot source (train) processed before its
    # evaluation split even at 0 shots, then t1
    want = _expected(3, [("t2", "train"), ("t2", "validation"), ("t1", "validation")])
    assert got == {"t1": want[("t1", "validation")], "t2": want[("t2", "validation")]}
    # the order of the list counts: t1 first now
    got2 = _choices(folder, "run.seed_mode=lm_eval", "run.seed=3", tasks="t1,t2")
    want2 = _expected(3, [("t1", "validation"), ("t2", "train"), ("t2", "validation")])
    assert got2 == {"t1": want2[("t1", "validation")], "t2": want2[("t2", "validation")]}
    assert got2 != got


def test_per_task_mode_gives_each_task_its_prompts_alone(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    both = _choices(folder, "run.seed=3")
    assert both == _choices(folder, "run.seed=3", "run.seed_mode=per_task", tasks="t1,t2")
    assert both["t1"] == _choices(folder, "run.seed=3", tasks="t1")["t1"]
    assert both["t2"] == _choices(folder, "run.seed=3", tasks="t2")["t2"]
    # t2 alone is lm-eval's t2 alone: train drawn first, then validation
    assert both["t1"] == _expected(3, [("t1", "validation")])[("t1", "validation")]
    assert both["t2"] == _expected(3, [("t2", "train"), ("t2", "validation")])[("t2", "validation")]
    # lm_eval mode with a single task is the same thing
    assert _choices(folder, "run.seed=3", "run.seed_mode=lm_eval", tasks="t2") == {"t2": both["t2"]}


def test_the_mode_is_in_the_plan_and_in_diff(tmp_path: Path) -> None:
    folder = _folder(tmp_path / "tasks")
    base = [f"run.include_path={folder}", "run.tasks=[g]", "run.seed=3"]
    default = compiler.compile_located(base)
    explicit = compiler.compile_located([*base, "run.seed_mode=per_task"])
    lm = compiler.compile_located([*base, "run.seed_mode=lm_eval"])
    # the default is recorded by its absence: the plan is the one compiled before run.seed_mode existed
    assert "seed_mode" not in default.header.config["run"]
    assert explicit.header.plan_hash == default.header.plan_hash
    assert compiler.compile_located([*base, "run.seed_mode=null"]).header.plan_hash == default.header.plan_hash
    assert lm.header.config["run"]["seed_mode"] == "lm_eval"
    assert lm.header.plan_hash != default.header.plan_hash
    old, new = default.write(str(tmp_path / "per_task.msgpack")), lm.write(str(tmp_path / "lm_eval.msgpack"))
    report = diff_plans(str(old), str(new), show=1)
    assert [c.path for c in report.config] == ["run.seed_mode"]
    text = render_text(report)
    assert "config: run.seed_mode" in text and "'lm_eval'" in text
    # t1 moved (it now draws after t2), and the doc-text cause names the setting behind it
    t1 = next(t for t in report.tasks if t.name == "t1")
    doc = t1.cause("doc")
    assert t1.status == "changed" and doc is not None and doc.docs > 0
    assert [c.path for c in doc.config] == ["run.seed_mode"]


def test_bad_seed_mode_is_refused() -> None:
    for bad in ("lm-eval", "global", "1"):
        with pytest.raises(CompileError, match=r"run\.seed_mode.*per_task, lm_eval"):
            compiler.compile_plan(["+task=arith", "run.limit=1", f"run.seed_mode={bad}"])
