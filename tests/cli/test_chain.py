"""Chained plans on the fake backend (#56): ``lmeval run`` of a multi-turn task runs every stage; each later
stage's prompts hold the model's own earlier answers exactly, its plan names its parent plan and the parent's
results hash; a kill during turn 2 resumes without touching turn 1; ``lmeval diff`` of two chains names the stage
and turn where prompts first differ; ``lmeval show`` reads a chain. (SmolLM2: tests/e2e/test_chain_smollm2.py.)"""

from __future__ import annotations

import json
from pathlib import Path

from lmeval.plans import read_chain, read_plan, read_results, results_hash, stage_plan
from tests.cli.chain_task import write_chain_task
from tests.executor.conftest import run_cli, snapshot
from tests.support import cli_in_process as cli

FAKE = ["run.apply_chat_template=true", "model.backend=fake", "run.tasks=[convo]"]


def _run(tasks: Path, out: Path, *extra: str) -> tuple[int, str, str]:
    return cli("run", f"run.include_path={tasks}", *FAKE, "--out", str(out), "--plan-out", str(out.parent /
               f"{out.name}.msgpack"), "--no-progress", *extra)  # fmt: skip


def test_stages_chain_answers_into_prompts(tmp_path: Path) -> None:
    rc, out, err = _run(write_chain_task(tmp_path / "t"), tmp_path / "run")
    assert rc == 0, err
    root = tmp_path / "run"
    chain = read_chain(root)
    assert [s.turn for s in chain.stages] == [1, 2, 3]  # MT-Bench: 2 turns; ours: 3 and 1
    plans = [read_plan(stage_plan(root, s)) for s in chain.stages]
    assert [p.header.n_docs for p in plans] == [4, 3, 1]
    for k in (1, 2):
        parent, child, res = plans[k - 1], plans[k], root / f"turn{k}"
        rows = read_results(res).select("task", "doc_id", "idx", "response").rows()
        answers = {(t, d): r for t, d, _, r in rows}
        link = child.header.config["chain"]
        assert link == {"turn": k + 1, "parent": {"plan_hash": parent.header.plan_hash,
                                                  "results_hash": results_hash(rows)}}  # fmt: skip
        assert chain.stages[k - 1].results_hash == link["parent"]["results_hash"]
        parent_msgs = {(i.task, i.doc_id): i.messages for i in parent.instances}
        docs = {d.doc_id: d.doc for d in child.docs}
        for inst in child.instances:
            answer = answers[(inst.task, inst.doc_id)]
            assert answer and answer in inst.context  # the model's own answer, verbatim, in the prompt
            assert inst.messages == [*parent_msgs[(inst.task, inst.doc_id)],
                                     {"role": "assistant", "content": answer},
                                     {"role": "user", "content": docs[inst.doc_id]["turns"][k]}]  # fmt: skip
            assert inst.context.endswith("<|im_start|>assistant\n")  # the chat template's generation prompt
            assert docs[inst.doc_id]["turn_answers"][-1] == answer
    assert out.strip().splitlines()[-1] == str(root)

    # the same compile by hand (runs executed apart): the same stage 2 plan, byte for byte
    rc, said, err = cli("next-turn", str(stage_plan(root, chain.stages[0])), str(root / "turn1"), "--out",
                        str(tmp_path / "again.msgpack"))  # fmt: skip
    assert rc == 0, err
    assert (tmp_path / "again.msgpack").read_bytes() == stage_plan(root, chain.stages[1]).read_bytes()
    rc, said, err = cli("next-turn", str(stage_plan(root, chain.stages[2])), str(root / "turn3"))
    assert rc == 0 and "the chain ends here" in said, err

    rc, shown, err = cli("show", str(root))
    assert rc == 0, err
    assert "3 stages" in shown and f"compiled from plan {plans[0].header.plan_hash[:12]}" in shown


