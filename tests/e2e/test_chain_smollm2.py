"""Acceptance 1 of #56 on the real model (SmolLM2-135M-Instruct, ``model=smollm2``, hf backend: one model load per
stage, no engine start): a chained multi-turn task (MT-Bench's first two questions and a one-turn
conversation of our own; 8 generated tokens a turn) run by ``lmeval run`` and killed during turn 2, then rerun.
Turn 2's prompts hold the model's own turn-1 answers exactly (compared with turn 1's results), the stage plans'
hashes chain, and the rerun resumes turn 2 without recomputing turn 1 (its files are untouched)."""

from __future__ import annotations

import json
from pathlib import Path

from lmeval.plans import read_chain, read_plan, read_results, results_hash, stage_plan
from tests.cli.chain_task import write_chain_task
from tests.executor.conftest import run_cli, snapshot


def test_smollm2_two_turns_chain_and_resume(tmp_path: Path) -> None:
    tasks, root = write_chain_task(tmp_path / "t", n_mt=2, max_gen_toks=8, three_turns=False), tmp_path / "run"
    args = ["run", f"run.include_path={tasks}", "run.tasks=[convo]", "run.apply_chat_template=true", "model=smollm2",
            "model.backend=hf", "--out", str(root), "--plan-out", str(tmp_path / "p.msgpack"), "--no-progress",
            "--part-size", "1"]  # fmt: skip
    env = {"HF_HUB_OFFLINE": "1"}
    # one part per row: turn 1 writes 3 parts; the 4th is turn 2's first, and the process is killed right after it
    killed = run_cli(*args, env={**env, "LMEVAL_EXECUTOR_FAULT": "part:4"}, timeout=900)
    assert killed.returncode != 0 and (root / "turn2").is_dir(), killed.stderr[-2000:]
    assert len(read_results(root / "turn2")) == 1
    turn1 = snapshot(root / "turn1")
    resumed = run_cli(*args, env=env, timeout=900)
    assert resumed.returncode == 0, resumed.stderr[-2000:]

    # turn 1 was not recomputed: its rows and manifest are byte for byte those of the killed run, no engine ran
    kept = ("part", "manifest")
    assert {k: v for k, v in snapshot(root / "turn1").items() if k.startswith(kept)} == {
        k: v for k, v in turn1.items() if k.startswith(kept)}  # fmt: skip
    executed = [line for line in resumed.stderr.splitlines() if line.startswith("executed ")]
    assert not any(line.endswith(str(root / "turn1")) for line in executed)
    assert any("resumed 1 of 2" in line and line.endswith(str(root / "turn2")) for line in executed), executed

    chain = read_chain(root)
    assert [s.turn for s in chain.stages] == [1, 2]
    p1, p2 = (read_plan(stage_plan(root, s)) for s in chain.stages)
    rows = read_results(root / "turn1").select("task", "doc_id", "idx", "response").rows()
    answers = {d: r for _, d, _, r in rows}
    assert all(isinstance(a, str) and a.strip() for a in answers.values())  # the model said something
    assert p2.header.config["chain"] == {"turn": 2, "parent": {"plan_hash": p1.header.plan_hash,
                                                               "results_hash": results_hash(rows)}}  # fmt: skip
    assert chain.stages[0].results_hash == results_hash(rows)
    assert chain.stages[1].results_hash == results_hash(
        read_results(root / "turn2").select("task", "doc_id", "idx", "response").rows()
    )
    docs = {d.doc_id: d.doc for d in p1.docs}
    assert sorted(i.doc_id for i in p2.instances) == [d for d in sorted(docs) if len(docs[d]["turns"]) > 1]
    for inst in p2.instances:
        a, (q1, q2) = answers[inst.doc_id], docs[inst.doc_id]["turns"][:2]
        # SmolLM2's ChatML template (with its default system turn): turn 1, the model's answer verbatim, turn 2
        assert f"<|im_start|>user\n{q1}<|im_end|>\n<|im_start|>assistant\n{a}<|im_end|>\n<|im_start|>user\n{q2}" \
            "<|im_end|>\n<|im_start|>assistant\n" in inst.context  # fmt: skip
        assert inst.context.startswith("<|im_start|>system\n")
    results = json.loads((root / "turn2" / "results.json").read_text())
    assert results["results"]["convo"]["exact_match,none"] is not None  # each stage scored
