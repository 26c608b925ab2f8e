"""``run.seed`` is lm-eval's ``--seed`` for what happens at compile time (compiler/build/seeds.py): Python's and
numpy's global generators for a task's own functions, and the few-shot seed."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from lmeval import compiler
from lmeval.compiler.build.seeds import Seeds, parse_seed
from lmeval.compiler.errors import CompileError

# gpqa's process_docs shuffles the choices with the global ``random``; this one also draws from numpy
UTILS = """\
import random

import numpy as np


def process_docs(dataset):
    def one(doc):
        choices = [doc["sol1"], doc["sol2"], "neither"]
        random.shuffle(choices)
        right = [doc["sol1"], doc["sol2"]][int(doc["label"])]
        return {"goal": doc["goal"], "choices": choices, "answer": choices.index(right),
                "pick": int(np.random.randint(0, 1000))}

    return dataset.map(one)
"""


def _task(tmp_path: Path, data: Path) -> Path:
    (tmp_path / "utils.py").write_text(UTILS)
    (tmp_path / "t.yaml").write_text(
        "task: t\ndataset_path: json\n"
        f"dataset_kwargs: {{data_files: {{validation: {data / 'piqa' / 'validation.jsonl'}}}}}\n"
        "validation_split: validation\noutput_type: multiple_choice\nprocess_docs: !function utils.process_docs\n"
        'doc_to_text: "{{goal}} ({{pick}})"\ndoc_to_target: answer\ndoc_to_choice: choices\n'
    )
    return tmp_path


def _compile(folder: Path, *extra: str) -> tuple[str, list[dict]]:
    header, records = compiler.compile_plan([f"run.include_path={folder}", "run.tasks=[t]", "run.limit=20", *extra])
    docs = [r.doc for r in records if hasattr(r, "fewshot_ids")]
    return header.plan_hash, docs


def test_a_tasks_own_random_draws_are_seeded_and_reproducible(tmp_path: Path, data: Path) -> None:
    folder = _task(tmp_path, data)
    random.seed(99)
    outside = random.getstate()
    h1, d1 = _compile(folder)
    assert random.getstate() == outside  # the caller's generator is put back
    random.seed(5)  # whatever the caller's state, the plan is the same
    h2, d2 = _compile(folder)
    assert h1 == h2 and d1 == d2
    # the default run.seed (1234) is lm-eval's --seed 1234: its numpy slot seeds the task's numpy draws
    import numpy as np

    assert d1[0]["pick"] == int(np.random.RandomState(1234).randint(0, 1000))
    h3, d3 = _compile(folder, "run.seed=7")
    assert h3 != h1 and [d["choices"] for d in d3] != [d["choices"] for d in d1]
    assert d3[0]["pick"] == int(np.random.RandomState(7).randint(0, 1000))
    # the python slot alone changes the shuffles, the numpy slot alone the numpy draws
    _, d4 = _compile(folder, "run.seed='0,1234,1234,1234'")
    assert [d["pick"] for d in d4] == [d["pick"] for d in d1]
    assert [d["choices"] for d in d4] != [d["choices"] for d in d1]


def test_the_first_shuffle_equals_lm_evals_seeding(tmp_path: Path, data: Path) -> None:
    """lm-eval seeds ``random`` once before building requests; the first task's first doc sees the same
    draws (process_docs maps the docs in order)."""
    folder = _task(tmp_path, data)
    _, docs = _compile(folder, "run.seed=3")
    import json

    rows = [json.loads(x) for x in (data / "piqa" / "validation.jsonl").read_text().splitlines()[:2]]
    random.seed(3)
    want = []
    for doc in rows:
        c = [doc["sol1"], doc["sol2"], "neither"]
        random.shuffle(c)
        want.append(c)
    assert [d["choices"] for d in docs[:2]] == want


def test_seed_sets_the_fewshot_seed_as_lm_evals_flag() -> None:
    h42, r42 = compiler.compile_plan(["+task=arith", "run.limit=5", "run.seed=42"])
    hf, rf = compiler.compile_plan(["+task=arith", "run.limit=5", "run.fewshot_random_seed=42"])
    assert h42.task("arith").config["fewshot_random_seed"] == 42
    assert [getattr(r, "context", None) for r in r42] == [getattr(r, "context", None) for r in rf]
    h0, r0 = compiler.compile_plan(["+task=arith", "run.limit=5"])
    assert [getattr(r, "context", None) for r in r42] != [getattr(r, "context", None) for r in r0]
    # agreeing settings are fine; two different non-default few-shot seeds are refused, in one line
    compiler.compile_plan(["+task=arith", "run.limit=1", "run.seed=42", "run.fewshot_random_seed=42"])
    with pytest.raises(CompileError, match=r"run\.seed.*few-shot seed to 42.*fewshot_random_seed is 7"):
        compiler.compile_plan(["+task=arith", "run.limit=1", "run.seed=42", "run.fewshot_random_seed=7"])


def test_seed_forms() -> None:
    assert parse_seed(5) == Seeds(5, 5, 5, 5)
    assert parse_seed("0,1234,1234,1234") == Seeds(0, 1234, 1234, 1234)
    assert parse_seed("0,None,8") == Seeds(0, None, 8, 1234)  # lm-eval fills a missing fourth with 1234
    assert parse_seed([1, None, 2, None]) == Seeds(1, None, 2, None)
    assert parse_seed(None) == Seeds(None, None, None, 1234)  # null: no global seeding, few-shot untouched
    for bad in ("x", "1,2", "1,2,3,4,5", True, 1.5, {"a": 1}, -1, "1,-1,1,1", 2**32):
        with pytest.raises(CompileError, match=r"run\.seed"):
            parse_seed(bad)
