"""Custom filter steps for the ``hooks`` scorer golden (``function: custom``, ``filter_fn: !function``).

lm-eval 0.4.13 runs them itself in make_golden.py; lmeval runs the same file under ``--trust-code``.
Signature of lm-eval's CustomFilter: ``filter_fn(resps, docs)``, one list of responses per document.
"""

from __future__ import annotations

from typing import Any


def last_line(resps: list[list[str]], docs: list[dict[str, Any]]) -> list[list[str]]:
    """Each response's last non-empty line."""
    return [[(r.strip().splitlines() or [""])[-1] for r in resp] for resp in resps]


def gold_if_mentioned(resps: list[list[str]], docs: list[dict[str, Any]]) -> list[list[str]]:
    """The document's gold number where a response mentions it, else the response stripped (uses docs)."""
    out = []
    for resp, doc in zip(resps, docs, strict=True):
        gold = str(doc["answer"]).split("####")[-1].strip()
        out.append([gold if gold in r else r.strip() for r in resp])
    return out


def process_results(doc: dict[str, Any], results: list[str]) -> dict[str, float]:
    """A task's own per-document scoring (``process_results: !function``): whether the gold number appears,
    and the response's length relative to the worked answer's."""
    answer = str(doc["answer"])
    gold = answer.split("####")[-1].strip()
    response = results[0]
    return {"mentions_gold": float(gold in response), "length_ratio": len(response) / max(1, len(answer))}
