"""Contamination check of a plan against a corpus (``lmeval contamination``): which documents' n-grams
occur in a corpus (GPT-3 / lm-eval normalisation, word 13-grams), with their locations; ``excluded`` gives
``lmeval score --exclude`` the contaminated documents to leave out."""

from __future__ import annotations

from lmeval.common import face_names
from lmeval.contamination.ngrams import NGRAM as NGRAM
from lmeval.contamination.ngrams import words as words
from lmeval.contamination.plantext import FIELDS as FIELDS
from lmeval.contamination.plantext import build_plan_index
from lmeval.contamination.report import REPORT_FILES as REPORT_FILES
from lmeval.contamination.report import Report as Report
from lmeval.contamination.report import build_contamination_report
from lmeval.contamination.report import excluded as excluded
from lmeval.contamination.report import write_contamination_report as write_contamination_report
from lmeval.contamination.scan import match_corpus

__all__ = face_names(__name__)


def check_contamination(
    plan: str, corpus: list[str], *, n: int = NGRAM, fields: tuple[str, ...] = FIELDS, text_field: str = "text",
    min_fraction: float = 0.0, workers: int = 0, address: str | None = None,
) -> Report:  # fmt: skip
    """The contamination report of ``plan`` against the ``corpus`` files and folders (on Ray with ``workers``
    shards or at ``address``: the same report)."""
    index = build_plan_index(plan, n, fields)
    matches, stats = match_corpus(index, n, corpus, text_field, workers, address)
    return build_contamination_report(index, matches, stats, n, fields, min_fraction)
