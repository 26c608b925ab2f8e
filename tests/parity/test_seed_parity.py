"""Leaderboard parity for a seeded task (#25): lm-eval 0.4.13's catalog group ``leaderboard_gpqa`` (diamond,
extended, main), whose ``process_docs`` shuffles each question's choices with Python's global ``random``,
compiled by name on local synthetic data in gpqa's schema and compared with lm-eval's own
``build_all_requests`` (seeded as ``simple_evaluate`` seeds: once, before the tasks load; each reference on a
fresh datasets cache, see ``lmeval_reference``).

- ``run.seed_mode=lm_eval``: byte-identical to lm-eval for the group (one stream, drawn in load order).
- ``run.seed_mode=per_task`` (the default): each task equals lm-eval's run of that task alone.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from tests.parity.compare import Outcome, compare, ours_via_compiler
from tests.parity.lmeval_reference import RefResult, RefSpec, reference_instances

pytestmark = pytest.mark.lmeval_parity

SUBSETS = {"gpqa_diamond": 8, "gpqa_extended": 12, "gpqa_main": 10}
TASKS = [f"leaderboard_{s}" for s in SUBSETS]
CLI_DEFAULT = (0, 1234)  # lm-eval's --seed default 0,1234,1234,1234: python, numpy


def _row(subset: str, i: int, rnd: random.Random) -> dict[str, Any]:
    """One row with the fields of Idavidrein/gpqa that matter (and a few that do not); the text exercises
    the task's ``preprocess`` (surrounding spaces, `` [title]``, bracketed notes, double spaces)."""
    n = rnd.randint(2, 99)
    return {
        "Pre-Revision Question": f"old question {i}",
        "Pre-Revision Correct Answer": f"old right {i}",
        "Question": f" In {subset}, what is {n} [title] squared, question {i}?",
        "Correct Answer": f"{n * n} units [1]",
        "Incorrect Answer 1": f"{n * n + 1} units",
        "Incorrect Answer 2": f" {n * 2}  units [title] roughly",
        "Incorrect Answer 3": f"{n + n} units ",
        "Explanation": f"{n} times {n}.",
        "Subdomain": "Physics (general)",
        "High-level domain": "Physics",
        "Record ID": f"rec{subset}{i:03d}",
        "Writer's Difficulty Estimate": "Easy",
    }


@pytest.fixture(scope="module")
def gpqa_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """<data>/gpqa/<subset>/train.jsonl: where both lmeval and the lm-eval reference look for Idavidrein/gpqa's
    subsets (the YAMLs' only split, train, serves as the evaluation split)."""
    root = tmp_path_factory.mktemp("gpqa-data")
    rnd = random.Random(25)
    for subset, n in SUBSETS.items():
        d = root / "gpqa" / subset
        d.mkdir(parents=True)
        (d / "train.jsonl").write_text("".join(json.dumps(_row(subset, i, rnd)) + "\n" for i in range(n)))
    return root


SPECS = {
    "group@cli-default": RefSpec("leaderboard_gpqa", python_seed=CLI_DEFAULT[0], numpy_seed=CLI_DEFAULT[1]),
    "group@1234": RefSpec("leaderboard_gpqa", python_seed=1234, numpy_seed=1234),
    "main,diamond@cli-default": RefSpec(
        "leaderboard_gpqa_main,leaderboard_gpqa_diamond", python_seed=CLI_DEFAULT[0], numpy_seed=CLI_DEFAULT[1]
    ),
    **{
        f"{t}@cli-default": RefSpec(t, python_seed=CLI_DEFAULT[0], numpy_seed=CLI_DEFAULT[1])
        for t in TASKS[1:]  # diamond alone is the group's first-loaded task
    },
}


@pytest.fixture(scope="module")
def refs(gpqa_data: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, RefResult]:
    out = reference_instances(list(SPECS.values()), gpqa_data, cache_dir=tmp_path_factory.mktemp("ref-cache"))
    by_key = dict(zip(SPECS, out, strict=True))
    for key, r in by_key.items():
        assert r.instances and r.data_files, f"lm-eval built no requests for {key}"
    return by_key


def _ours(data: Path, tmp_path: Path, tasks: str, *extra: str) -> list[dict[str, Any]]:
    return ours_via_compiler([f"run.tasks=[{tasks}]", f"run.data_dir={data}", *extra], tmp_path)


def _assert_same(o: Outcome) -> None:
    assert o.ok and o.matched == o.n_ref, (o, o.first.describe() if o.first else "")


def _only(rows: list[dict[str, Any]], task: str) -> list[dict[str, Any]]:
    return [r for r in rows if r["task"] == task]


@pytest.mark.parametrize(
    ("key", "tasks", "seed"),
    [
        ("group@cli-default", "leaderboard_gpqa", "'0,1234,1234,1234'"),
        ("group@1234", "leaderboard_gpqa", "1234"),
        ("main,diamond@cli-default", "leaderboard_gpqa_main,leaderboard_gpqa_diamond", "'0,1234,1234,1234'"),
    ],
)
def test_lm_eval_mode_is_byte_identical_to_lmeval(
    refs: dict[str, RefResult], gpqa_data: Path, tmp_path: Path, key: str, tasks: str, seed: str
) -> None:
    ref = refs[key]
    ours = _ours(gpqa_data, tmp_path, tasks, "run.seed_mode=lm_eval", f"run.seed={seed}")
    _assert_same(compare(ours, ref.instances, key, "lm_eval"))
    want = set(TASKS) if key.startswith("group") else {TASKS[0], TASKS[2]}
    assert {r["task"] for r in ref.instances} == want


def test_per_task_mode_equals_each_task_run_alone(refs: dict[str, RefResult], gpqa_data: Path, tmp_path: Path) -> None:
    ours = _ours(gpqa_data, tmp_path, "leaderboard_gpqa", "run.seed='0,1234,1234,1234'")
    group = refs["group@cli-default"].instances
    alone = {TASKS[0]: _only(group, TASKS[0])} | {t: refs[f"{t}@cli-default"].instances for t in TASKS[1:]}
    for task in TASKS:
        _assert_same(compare(_only(ours, task), alone[task], task, "per_task"))
    # and the modes really differ here: lm-eval's group draws extended and main after diamond
    for task in TASKS[1:]:
        o = compare(_only(ours, task), _only(group, task), task, "per_task vs group")
        assert o.mismatched > 0, task


def test_docs_list_the_scanned_tasks() -> None:
    """The list of seed-dependent catalog tasks in docs/how-to/leaderboard.md is what the hook scan finds
    (regenerate it with ``python -m tests.parity.seeded_hooks``), and the scan finds what the tests above rely on."""
    from lmeval.compiler.tasks.lm_eval_catalog import catalog
    from tests.parity.seeded_hooks import render, scan

    cat = catalog()
    assert cat is not None
    uses = scan()
    tasks = {u.task for u in uses}
    assert set(TASKS) <= tasks and "gpqa_main_zeroshot" in tasks
    # scoring-time draws (ifeval's instruction builders) and private generators (hendrycks_ethics) are not
    assert "ifeval" not in tasks and not any(t.startswith("ethics_") for t in tasks)
    text = (Path(__file__).resolve().parents[2] / "docs" / "how-to" / "leaderboard.md").read_text()
    listed = text.split("<!-- seeded-tasks:begin -->\n", 1)[1].split("\n<!-- seeded-tasks:end -->", 1)[0]
    assert listed == render(uses, cat.root)
