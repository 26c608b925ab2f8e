"""A small multi-turn task for the chained-plan tests (#56): the first MT-Bench questions (the shared data's
``mt_bench/question.jsonl``, two user turns each) plus a three-turn and a one-turn conversation of our own, so
that conversations end at different stages."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.support import data_dir

OURS = [
    {"question_id": 9001, "category": "ours", "turns": ["What is 2+2?", "And times 3?", "Now halve it."]},
    {"question_id": 9002, "category": "ours", "turns": ["Say hello."]},
]


def write_chain_task(dest: Path, n_mt: int = 2, max_gen_toks: int = 8, name: str = "convo",
                     edit: dict[int, str] | None = None, three_turns: bool = True) -> Path:  # fmt: skip
    """``dest/NAME.yaml`` over ``dest/NAME.jsonl``: ``n_mt`` MT-Bench questions then ours (without the three-turn
    one unless ``three_turns``); ``edit`` replaces the second user turn of the given rows (to make two chains
    that differ from turn 2 on)."""
    dest.mkdir(parents=True, exist_ok=True)
    with open(data_dir() / "mt_bench" / "question.jsonl", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()][:n_mt] + [
            dict(r) for r in OURS if three_turns or len(r["turns"]) != 3
        ]
    for i, text in (edit or {}).items():
        rows[i] = {**rows[i], "turns": [rows[i]["turns"][0], text, *rows[i]["turns"][2:]]}
    data = dest / f"{name}.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    cfg = {"task": name, "dataset_path": "json", "dataset_kwargs": {"data_files": {"test": str(data)}},
           "output_type": "generate_until", "test_split": "test", "doc_to_text": "{{turns[0]}}",
           "doc_to_target": "", "turns_field": "turns",
           "generation_kwargs": {"until": [], "max_gen_toks": max_gen_toks, "do_sample": False},
           "metric_list": [{"metric": "exact_match"}]}  # fmt: skip
    (dest / f"{name}.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
    return dest
