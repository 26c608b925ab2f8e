"""The scoring index (results_dir/.score-index-*) gives the same scores and is dropped when the plan changes."""

from __future__ import annotations

import json
import os
from pathlib import Path

from scorer.score import score_run
from tests.scorer.golden_io import build, load_golden


def test_rescore_from_index_is_identical(tmp_path: Path) -> None:
    plan, rdir = build(load_golden("fake"), tmp_path, ["gsm8k", "winogrande"])
    first = score_run(str(rdir), console=False).results
    idx = list(rdir.glob(".score-index-*"))
    assert len(idx) == 1 and (idx[0] / "docs.parquet").exists()
    second = score_run(str(rdir), console=False).results
    assert json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)
    # a plan file touched after indexing is read again (and its hash checked again)
    stamp = json.loads((idx[0] / "stamp.json").read_text())
    os.utime(plan, ns=(stamp["mtime_ns"] + 10**9, stamp["mtime_ns"] + 10**9))
    third = score_run(str(rdir), console=False).results
    assert json.dumps(third, sort_keys=True) == json.dumps(first, sort_keys=True)
    assert json.loads((idx[0] / "stamp.json").read_text())["mtime_ns"] == stamp["mtime_ns"] + 10**9
