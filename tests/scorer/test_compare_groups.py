"""``compare`` on groups: the group's paired standard error combines its subtasks' (disjoint documents), with
the group's own weights (by size or equal), and no p-value when neither reproduces the group's delta."""

from __future__ import annotations

import json
import math
import random
import statistics
from pathlib import Path

import polars as pl
import pytest

from lmeval.diff.runs import compare
from tests.bounds import ARITHMETIC

SIZES = {"t1": 40, "t2": 90, "t3": 25}


def _run(d: Path, acc: dict[str, list[float]], groups: dict[str, float | None]) -> str:
    d.mkdir()
    results: dict[str, dict[str, object]] = {
        t: {"alias": t, "acc,none": sum(v) / len(v), "acc_stderr,none": 0.01} for t, v in acc.items()
    }
    n = sum(len(v) for v in acc.values())
    size_weighted = sum(sum(v) for v in acc.values()) / n
    equal = sum(sum(v) / len(v) for v in acc.values()) / len(acc)
    for g, how in groups.items():
        value = size_weighted if how is None else (equal if how == 0 else how)
        results[g] = {"alias": g, "acc,none": value, "acc_stderr,none": 0.01}
    res = {"results": results, "group_subtasks": {g: list(acc) for g in groups}, "plan_hash": "p"}
    (d / "results.json").write_text(json.dumps(res), encoding="utf-8")
    rows = [(t, i, "none", x) for t, v in acc.items() for i, x in enumerate(v)]
    pl.DataFrame(rows, schema=["task", "doc_id", "filter", "acc"], orient="row").write_parquet(d / "samples.parquet")
    return str(d)


@pytest.fixture
def runs(tmp_path: Path) -> tuple[str, str, dict[str, list[float]], dict[str, list[float]]]:
    rng = random.Random(7)
    a = {t: [float(rng.random() < 0.4) for _ in range(n)] for t, n in SIZES.items()}
    b = {t: [x if rng.random() < 0.7 else float(rng.random() < 0.6) for x in v] for t, v in a.items()}
    # by size, equal weights, and a value no weighting of the subtasks gives
    groups: dict[str, float | None] = {"by_size": None, "equal": 0, "other": 0.123}
    groups_b: dict[str, float | None] = {"by_size": None, "equal": 0, "other": 0.456}
    return _run(tmp_path / "a", a, groups), _run(tmp_path / "b", b, groups_b), a, b


def test_group_standard_errors(runs: tuple[str, str, dict[str, list[float]], dict[str, list[float]]]) -> None:
    ra, rb, a, b = runs
    c = compare(ra, rb)
    d = {x.task: x for x in c.deltas}
    n = sum(SIZES.values())
    se = {t: d[t].se for t in SIZES}
    for t in SIZES:  # each subtask's paired test, computed here from the documents' scores
        dt = [y - x for x, y in zip(a[t], b[t], strict=True)]
        assert d[t].delta == pytest.approx(statistics.fmean(dt), abs=ARITHMETIC.atol)
        assert se[t] == pytest.approx(statistics.stdev(dt) / math.sqrt(len(dt)), rel=ARITHMETIC.rtol)
        assert d[t].p == pytest.approx(math.erfc(abs(statistics.fmean(dt) / se[t]) / math.sqrt(2)), rel=ARITHMETIC.rtol)  # type: ignore[operator]
    by_size = math.sqrt(sum((SIZES[t] / n * se[t]) ** 2 for t in SIZES))  # type: ignore[operator]
    assert d["by_size"].se == pytest.approx(by_size, rel=ARITHMETIC.rtol)
    assert d["by_size"].n_paired == n
    assert d["by_size"].p == pytest.approx(
        math.erfc(abs(d["by_size"].delta / by_size) / math.sqrt(2)), rel=ARITHMETIC.rtol
    )  # type: ignore[operator]
    # the same test computed directly over the pooled documents agrees closely (weights n_t / n)
    diffs = [y - x for t in SIZES for x, y in zip(a[t], b[t], strict=True)]
    mean = sum(diffs) / n
    pooled = math.sqrt(sum((x - mean) ** 2 for x in diffs) / (n - 1) / n)
    assert d["by_size"].se == pytest.approx(pooled, rel=0.05)
    equal = math.sqrt(sum((se[t] / len(SIZES)) ** 2 for t in SIZES))  # type: ignore[operator]
    assert d["equal"].se == pytest.approx(equal, rel=ARITHMETIC.rtol)
    assert d["other"].delta == pytest.approx(0.456 - 0.123)
    assert d["other"].se is None and d["other"].p is None
