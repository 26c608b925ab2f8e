"""MT-Bench's documents (lm-sys/FastChat ``fastchat/llm_judge/data/mt_bench/``): the 80 two-turn questions of
``question.jsonl`` (``question_id``, ``category``, ``turns``), each with ``reference``: the two GPT-4 reference
answers of ``reference_answer_gpt-4.jsonl`` (``choices[0].turns``) for the categories FastChat judges against a
reference (math, reasoning, coding: its ``NEED_REF_CATS``), else null. ``question.jsonl``'s own ``reference``
field (a few questions of other categories carry one) is not used by FastChat's judge, nor here. Read from the
local data folder (``run.data_dir`` holding ``mt_bench/``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

NEED_REF_CATS = ("math", "reasoning", "coding")
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
