"""``lmeval report`` without a browser: same bytes for the same inputs, the CLI, hostile and broken inputs
(one-line errors, nothing written), and the diagnostics it derives from a run."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from lmeval.cli import main
from lmeval.plans.plan import InstanceRecord, PlanReader
from lmeval.plans.results import read_results
from lmeval.report import build_report
from lmeval.report.html import script_json
from tests.report.conftest import pipeline


def _copy(run: Path, dest: Path) -> Path:
    shutil.copytree(run, dest)
    return dest


def _edit_json(path: Path, change: Any) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")


def test_same_inputs_same_bytes(two_runs: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = str(two_runs["a"]), str(two_runs["b"])
    one = build_report([a, b])
    assert build_report([a, b]) == one
    out1, out2 = tmp_path / "r1.html", tmp_path / "r2.html"
    assert main(["report", a, b, "-o", str(out1)]) == 0
    assert main(["report", a, b, "-o", str(out2)]) == 0
    assert capsys.readouterr().out.split() == [str(out1), str(out2)]
    assert out1.read_bytes() == out2.read_bytes() == one.encode("utf-8")


def test_page_is_self_contained(two_runs: dict[str, Any]) -> None:
    page = build_report([str(two_runs["a"]), str(two_runs["b"])])
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page)
    assert "@import" not in page and "url(" not in page
    assert "default-src 'none'" in page  # Content-Security-Policy: the browser itself refuses any fetch
    # data blocks, one per task, parse as JSON
    blocks = re.findall(r'<script type="application/json" id="([^"]+)">(.*?)</script>', page, re.S)
    assert [b[0] for b in blocks] == ["lmeval-meta", "lmeval-task-0", "lmeval-task-1"]
    meta = json.loads(blocks[0][1])
    assert [r["label"] for r in meta["runs"]] == ["zero_shot", "three_shot"]
    assert [t["name"] for t in meta["tasks"]] == ["arc_easy", "arith"]


def test_baseline_option(two_runs: dict[str, Any]) -> None:
    a, b = str(two_runs["a"]), str(two_runs["b"])
    page = build_report([a, b], baseline=b)
    assert "three_shot (baseline)" in page and "zero_shot − three_shot" in page
    # a baseline not in the list joins it, first
    page = build_report([a], baseline=b)
    assert page.index("three_shot (baseline)") < page.index(">zero_shot<")


def test_single_run_has_no_comparison(two_runs: dict[str, Any]) -> None:
    page = build_report([str(two_runs["a"])])
    assert 'id="comparison"' not in page
    assert "All runs come from the same plan" in page


def _fails(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    rc = main(["report", *argv])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    return err


def test_bad_inputs_are_one_line_errors(
    two_runs: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = two_runs["a"]
    out = tmp_path / "report.html"
    out.write_text("previous report", encoding="utf-8")
    err = _fails(capsys, str(tmp_path / "nope"), "-o", str(out))
    assert "nope: no such results directory" in err

    unscored = _copy(a, tmp_path / "unscored")
    (unscored / "results.json").unlink()
    assert "lmeval score" in _fails(capsys, str(unscored), "-o", str(out))

    broken = _copy(a, tmp_path / "broken")
    (broken / "results.json").write_text("{not json", encoding="utf-8")
    assert "results.json: malformed results.json: not JSON" in _fails(capsys, str(broken), "-o", str(out))

    odd = _copy(a, tmp_path / "odd")
    _edit_json(odd / "results.json", lambda d: d["results"]["arc_easy"].update({"acc,none": [1, 2]}))
    assert "field results.arc_easy.acc,none: not a number" in _fails(capsys, str(odd), "-o", str(out))

    assert "given twice" in _fails(capsys, str(a), str(a) + "/", "-o", str(out))

    other_plan = _copy(a, tmp_path / "other_plan")
    _edit_json(other_plan / "results.json", lambda d: d.update(plan_path=str(two_runs["plan_b"])))
    err = _fails(capsys, str(other_plan), "-o", str(out))
    assert str(two_runs["plan_b"]) in err and "results came from plan" in err

    assert "is a directory" in _fails(capsys, str(a), "-o", str(tmp_path))
    assert out.read_text(encoding="utf-8") == "previous report"  # nothing was written over it
    assert not list(tmp_path.glob(".report.html.*"))


def test_missing_plan_still_reports(two_runs: dict[str, Any], tmp_path: Path) -> None:
    run = _copy(two_runs["a"], tmp_path / "moved")
    gone = str(tmp_path / "deleted.msgpack")
    _edit_json(run / "results.json", lambda d: d.update(plan_path=gone))
    _edit_json(run / "manifest.json", lambda d: d.update(plan_path=gone))
    page = build_report([str(run)])
    assert f"plan {gone} not found: prompts and choices are not shown" in page
    assert "(not found)" in page


def test_hostile_text_is_escaped(two_runs: dict[str, Any], tmp_path: Path) -> None:
    run = _copy(two_runs["a"], tmp_path / "hostile")
    evil = "</script><script>alert(1)</script><!--"
    _edit_json(run / "results.json", lambda d: d["results"]["arc_easy"].update(alias="<img src=x onerror=alert(1)>"))
    s = pl.read_parquet(run / "samples.parquet")
    s = s.with_columns(filtered=pl.when(pl.col("task") == "arith").then(pl.lit(evil)).otherwise(pl.col("filtered")))
    s.write_parquet(run / "samples.parquet")
    page = build_report([str(run)])
    assert "<img src=x" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    assert evil not in page and "alert(1)" in page
    assert page.count("<script>") == 1  # the page's own script, nothing from the data
    assert json.loads(script_json(evil)) == evil


def test_diagnostics_count_what_the_rows_and_plan_say(two_runs: dict[str, Any], tmp_path: Path) -> None:
    # generations cut at max_gen_toks: the fake backend's finish_reason
    page = build_report([str(two_runs["a"])])
    rows = read_results(two_runs["a"])
    n_length = rows.filter(pl.col("finish_reason") == "length").height
    assert n_length > 0
    assert f'data-task="arith" data-kind="max_gen_toks" data-count="{n_length}"' in page
    # contexts the executor must truncate: a 3-shot plan run with a short max_model_len
    run = pipeline(
        tmp_path, "short", "+task=arc_easy", "run.limit=10", "run.num_fewshot=3", engine=("model.max_model_len=100",)
    )
    with PlanReader(tmp_path / "short.msgpack") as r:
        over = [
            i.doc_id
            for i in r
            if isinstance(i, InstanceRecord) and len(i.context_ids or []) + len(i.continuation_ids or []) > 99
        ]
    assert over
    page = build_report([str(run)])
    assert f'data-task="arc_easy" data-kind="truncated" data-count="{len(over)}"' in page
    assert "max_model_len 100, left side cut" in page


def test_provenance_shows_the_manifest(two_runs: dict[str, Any]) -> None:
    manifest = json.loads((two_runs["a"] / "manifest.json").read_text(encoding="utf-8"))
    hw = manifest["hardware"]
    assert hw["cpus"] == os.cpu_count() and hw["cpu"] and hw["memory_gib"] > 0
    page = build_report([str(two_runs["a"])])
    prov = page[page.index('id="provenance"') : page.index('id="results"')]
    assert f"<span class=k>cpus</span>={hw['cpus']}" in prov
    assert manifest["plan_hash"][:12] in prov and manifest["started"] in prov
    stats = manifest["stats"]
    assert f"executed {stats['executed']:,}" in prov and f"reused {stats['reused']:,}" in prov


def test_partial_results_are_diagnosed(two_runs: dict[str, Any], tmp_path: Path) -> None:
    run = _copy(two_runs["a"], tmp_path / "partial")
    parts = sorted(run.glob("part-*.parquet"))
    df = pl.concat([pl.read_parquet(p) for p in parts])
    for p in parts:
        p.unlink()
    drop = (pl.col("task") == "arc_easy") & pl.col("doc_id").is_in([4, 9])
    df.filter(~drop).write_parquet(run / "part-000000.parquet")
    assert main(["score", str(run), "--quiet", "--allow-partial"]) == 0
    page = build_report([str(run)])
    n = df.filter(drop).height
    assert f'data-task="arc_easy" data-kind="missing" data-count="{n}"' in page
    assert 'data-doc="4"' in page and "2 documents left out of the scores" in page


def test_intervals_and_paired_tests_shown(two_runs: dict[str, Any]) -> None:
    """#40: the intervals table holds each run's results.json ``intervals``; the comparison matrix the
    paired test's p, the interval of Δ and the MDE of ``lmeval compare``."""
    from lmeval.diff.runs import compare

    a, b = str(two_runs["a"]), str(two_runs["b"])
    page = build_report([a, b])
    cells = re.findall(r'<td class="ci" data-run="(\d)" data-task="([^"]+)" data-key="([^"]+)" '
                       r'data-low="([^"]+)" data-high="([^"]+)">', page)  # fmt: skip
    want = set()
    for i, d in enumerate((a, b)):
        iv = json.loads((Path(d) / "results.json").read_text())["intervals"]["metrics"]
        want |= {(str(i), t, k, repr(e["low"]), repr(e["high"])) for t, m in iv.items() for k, e in m.items()}
    assert want and set(cells) == want
    shown = 0
    for d in compare(a, b).deltas:
        if d.mde is not None and d.low is not None and d.high is not None:
            cell = re.search(rf'<td class="cmp[^"]*" data-task="{re.escape(d.task)}" data-key="{re.escape(d.metric)},'
                             rf'{re.escape(d.filter)}"[^>]*>(.*?)</td>', page)  # fmt: skip
            assert cell is not None and f"MDE {d.mde:.4f}" in cell.group(1)
            assert f"95% CI [{d.low:+.4f}, {d.high:+.4f}]" in cell.group(1)
            assert d.test != "mcnemar" or f"mcnemar p={d.p_test:.3g}" in cell.group(1)
            shown += 1
    assert shown > 0
