"""Where the corpus is matched: in this process, or in shards on Ray (``shards``); the report is the same."""

from __future__ import annotations

from lmeval.contamination.check import Matches, in_corpus_order, match_files
from lmeval.contamination.corpus import CorpusStats, corpus_files
from lmeval.contamination.plantext import PlanIndex
from lmeval.contamination.shards import match_on_ray


def match_corpus(
    index: PlanIndex, n: int, paths: list[str], text_field: str, workers: int = 0, address: str | None = None
) -> tuple[Matches, CorpusStats]:
    """Stream the corpus ``paths`` against ``index``: in this process, or on Ray with ``workers`` (or at
    ``address``) shards."""
    files = [str(p) for p in corpus_files(paths)]
    if workers or address:
        matches, stats = match_on_ray(index, n, files, text_field, max(1, workers), address)
    else:
        matches, stats = match_files(index, n, files, text_field)
    return in_corpus_order(matches, files), stats
