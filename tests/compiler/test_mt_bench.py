"""MT-Bench shipped as a chained task (#56): the 80 questions with their categories and GPT-4 references (math,
reasoning and coding only, as FastChat judges), run through both turns on the fake backend, and its two judges'
prompts equal to FastChat's own templates (mt_bench/judge_prompts.jsonl, formatted with str.format) for a
reference category and another, the turn-2 judge over the whole conversation."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from lmeval.plans import read_chain, read_plan, read_results, stage_plan
from tests.support import cli_in_process as cli
from tests.support import data_dir


def _jsonl(name: str) -> list[dict]:  # type: ignore[type-arg]
    with open(data_dir() / "mt_bench" / name, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _judge_plan(run: Path, judge: str, out: Path) -> dict[int, str]:
    rc, _, err = cli("judge", str(run), "--judge", judge, "model=tiny", "--out", str(out))
    assert rc == 0, err
    return {i.doc_id: i.context for i in read_plan(out).instances}


def test_mt_bench_chain_and_judges(tmp_path: Path) -> None:
    root = tmp_path / "run"
    rc, _, err = cli(
        "run",
        "+task=mt_bench",
        "run.apply_chat_template=true",
        f"run.data_dir={data_dir()}",
        "model.backend=fake",
        "--out",
        str(root),
        "--plan-out",
        str(tmp_path / "p.msgpack"),
        "--no-progress",
    )
    assert rc == 0, err
    questions = _jsonl("question.jsonl")
    refs = {r["question_id"]: r["choices"][0]["turns"] for r in _jsonl("reference_answer_gpt-4.jsonl")}
    chain = read_chain(root)
    assert [s.turn for s in chain.stages] == [1, 2]
    t1, t2 = (read_plan(stage_plan(root, s)) for s in chain.stages)
    docs = [d.doc for d in t1.docs]
    assert len(docs) == 80 and Counter(d["category"] for d in docs) == Counter(
        {c: 10 for c in ("writing", "roleplay", "reasoning", "math", "coding", "extraction", "stem", "humanities")}
    )
    with_ref = {d["question_id"] for d in docs if d["reference"] is not None}
    assert with_ref == set(refs) and len(with_ref) == 30
    assert all(d["reference"] == refs[d["question_id"]] for d in docs if d["reference"])
    assert [d["turns"] for d in docs] == [q["turns"] for q in questions]
    assert t2.header.n_docs == 80

    prompts = {p["name"]: p for p in _jsonl("judge_prompts.jsonl")}
    a1 = dict(read_results(root / "turn1").select("doc_id", "response").rows())
    a2 = dict(read_results(root / "turn2").select("doc_id", "response").rows())
    j1 = _judge_plan(root / "turn1", "mt_bench_turn1", tmp_path / "j1.msgpack")
    j2 = _judge_plan(root / "turn2", "mt_bench_turn2", tmp_path / "j2.msgpack")
    math = next(i for i, d in enumerate(docs) if d["category"] == "math")
    writing = next(i for i, d in enumerate(docs) if d["category"] == "writing")
    for doc_id, single, multi in (
        (math, "single-math-v1", "single-math-v1-multi-turn"),
        (writing, "single-v1", "single-v1-multi-turn"),
    ):
        q, ref = docs[doc_id]["turns"], docs[doc_id]["reference"] or ["", ""]
        user1 = prompts[single]["prompt_template"].format(question=q[0], answer=a1[doc_id], ref_answer_1=ref[0])
        assert _chat(prompts[single]["system_prompt"], user1) in j1[doc_id]
        user2 = prompts[multi]["prompt_template"].format(
            question_1=q[0],
            question_2=q[1],
            answer_1=a1[doc_id],
            answer_2=a2[doc_id],
            ref_answer_1=ref[0],
            ref_answer_2=ref[1],
        )
        assert _chat(prompts[multi]["system_prompt"], user2) in j2[doc_id]


def _chat(system: str, user: str) -> str:
    """The tiny judge model's ChatML rendering of a system and a user message."""
    return f"<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>"


def test_mt_bench_needs_its_local_data(tmp_path: Path) -> None:
    rc, _, err = cli("compile", "+task=mt_bench", "run.apply_chat_template=true", "--out", str(tmp_path / "p"))
    assert rc == 2 and "mt_bench" in err and "run.data_dir" in err and len(err.strip().splitlines()) == 1
