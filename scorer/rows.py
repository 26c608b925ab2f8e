"""A results directory's rows shaped for scoring, read with the contract's reader (``plans.results.read_parts``).

Only the columns scoring needs plus the key columns every row is checked by (``plans.rowcheck``: each row
must be the answer to its Instance of the plan, once), rows split by task, each task's rows sorted by
(doc_id, idx) only when they are not already.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from lmeval.plans import KEY_COLUMNS, PART, RESULT_COLUMNS, part_files, read_parts, reraised_as
from lmeval.scorer.errors import ScoreError

COLUMNS = ("task", "doc_id", "idx", "loglikelihood", "is_greedy", "n_continuation_tokens", "response", "responses",
           "finish_reason", "reasoning_tokens", "thinking_forced")  # fmt: skip


@dataclass
class Rows:
    by_task: dict[str, pl.DataFrame]  # COLUMNS + KEY_COLUMNS + part, sorted by (doc_id, idx)
    parts: list[Path]  # the part files (``part`` indexes this list)

    def keys(self, tasks: list[str]) -> pl.DataFrame:
        """The key columns (and ``part``) of every row, for ``plans.rowcheck.check_rows``: the tasks in
        ``tasks`` order first (each sorted by doc_id, idx), then rows of any other task."""
        cols = [*KEY_COLUMNS, PART]
        order = [t for t in tasks if t in self.by_task] + [t for t in self.by_task if t not in tasks]
        frames = [self.by_task[t].select(cols) for t in order]
        return pl.concat(frames) if frames else pl.DataFrame()


def read_rows(results_dir: str | os.PathLike[str]) -> Rows:
    """Per task, its result rows sorted by (doc_id, idx)."""
    parts = part_files(results_dir)
    with reraised_as(ScoreError):
        df = read_parts(parts, [c for c in RESULT_COLUMNS if c in COLUMNS or c in KEY_COLUMNS])
    out: dict[str, pl.DataFrame] = {}
    for (task,), rows in df.partition_by("task", as_dict=True, maintain_order=True).items():
        dd, di = pl.col("doc_id").diff(), pl.col("idx").diff()
        strictly_sorted = ((dd > 0) | ((dd == 0) & (di > 0))).fill_null(True).all()
        if not rows.select(strictly_sorted).item():
            rows = rows.sort(["doc_id", "idx"])
        out[str(task)] = rows
    return Rows(out, parts)
