"""``lmeval contamination --workers N [--ray ADDR]``: the corpus files cut into N shards (file by file, round
robin over the sorted file list), each matched by a Ray task against the same plan index (put once in Ray's
object store), the matches merged on the driver. Ray Core only, imported here alone. The report equals one
process's: matched n-grams are sets, and locations are put in corpus order (``check.in_corpus_order``) before
the first ``MAX_LOCATIONS`` per document are kept. A single large file is one shard (no byte ranges yet).
"""

from __future__ import annotations

import logging
import os
from typing import Any

from lmeval.scorer.contamination.check import Matches, match_files
from lmeval.scorer.contamination.corpus import CorpusStats
from lmeval.scorer.contamination.plantext import PlanIndex
from lmeval.scorer.errors import ScoreError


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ScoreError("--workers/--ray run on Ray, which is not installed: pip install 'lmeval[ray]'") from None
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
            raise ScoreError(
                f"{where}: cannot start or reach Ray ({str(e).splitlines()[0] if str(e) else e})"
            ) from None
        started = True
    try:
        task = ray.remote(num_cpus=1)(match_files)
        ref = ray.put(index)
        shards = [files[i::workers] for i in range(workers)]
        futures = [task.remote(ref, n, shard, text_field) for shard in shards if shard]
        results = ray.get(futures)
    finally:
        if started:
            ray.shutdown()
    matches = Matches()
    for m, _ in results:
        matches.merge(m)
    return matches, merge_stats([s for _, s in results])
