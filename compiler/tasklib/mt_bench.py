"""MT-Bench's documents (lm-sys/FastChat ``fastchat/llm_judge/data/mt_bench/``): the 80 two-turn questions of
``question.jsonl`` (``question_id``, ``category``, ``turns``), each with ``reference``: the two GPT-4 reference
answers of ``reference_answer_gpt-4.jsonl`` (``choices[0].turns``) for the categories FastChat judges against a
reference (math, reasoning, coding: its ``NEED_REF_CATS``), else null. ``question.jsonl``'s own ``reference``
field (a few questions of other categories carry one) is not used by FastChat's judge, nor here. Read from the
local data folder (``run.data_dir`` holding ``mt_bench/``). ``dataset_fastchat``: the same documents, each with
the ``generation_kwargs`` FastChat generates its category's answers with (task ``mt_bench_fastchat``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

NEED_REF_CATS = ("math", "reasoning", "coding")
# FastChat's sampling temperature per category (common.py temperature_config; gen_model_answer.py: 0.7 for a category
# it does not list, greedy below 1e-4)
FASTCHAT_TEMPERATURE = {"writing": 0.7, "roleplay": 0.7, "extraction": 0.0, "math": 0.0, "coding": 0.0,
                        "reasoning": 0.0, "stem": 0.1, "humanities": 0.1}  # fmt: skip
FASTCHAT_MAX_NEW_TOKENS = 1024
QUESTIONS, REFERENCES = "question.jsonl", "reference_answer_gpt-4.jsonl"


def _rows(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def dataset(data_dir: str | None = None, **_: Any) -> dict[str, list[dict[str, Any]]]:
    """``{"test": [...]}``: the questions in file order, references joined by question id."""
    if data_dir is None:
        raise ValueError("MT-Bench is read from local files: set run.data_dir to a folder holding mt_bench/ "
                         f"({QUESTIONS}, {REFERENCES})")  # fmt: skip
    folder = Path(data_dir)
    refs = {r["question_id"]: r["choices"][0]["turns"] for r in _rows(folder / REFERENCES)}
    out = []
    for q in _rows(folder / QUESTIONS):
        ref = refs.get(q["question_id"]) if q["category"] in NEED_REF_CATS else None
        out.append({"question_id": q["question_id"], "category": q["category"], "turns": q["turns"],
                    "reference": ref})  # fmt: skip
    return {"test": out}


def dataset_fastchat(data_dir: str | None = None, **_: Any) -> dict[str, list[dict[str, Any]]]:
    """``dataset``'s documents with FastChat's per-category sampling (``FASTCHAT_TEMPERATURE``) as each document's
    ``generation_kwargs`` (the task's ``doc_generation_kwargs: true`` makes them the document's requests')."""
    out = []
    for doc in dataset(data_dir)["test"]:
        t = FASTCHAT_TEMPERATURE.get(doc["category"], 0.7)
        gen = {"until": [], "max_gen_toks": FASTCHAT_MAX_NEW_TOKENS, "do_sample": t >= 1e-4, "temperature": t}
        out.append({**doc, "generation_kwargs": gen})
    return {"test": out}
