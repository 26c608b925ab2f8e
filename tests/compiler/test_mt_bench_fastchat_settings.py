"""``mt_bench_fastchat`` (#62 item 2): MT-Bench answered with FastChat's per-category sampling, as
fastchat/llm_judge/gen_model_answer.py generates it (common.py ``temperature_config``: writing and roleplay 0.7,
stem and humanities 0.1, extraction, math, coding and reasoning 0.0; sampling only at 1e-4 and above), in both
turns; ``mt_bench`` stays greedy everywhere. A ``doc_generation_kwargs`` that is not a boolean is one line."""

from __future__ import annotations

from pathlib import Path

from lmeval.plans import read_chain, read_plan, stage_plan
from tests.support import cli_in_process as cli
from tests.support import data_dir

FASTCHAT = {"writing": 0.7, "roleplay": 0.7, "extraction": 0.0, "math": 0.0, "coding": 0.0, "reasoning": 0.0,
            "stem": 0.1, "humanities": 0.1}  # fmt: skip


def test_each_category_is_answered_at_fastchats_temperature_in_both_turns(tmp_path: Path) -> None:
    root = tmp_path / "run"
    rc, _, err = cli("run", "+task=mt_bench_fastchat", "run.apply_chat_template=true", f"run.data_dir={data_dir()}",
                     "model.backend=fake", "--out", str(root), "--no-progress")  # fmt: skip
    assert rc == 0, err
    stages = [read_plan(stage_plan(root, s)) for s in read_chain(root).stages]
    assert len(stages) == 2
    cats = {d.doc_id: d.doc["category"] for d in stages[0].docs}
    assert set(cats.values()) == set(FASTCHAT)
    for plan in stages:
        assert len(plan.instances) == 80
        for inst in plan.instances:
            gk = inst.generation_kwargs or {}
            t = FASTCHAT[cats[inst.doc_id]]
            assert gk["temperature"] == t and gk["do_sample"] is (t >= 1e-4) and gk["max_gen_toks"] == 1024, gk


def test_mt_bench_itself_stays_greedy(tmp_path: Path) -> None:
    rc, _, err = cli("compile", "+task=mt_bench", "run.apply_chat_template=true", f"run.data_dir={data_dir()}",
                     "--out", str(tmp_path / "p.msgpack"))  # fmt: skip
    assert rc == 0, err
    gks = [i.generation_kwargs or {} for i in read_plan(tmp_path / "p.msgpack").instances]
    assert len(gks) == 80 and all(g["temperature"] == 0.0 and g["do_sample"] is False for g in gks)


def test_doc_generation_kwargs_must_be_a_boolean(tmp_path: Path) -> None:
    (tmp_path / "d.jsonl").write_text('{"q": "Hi?"}\n')
    (tmp_path / "t.yaml").write_text(
        f"task: t\ndataset_path: json\ndataset_kwargs: {{data_files: {{test: {tmp_path / 'd.jsonl'}}}}}\n"
        'test_split: test\noutput_type: generate_until\ndoc_to_text: "{{q}}"\ndoc_to_target: ""\n'
        "doc_generation_kwargs: yes please\n"
    )
    rc, _, err = cli("compile", f"run.include_path={tmp_path}", "run.tasks=[t]", "--out", str(tmp_path / "p"))
    assert rc == 2 and "doc_generation_kwargs" in err and "true or false" in err and err.count("\n") == 1, err
