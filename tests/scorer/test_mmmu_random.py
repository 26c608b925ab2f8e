"""MMMU's ``acc`` where a reply names no option equals lm-eval 0.4.13's, document by document, for a whole subject.

MMMU's ``process_results`` then picks an option with ``random.choice`` from Python's global generator, which
lm-eval leaves in a state of its own making (``scorer/usercode/globalrandom.py``). lm-eval scores the same
replies itself in a fresh process (``tests/scorer/mmmu_lm_eval.py``: its ``simple_evaluate`` with a stub LM,
its own loading, seeding and scoring); lmeval compiles the subject from the same files, takes the replies as
results and scores them with ``--trust-code``.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from lmeval.compiler import compile_to_file
from lmeval.plans import read_plan
from lmeval.plans.results import RunManifest, polars_schema, write_manifest
from lmeval.scorer.score import score_run
from tests.bounds import SCORES
from tests.scorer.mmmu_lm_eval import NO_OPTION, TASK, lm_eval_draws, lm_eval_scores, make_subject, reply_for

pytest.importorskip("lm_eval")


def _results(plan_path: Path, rdir: Path) -> Path:
    """A results folder answering every Instance of the plan with ``reply_for`` its document."""
    plan = read_plan(plan_path)
    rows = [{"instance_id": i.instance_id, "task": i.task, "doc_id": i.doc_id, "idx": i.idx,
             "request_type": i.request_type, "request_hash": i.request_hash, "response": reply_for(i.doc_id),
             "responses": [reply_for(i.doc_id)], "finish_reason": "stop"} for i in plan.instances]  # fmt: skip
    rdir.mkdir(parents=True)
    pl.DataFrame(rows, schema=polars_schema()).write_parquet(rdir / "part-00000.parquet")
    write_manifest(rdir, RunManifest(plan_hash=plan.header.plan_hash, plan_path=str(plan_path),
                                     model={"name": "replies"}, backend="replies"))  # fmt: skip
    return rdir


def _ours(rdir: Path) -> tuple[list[float], dict[str, Any]]:
    res = score_run(str(rdir), trust_code=True)
    samples = pl.read_parquet(rdir / "samples.parquet").filter(pl.col("task") == TASK).sort("doc_id")
    return samples["acc"].to_list(), res.results["results"][TASK]


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    root = tmp_path_factory.mktemp("mmmu-random")
    data = make_subject(root / "data")
    theirs = lm_eval_scores(data, root / "lm_eval")
    plan = compile_to_file([f"+task={TASK}", f"run.data_dir={data}"], str(root / "art.msgpack"))
    return theirs, _results(Path(plan), root / "results")


def test_acc_of_replies_naming_no_option_equals_lm_evals(scored: tuple[dict[str, Any], Path]) -> None:
    theirs, rdir = scored
    n = len(theirs["acc"])
    assert theirs["replies"] == [reply_for(d) for d in range(n)]  # lm-eval scored these very replies
    guessed = [d for d in range(n) if reply_for(d) in NO_OPTION]
    assert len(guessed) >= 30 and 0 < sum(theirs["acc"][d] for d in guessed) < len(guessed)  # real draws
    acc, results = _ours(rdir)
    assert acc == theirs["acc"]
    for key in ("acc,none", "acc_stderr,none"):
        assert SCORES.close(results[key], theirs["results"][key]), key


def test_scores_are_the_same_every_time_whatever_drew_before(scored: tuple[dict[str, Any], Path]) -> None:
    """Scoring again in the same process (the task's module already imported, the global generator moved on)
    gives lm-eval's values again; the global generator is left as it was."""
    theirs, rdir = scored
    random.seed(99)
    random.random()
    before = random.getstate()
    assert _ours(rdir)[0] == theirs["acc"]
    assert random.getstate() == before
    assert _ours(rdir)[0] == theirs["acc"]


DRAWS_YAML = """\
task: draws_at_random
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: generate_until
doc_to_text: "{{{{q}}}}"
doc_to_target: "{{{{a}}}}"
process_results: !function utils.process_results
generation_kwargs:
  until: ["\\n"]
metric_list:
  - metric: pyrand
    aggregation: mean
    higher_is_better: true
  - metric: nprand
    aggregation: mean
    higher_is_better: true
"""
DRAWS_UTILS = """\
import random

import numpy as np


def process_results(doc, results):
    return {"pyrand": random.random(), "nprand": float(np.random.random())}
"""


def test_scoring_code_drawing_from_the_seeded_generators_equals_lm_evals(tmp_path: Path) -> None:
    """A task whose ``process_results`` draws from Python's and numpy's global generators without seeding them
    (pisa's guesses with Python's): each document's draws follow ``run.seed`` (lm-eval's ``--seed``: slot 1 seeds
    ``random``, slot 2 numpy) and lm-eval's three ``task_name`` draws, as lm-eval's own run at that seed."""
    task_dir, data = tmp_path / "task", tmp_path / "test.jsonl"
    task_dir.mkdir()
    data.write_text("".join(json.dumps({"q": f"question {i}?", "a": str(i)}) + "\n" for i in range(12)))
    (task_dir / "draws.yaml").write_text(DRAWS_YAML.format(data=data))
    (task_dir / "utils.py").write_text(DRAWS_UTILS)
    theirs = lm_eval_draws(task_dir, "draws_at_random", 7, tmp_path / "lm_eval")
    plan = compile_to_file(["run.tasks=[draws_at_random]", f"run.include_path={task_dir}", "run.seed=7"],
                           str(tmp_path / "draws.msgpack"))  # fmt: skip
    rdir = _results(Path(plan), tmp_path / "results")
    score_run(str(rdir), trust_code=True, include_path=[task_dir])
    samples = pl.read_parquet(rdir / "samples.parquet").sort("doc_id")
    assert len(theirs) == 12 and len({m["pyrand"] for m in theirs}) == 12
    assert samples.select("pyrand", "nprand").to_dicts() == theirs


def test_a_malformed_recorded_seed_is_one_line(scored: tuple[dict[str, Any], Path], tmp_path: Path) -> None:
    from lmeval.scorer.errors import ScoreError
    from lmeval.scorer.usercode import lm_eval_random

    with pytest.raises(ScoreError, match=r"^task t: the plan's run\.seed must be .*got 'x'$"):
        with lm_eval_random({"seed": "x"}, "task t"):
            pass
    assert json.dumps(scored[0]["results"])  # the fixture's lm-eval run is plain JSON
