"""The plan side: each document's checked texts and the index of their n-gram hashes.

Fields: ``prompt`` is the rendered question, the part of the Instance context after the few-shot block (and
the description): when the task has few-shot examples or a description, the text after the last
``fewshot_delimiter``; otherwise the whole context. The few-shot block is train data by design and is never
counted. Distinct contexts of one document (multiple-input tasks) each count. ``target`` is the target text
(an index target is the choice it names); ``choices`` are the answer choices. A text shorter than ``n`` words
has no n-grams.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lmeval.contamination.ngrams import WordHasher, text_grams
from lmeval.plans import DocRecord, InstanceRecord, PlanHeader, PlanReader

FIELDS: tuple[str, ...] = ("prompt", "target", "choices")


@dataclass
class PlanIndex:
    """Every document's distinct n-gram hashes: ``keys`` sorted and unique, ``owners[i]`` the document
    indices (into ``docs``) holding ``keys[i]``."""

    header: PlanHeader
    docs: list[tuple[str, int]]  # (task, doc_id) per document index
    n_grams: list[int]  # distinct n-grams per document
    keys: np.ndarray
    owners: dict[int, list[int]] = field(default_factory=dict)
    present: np.ndarray = field(default_factory=lambda: np.zeros(1, dtype=bool))
    """A prefilter: ``present[h & (len - 1)]`` is True for every key ``h`` (few false positives)."""


def question_of(context: str, config: dict[str, Any], num_fewshot: int) -> str:
    """The rendered question of a context: what follows the few-shot block and the description."""
    delim = config.get("fewshot_delimiter", "\n\n")
    if (num_fewshot or config.get("description")) and isinstance(delim, str) and delim:
        return context.rsplit(delim, 1)[-1]
    return context


def _target_texts(rec: DocRecord) -> list[str]:
    targets = rec.target if isinstance(rec.target, list) else [rec.target]
    out = []
    for t in targets:
        if isinstance(t, int) and not isinstance(t, bool) and rec.choices and -len(rec.choices) <= t < len(rec.choices):
            out.append(rec.choices[t])
        elif isinstance(t, str):
            out.append(t)
    return out


def doc_texts(
    rec: DocRecord, contexts: list[str], fields: tuple[str, ...], config: dict[str, Any], shots: int
) -> list[str]:
    texts: list[str] = []
    if "prompt" in fields:
        texts += sorted({question_of(c, config, shots) for c in contexts})
    if "target" in fields:
        texts += _target_texts(rec)
    if "choices" in fields and rec.choices:
        texts += [c for c in rec.choices if isinstance(c, str)]
    return texts


def build_plan_index(plan_path: str, n: int, fields: tuple[str, ...]) -> PlanIndex:
    """Read the plan once (streamed) and hash every document's n-grams."""
    hasher = WordHasher()
    docs: list[tuple[str, int]] = []
    n_grams: list[int] = []
    per_doc: list[np.ndarray] = []
    with PlanReader(plan_path) as reader:
        header = reader.header
        tasks = {t.name: t for t in header.tasks}
        pending: DocRecord | None = None
        contexts: list[str] = []

        def flush() -> None:
            if pending is None:
                return
            ts = tasks[pending.task]
            grams = [text_grams(t, n, hasher) for t in doc_texts(pending, contexts, fields, ts.config, ts.num_fewshot)]
            g = np.unique(np.concatenate(grams)) if grams else np.empty(0, dtype=np.uint64)
            docs.append((pending.task, pending.doc_id))
            n_grams.append(int(g.shape[0]))
            per_doc.append(g)

        for rec in reader:
            if isinstance(rec, DocRecord):
                flush()
                pending, contexts = rec, []
            elif isinstance(rec, InstanceRecord):
                contexts.append(rec.context)
        flush()
    owners: dict[int, list[int]] = {}
    for i, g in enumerate(per_doc):
        for h in g.tolist():
            owners.setdefault(h, []).append(i)
    keys = np.array(sorted(owners), dtype=np.uint64)
    size = 1 << max(16, min(30, (max(1, keys.shape[0]) * 32).bit_length()))
    present = np.zeros(size, dtype=bool)
    present[(keys & np.uint64(size - 1)).astype(np.int64)] = True
    return PlanIndex(header, docs, n_grams, keys, owners, present)
