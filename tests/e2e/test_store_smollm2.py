"""The result store on a real model (#63 acceptance 1): MMLU 5-shot on two subjects (the first ``LIMIT`` test
documents of each), SmolLM2 on vLLM. The same plan executed again in another folder sends nothing to the engine
and scores the same; a plan in which one subject's prompt changed (its description, from a task YAML in a
``run.include_path`` folder) runs that subject's requests only. Counts come from the manifests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml

from lmeval.plans.results import read_manifest, read_results
from tests.support import cli_in_process as cli
from tests.support import data_dir

SUBJECTS = ("mmlu_anatomy", "mmlu_astronomy")
LIMIT = 10
CHOICES = 4
COMMON = [f"run.tasks=[{','.join(SUBJECTS)}]", "run.num_fewshot=5", f"run.limit={LIMIT}", "model=smollm2"]
PROMPT = "{{question.strip()}}\nA. {{choices[0]}}\nB. {{choices[1]}}\nC. {{choices[2]}}\nD. {{choices[3]}}\nAnswer:"


def edited_astronomy(folder: Path) -> Path:
    """A task YAML for mmlu_astronomy as lm-eval 0.4.13 defines it, but for its description line."""
    folder.mkdir(parents=True, exist_ok=True)
    task = {
        "task": "mmlu_astronomy", "dataset_path": "cais/mmlu", "dataset_name": "astronomy", "test_split": "test",
        "fewshot_split": "dev", "fewshot_config": {"sampler": "first_n"}, "output_type": "multiple_choice",
        "doc_to_text": PROMPT, "doc_to_choice": ["A", "B", "C", "D"], "doc_to_target": "answer",
        "description": "Questions about stars, planets and galaxies, each with its answer.\n\n",
        "metric_list": [{"metric": "acc", "aggregation": "mean", "higher_is_better": True}],
        "metadata": {"version": 1.0},
    }  # fmt: skip
    (folder / "mmlu_astronomy.yaml").write_text(yaml.safe_dump(task, sort_keys=False), encoding="utf-8")
    return folder


def _compile(out: Path, *extra: str) -> Path:
    rc, _, err = cli("compile", *COMMON, f"run.data_dir={data_dir()}", f"run.out={out}", *extra)
    assert rc == 0, err
    return out


def _execute(plan: Path, out: Path, store: Path) -> dict[str, Any]:
    rc, _, err = cli("execute", str(plan), "model=smollm2", f"run.store={store}", "--out", str(out), "--no-progress")
    assert rc == 0, err
    return read_manifest(out).stats


def _scores(out: Path) -> dict[str, Any]:
    rc, _, err = cli("score", str(out))
    assert rc == 0, err
    return dict(json.loads((out / "results.json").read_text())["results"])


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("store-e2e")


def test_the_same_plan_elsewhere_runs_nothing_and_a_changed_subject_runs_alone(work: Path) -> None:
    plan = _compile(work / "mmlu.msgpack")
    store = work / "store"
    n = len(SUBJECTS) * LIMIT * CHOICES
    first = _execute(plan, work / "r1", store)
    assert first["executed"] == n and first["stored"] == 0 and first["store_writes"] == n

    again = _execute(plan, work / "elsewhere", store)
    assert again["executed"] == 0 and again["requests"] == 0 and again["stored"] == n
    assert _scores(work / "elsewhere") == _scores(work / "r1")
    a, b = read_results(work / "r1"), read_results(work / "elsewhere")
    assert a.drop("source").equals(b.drop("source")) and set(b["source"]) == {"stored"}

    edited = _compile(work / "edited.msgpack", f"run.include_path={edited_astronomy(work / 'tasks')}")
    third = _execute(edited, work / "r3", store)
    per_subject = LIMIT * CHOICES
    assert third["executed"] == per_subject and third["stored"] == per_subject
    rows = read_results(work / "r3")
    by_task = dict(rows.group_by("task").agg(pl.col("source").unique().sort()).rows())
    assert by_task == {"mmlu_anatomy": ["stored"], "mmlu_astronomy": ["computed"]}