def test_kill_during_turn_two_resumes_without_turn_one(tmp_path: Path) -> None:
    tasks, root = write_chain_task(tmp_path / "t"), tmp_path / "run"
    args = ["run", f"run.include_path={tasks}", *FAKE, "--out", str(root), "--plan-out", str(tmp_path / "p.msgpack"),
            "--no-progress", "--part-size", "1"]  # fmt: skip
    # one part per row: turn 1 writes 4 parts, the 5th is turn 2's first; killed right after it
    killed = run_cli(*args, env={"LMEVAL_EXECUTOR_FAULT": "part:5"})
    assert killed.returncode != 0
    turn1 = snapshot(root / "turn1")
    assert json.loads((root / "turn1" / "manifest.json").read_text())["finished"]
    assert not json.loads((root / "turn2" / "manifest.json").read_text())["finished"]
    assert len(read_results(root / "turn2")) == 1
    plan2 = stage_plan(root, read_chain(root).stages[1])
    rc, _, err = cli("next-turn", str(plan2), str(root / "turn2"))  # stage 3 needs all of turn 2's answers
    assert rc == 2 and "2 of 3 answers missing (first: convo doc" in err and len(err.strip().splitlines()) == 1
    resumed = run_cli(*args)
    assert resumed.returncode == 0, resumed.stderr
    after = snapshot(root / "turn1")
    assert {k: v for k, v in after.items() if k.startswith(("part", "manifest"))} == {
        k: v for k, v in turn1.items() if k.startswith(("part", "manifest"))}  # fmt: skip
    executed = [line for line in resumed.stderr.splitlines() if line.startswith("executed ")]
    # the same folder for another chain is refused before anything is written
    chain_json = (root / "chain.json").read_bytes()
    other = run_cli(*args, "run.system_instruction=Be brief.")
    assert other.returncode == 2 and "holds a chained run whose turn 1 is plan" in other.stderr
    assert (root / "chain.json").read_bytes() == chain_json
    assert not any(line.endswith(str(root / "turn1")) for line in executed)  # turn 1: no engine, nothing run
    assert any("resumed 1 of 3" in line and line.endswith(str(root / "turn2")) for line in executed)
    assert [s.turn for s in read_chain(root).stages] == [1, 2, 3]


def test_diff_of_two_chains_names_stage_and_turn(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    assert _run(write_chain_task(tmp_path / "ta"), a)[0] == 0
    assert _run(write_chain_task(tmp_path / "tb", edit={1: "Rewrite it as a haiku."}), b)[0] == 0
    rc, out, err = cli("diff", str(a), str(b))
    assert rc == 1, err
    assert "prompts first differ at stage 2 (turn 2): task convo, doc 1" in out
    assert "+Rewrite it as a haiku." in out
    rc, out, _ = cli("diff", str(a), str(a))
    assert rc == 0 and "identical chains: 3 stages" in out
    # turn 1's prompts equal, its generation settings not: other answers, so turn 2's prompts differ first
    c = tmp_path / "c"
    assert _run(tmp_path / "ta", c, "run.gen_kwargs={max_gen_toks:4}")[0] == 0
    rc, out, err = cli("diff", str(a), str(c))
    assert rc == 1, err
    assert "stage 1 (turn 1): plans differ, prompts equal" in out
    assert "prompts first differ at stage 2 (turn 2): task convo, doc 0" in out


def test_multi_turn_needs_a_chat_template(tmp_path: Path) -> None:
    rc, _, err = cli("compile", f"run.include_path={write_chain_task(tmp_path / 't')}", "run.tasks=[convo]",
                     "--out", str(tmp_path / "p.msgpack"))  # fmt: skip
    assert rc == 2 and "task convo" in err and "turns_field" in err and "apply_chat_template" in err
    assert len(err.strip().splitlines()) == 1


def test_bad_turns_are_refused_at_compile_in_one_line(tmp_path: Path) -> None:
    tasks = write_chain_task(tmp_path / "t")
    data = tasks / "convo.jsonl"
    lines = data.read_text().splitlines()
    lines[1] = json.dumps({**json.loads(lines[1]), "turns": "not a list"})
    data.write_text("\n".join(lines) + "\n")
    rc, _, err = _run(tasks, tmp_path / "run")  # refused at compile, before turn 1 runs
    assert rc == 2 and len(err.strip().splitlines()) == 1, err
    assert "task convo" in err and "turns_field" in err and "doc 1" in err
    assert "document field 'turns' is not a non-empty list of user turns" in err
    assert not (tmp_path / "run").exists()
