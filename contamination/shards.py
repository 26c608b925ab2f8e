"""``lmeval contamination --workers N [--ray ADDR]``: the corpus cut into N shards, each matched by a Ray
task against the same plan index (put once in Ray's object store), the matches merged on the driver. Ray
Core only, imported here alone. A shard is every N-th span of the corpus (``ranges.plan_spans``: whole files,
and large files cut into byte ranges at line starts or Parquet row groups), so one 100 GB file is N shards.
The report equals one process's: matched n-grams are sets, rows are made absolute (``ranges.absolute_rows``),
and locations are put in corpus order (``check.in_corpus_order``) before the first ``MAX_LOCATIONS`` per
document are kept.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from lmeval.contamination.check import Matches, match_spans
from lmeval.contamination.corpus import CorpusStats, Span
from lmeval.contamination.errors import ContaminationError
from lmeval.contamination.plantext import PlanIndex
from lmeval.contamination.ranges import absolute_rows, plan_spans


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ContaminationError(
            "--workers/--ray run on Ray, which is not installed: pip install 'lmeval[ray]'"
        ) from None
    return ray


def merge_stats(parts: list[CorpusStats]) -> CorpusStats:
    out = CorpusStats()
    for s in parts:
        out.files += s.files
        out.bytes += s.bytes
        out.units += s.units
        out.skipped_files.update(s.skipped_files)
        for why, k in s.skipped_units.items():
            out.skipped_units[why] = out.skipped_units.get(why, 0) + k
    return out


def match_on_ray(
    index: PlanIndex, n: int, files: list[str], text_field: str, workers: int, address: str | None = None
) -> tuple[Matches, CorpusStats]:
    ray = _ray()
    started = False
    if not ray.is_initialized():
        kw: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.WARNING}
        try:
            if address is None:
                ray.init(address="local", num_cpus=max(workers, os.cpu_count() or 1), **kw)
            else:
                ray.init(address=address, **kw)
        except Exception as e:
            where = f"--ray {address}" if address else "--workers"
            raise ContaminationError(
                f"{where}: cannot start or reach Ray ({str(e).splitlines()[0] if str(e) else e})"
            ) from None
        started = True
    try:
        task = ray.remote(num_cpus=1)(match_spans)
        ref = ray.put(index)
        spans = plan_spans(files, workers)
        shards = [spans[i::workers] for i in range(workers)]
        futures = [task.remote(ref, n, shard, text_field) for shard in shards if shard]
        results = ray.get(futures)
    finally:
        if started:
            ray.shutdown()
    return merge_shards(results, files)


def merge_shards(
    results: list[tuple[Matches, CorpusStats, list[Span]]], files: list[str]
) -> tuple[Matches, CorpusStats]:
    """The shards' ``match_spans`` results as one: matches merged, rows absolute, stats summed."""
    rank = {f: i for i, f in enumerate(files)}
    read = sorted((s for _, _, ss in results for s in ss), key=lambda s: (rank[s.file], s.start))
    matches = Matches()
    for m, _, _ in results:
        matches.merge(m)
    return absolute_rows(matches, read), merge_stats([s for _, s, _ in results])
