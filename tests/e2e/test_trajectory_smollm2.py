"""Recorded conversations scored under SmolLM2 (#56, acceptance 3): each recorded assistant step's
log-likelihood from a ``+task=trajectory`` run equals, within the suite's bound (``tests.bounds.LOGLIKELIHOOD``,
docs "What repeats exactly"), the log-likelihood of the same step asked as a plain loglikelihood Instance (a task
of (context, reply) pairs whose contexts transformers' ``apply_chat_template`` rendered here, compiled without a
chat template); both on the hf backend."""

from __future__ import annotations

import json
import math
from pathlib import Path

import yaml

from lmeval.plans import read_plan
from lmeval.plans.results.manifest import read_results
from lmeval.scorer.trajectories import step_scores, trajectory_scores
from tests.bounds import ARITHMETIC, LOGLIKELIHOOD
from tests.support import cli_in_process as cli

TRAJECTORIES = [
    {"id": "sums", "messages": [
        {"role": "user", "content": "What is 2 + 2?"},
        {"role": "assistant", "content": "2 + 2 = 4."},
        {"role": "user", "content": "And 3 + 3?"},
        {"role": "assistant", "content": "3 + 3 = 6."},
    ]},
    {"id": "capital", "messages": [
        {"role": "system", "content": "You answer in one word."},
        {"role": "user", "content": "What is the capital of France?"},
        {"role": "assistant", "content": "Paris"},
    ]},
]  # fmt: skip
STEPS = [("sums", 1), ("sums", 3), ("capital", 2)]


def _plain_task(dest: Path, smollm2: Path) -> Path:
    """The same steps as plain (context, reply) loglikelihood pairs, contexts rendered by transformers."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(smollm2))
    rows = []
    for tid, k in STEPS:
        msgs = next(t["messages"] for t in TRAJECTORIES if t["id"] == tid)
        ctx = tok.apply_chat_template(msgs[:k], tokenize=False, add_generation_prompt=True)
        rows.append({"context": ctx, "reply": msgs[k]["content"]})
    dest.mkdir()
    (dest / "steps.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = {"task": "plain_steps", "dataset_path": "json", "test_split": "test", "output_type": "loglikelihood",
           "dataset_kwargs": {"data_files": {"test": str(dest / "steps.jsonl")}}, "doc_to_text": "context",
           "doc_to_target": "reply", "target_delimiter": "", "num_fewshot": 0}  # fmt: skip
    (dest / "plain_steps.yaml").write_text(yaml.safe_dump(cfg))
    return dest


def test_trajectory_steps_equal_plain_loglikelihood_instances(tmp_path: Path) -> None:
    from tests.e2e.realmodel import smollm2_dir

    recorded = tmp_path / "recorded.jsonl"
    recorded.write_text("".join(json.dumps(t) + "\n" for t in TRAJECTORIES))
    model = ["model=smollm2", "model.backend=hf", "--no-progress"]
    traj = tmp_path / "traj"
    rc, _, err = cli("run", "+task=trajectory", f"task.trajectory.path={recorded}", "run.apply_chat_template=true",
                     "--out", str(traj), *model)  # fmt: skip
    assert rc == 0, err
    plain = tmp_path / "plain"
    tasks = _plain_task(tmp_path / "tasks", smollm2_dir())
    rc, _, err = cli("run", f"run.include_path={tasks}", "run.tasks=[plain_steps]", "--out", str(plain), *model)
    assert rc == 0, err

    steps = step_scores(traj)
    assert [(s.trajectory, s.step) for s in steps] == STEPS
    # the same requests: context and reply strings, and the token ids the model was fed
    tplan = read_plan(_plan_path(traj))
    pplan = read_plan(_plan_path(plain))
    for a, b in zip(tplan.instances, pplan.instances, strict=True):
        assert (a.context, a.continuation) == (b.context, b.continuation)
        assert (a.context_ids, a.continuation_ids) == (b.context_ids, b.continuation_ids)
    rows = read_results(plain).sort("doc_id")
    plain_ll = rows["loglikelihood"].to_list()
    for s, ll in zip(steps, plain_ll, strict=True):
        assert LOGLIKELIHOOD.close(s.loglikelihood, ll), (s, ll)
        assert s.loglikelihood < 0 and s.n_tokens > 0
    # per trajectory: the sum of its steps, the mean per token, the share of greedy steps
    by = {t.trajectory: t for t in trajectory_scores(steps)}
    sums = [s for s in steps if s.trajectory == "sums"]
    assert ARITHMETIC.close(by["sums"].loglikelihood, math.fsum(s.loglikelihood for s in sums))
    assert ARITHMETIC.close(
        by["sums"].loglikelihood_per_token, by["sums"].loglikelihood / sum(s.n_tokens for s in sums)
    )
    assert by["capital"].greedy == float(steps[2].is_greedy)
    rc, out, err = cli("trajectories", str(traj), "--json")
    assert rc == 0, err
    assert json.loads(out)["trajectories"][0]["trajectory"] == "sums"


def _plan_path(rdir: Path) -> Path:
    from lmeval.plans.results.manifest import plan_of, read_manifest

    return Path(plan_of(rdir, read_manifest(rdir)))
