"""The scoring index (results_dir/.score-index-*) gives the same scores; it is keyed by content hashes."""

from __future__ import annotations

import json
import os
from pathlib import Path

from lmeval.plans.plan import read_header
from lmeval.scorer.score import score_run
from tests.scorer.golden_io import build, load_golden


def test_rescore_from_index_is_identical(tmp_path: Path) -> None:
    plan, rdir = build(load_golden("fake"), tmp_path, ["gsm8k", "winogrande"])
    first = score_run(str(rdir)).results
    idx = list(rdir.glob(".score-index-*"))
    assert len(idx) == 1 and (idx[0] / "docs.parquet").exists()
    second = score_run(str(rdir)).results
    assert json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)
    # the index is keyed by content: touching the plan changes nothing, editing it is an error even with
    # the same size and the old mtime restored (tests/scorer/test_rowcheck.py covers that case)
    stamp = json.loads((idx[0] / "stamp.json").read_text())
    assert stamp["plan_hash"] == read_header(plan).plan_hash and set(stamp["files"]) == {
        "docs.parquet",
        "instances.parquet",
    }
    st = os.stat(plan)
    os.utime(plan, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    third = score_run(str(rdir)).results
    assert json.dumps(third, sort_keys=True) == json.dumps(first, sort_keys=True)
    assert json.loads((idx[0] / "stamp.json").read_text()) == stamp
    # an index whose own files were changed is rebuilt, not trusted
    (idx[0] / "instances.parquet").write_bytes(b"garbage")
    fourth = score_run(str(rdir)).results
    assert json.dumps(fourth, sort_keys=True) == json.dumps(first, sort_keys=True)
    assert (idx[0] / "instances.parquet").read_bytes()[:4] == b"PAR1"  # rewritten
    assert json.loads((idx[0] / "stamp.json").read_text())["plan_hash"] == stamp["plan_hash"]


def test_an_index_of_another_plan_is_not_trusted(tmp_path: Path) -> None:
    """A whole index directory of another plan (other targets; its stamp and files consistent with each
    other) planted under this plan's index name is rebuilt: the scores are this plan's, not the other's."""
    import copy
    import shutil

    golden = load_golden("fake")
    plan_a, rdir_a = build(golden, tmp_path / "a", ["gsm8k"])
    first = score_run(str(rdir_a)).results
    other = copy.deepcopy(golden)
    for d in other["tasks"]["gsm8k"]["docs"]:
        d["target"] = "0"  # every gold answer differs: exact_match 0 everywhere under this plan
    plan_b, rdir_b = build(other, tmp_path / "b", ["gsm8k"])
    wrong = score_run(str(rdir_b)).results
    em = "exact_match,strict-match"
    assert first["results"]["gsm8k"][em] > 0 and wrong["results"]["gsm8k"][em] == 0.0
    (idx_a,) = rdir_a.glob(".score-index-*")
    (idx_b,) = rdir_b.glob(".score-index-*")
    assert idx_a.name != idx_b.name
    shutil.rmtree(idx_a)
    shutil.copytree(idx_b, idx_a)
    again = score_run(str(rdir_a)).results
    assert json.dumps(again["results"], sort_keys=True) == json.dumps(first["results"], sort_keys=True)
    assert json.loads((idx_a / "stamp.json").read_text())["plan_hash"] == read_header(plan_a).plan_hash
