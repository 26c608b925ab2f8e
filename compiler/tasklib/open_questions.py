"""The shipped judged task's documents: ten open questions of our own (``open_questions.jsonl`` beside this
module, written for lmeval, not copied from a benchmark), each with a short reference answer for the judge."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DATA = Path(__file__).with_name("open_questions.jsonl")


def dataset(**_: Any) -> dict[str, list[dict[str, Any]]]:
    """``{"test": [...]}``: the questions in file order."""
    with open(DATA, encoding="utf-8") as f:
        return {"test": [json.loads(line) for line in f if line.strip()]}
