"""WinoGrande as a multiple-input task (lm-eval's convention): the context varies, the continuation is fixed.

``doc_to_text`` gives the gold option's index, ``doc_to_choice`` the sentence up to the blank filled with
each option, ``doc_to_target`` the rest of the sentence after the blank.
"""

from __future__ import annotations

from typing import Any


def doc_to_text(doc: dict[str, Any]) -> int:
    return {"1": 0, "2": 1}[doc["answer"]]


def doc_to_target(doc: dict[str, Any]) -> str:
    sentence: str = doc["sentence"]
    return sentence[sentence.index("_") + 1 :].strip()


def doc_to_choice(doc: dict[str, Any]) -> list[str]:
    sentence: str = doc["sentence"]
    blank = sentence.index("_")
    return [sentence[:blank] + doc["option1"], sentence[:blank] + doc["option2"]]
