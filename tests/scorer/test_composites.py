"""Honest composites (#62 item 4, acceptance 5): a group over a ``run.limit`` run is labelled partial with the
limit, a group with a member that has no score is N/A naming the member, a judge-graded task without grades has
an N/A judge score (partial when its judge graded fewer documents than were scored), in results.json, the console
and the report. Real pipeline runs: mmlu (57 subjects, 5 groups) and arith, compiled, executed by the fake
backend (the model is not what is tested), scored, judged."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from tests.report.conftest import data_dir

LIMIT = 2
GROUPS = ("mmlu", "mmlu_humanities", "mmlu_other", "mmlu_social_sciences", "mmlu_stem")


def cli(*argv: str) -> str:
    from lmeval.cli import main

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(list(argv))
    assert rc == 0, f"lmeval {' '.join(argv)} exited {rc}"
    return buf.getvalue()


def _results(run: Path) -> dict[str, Any]:
    return dict(json.loads((run / "results.json").read_text(encoding="utf-8")))


@pytest.fixture(scope="module")
def mmlu(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("composites")
    plan, out = base / "mmlu.msgpack", base / "mmlu"
    cli("compile", "+task=mmlu", f"run.limit={LIMIT}", f"run.data_dir={data_dir()}", f"run.out={plan}")
    cli("execute", str(plan), "model.backend=fake", "--out", str(out), "--no-progress")
    console = cli("score", str(out), "--bootstrap-iters", "100")
    # the same run without one member's results: its part rewritten without mmlu_anatomy (named by its new hash)
    gap = base / "gap"
    shutil.copytree(out, gap)
    (part,) = gap.glob("part-*.parquet")
    table = pq.read_table(part)
    pq.write_table(table.filter(pc.not_equal(table["task"], "mmlu_anatomy")), part)
    part.rename(part.with_name(f"part-000000-s{hashlib.sha256(part.read_bytes()).hexdigest()}.parquet"))
    gap_console = cli("score", str(gap), "--allow-partial", "--bootstrap-iters", "100")
    return {"base": base, "full": out, "console": console, "gap": gap, "gap_console": gap_console}


def _row(console: str, name: str) -> list[str]:
    """The cells of the first table row whose first cell is ``name`` (with its label)."""
    for line in console.splitlines():
        cells = [c.strip() for c in line.split("│")[1:-1]]
        if cells and cells[0] == name:
            return cells
    raise AssertionError(f"no row {name!r} in:\n{console}")


def test_run_limit_labels_every_group_partial(mmlu: dict[str, Any]) -> None:
    res = _results(mmlu["full"])
    comp = res["composites"]
    assert comp["version"] == 1 and comp["limit"] == LIMIT
    assert sorted(comp["flags"]) == sorted(GROUPS)  # the groups, not the subject tasks
    for g in GROUPS:
        f = comp["flags"][g]
        assert f["status"] == "partial" and f["metrics"] == {"acc,none": "partial"} and f["missing"] == {}
        assert f["reasons"] == [f"run.limit={LIMIT}: the first {LIMIT} documents of each task"]
        assert isinstance(res["results"][g]["acc,none"], float)  # the value stays lm-eval's (a valid estimate)
    cells = _row(mmlu["console"], "mmlu (partial)")
    assert cells[4] == "acc" and cells[6] == f"{res['results']['mmlu']['acc,none']:.4f}"  # as printed
    assert f"mmlu: PARTIAL: run.limit={LIMIT}: the first {LIMIT} documents of each task" in mmlu["console"]
    assert "N/A" not in mmlu["console"]


def test_a_missing_member_makes_its_groups_na(mmlu: dict[str, Any]) -> None:
    res = _results(mmlu["gap"])
    flags = res["composites"]["flags"]
    assert "mmlu_anatomy" not in res["results"] or "acc,none" not in res["results"]["mmlu_anatomy"]
    for g in ("mmlu", "mmlu_stem"):  # anatomy is a stem subject
        f = flags[g]
        assert f["status"] == "n/a" and f["metrics"] == {"acc,none": "n/a"}
        assert f["missing"] == {"acc,none": ["mmlu_anatomy"]}
        assert any("mmlu_anatomy" in r for r in f["reasons"])
        assert isinstance(res["results"][g]["acc,none"], float)  # lm-eval's mean over 56 members, kept for parity
    for g in ("mmlu_humanities", "mmlu_other", "mmlu_social_sciences"):
        assert flags[g]["status"] == "partial" and flags[g]["missing"] == {}
    console = mmlu["gap_console"]
    assert _row(console, "mmlu")[6:] == ["N/A", "", ""]  # no number, no stderr
    assert _row(console, "- stem")[6:] == ["N/A", "", ""]
    assert "mmlu: N/A: acc,none: 1 of 57 member tasks have no score" in console
    assert "lm-eval's number for it stays in results.json" in console


def test_report_labels_partial_and_na_groups(mmlu: dict[str, Any]) -> None:
    from lmeval.report import build_report

    page = build_report([str(mmlu["full"]), str(mmlu["gap"])])
    scores = page[page.index('<section id="scores">') : page.index('<section id="provenance">')]
    full_row = scores[scores.index('<tr class="first" data-task="mmlu" data-key="acc,none">') :]
    full_row = full_row[: full_row.index("</tr>")]
    assert 'data-run="0" data-value=' in full_row and 'data-status="partial"' in full_row
    assert '<td class="value na" data-run="1" data-status="n/a"' in full_row and ">N/A<" in full_row
    assert "mmlu_anatomy" in scores and "run.limit=2" in scores
    results = page[page.index('<section id="results">') :]  # lm-eval's table below: no number for it either
    assert '<td class="value na" data-run="1" data-task="mmlu" data-key="acc,none" data-status="n/a"' in results


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("judged")
    plan, out = base / "arith.msgpack", base / "arith"
    # arith declared judge-graded (the task config's judged_by), 6 documents
    cli("compile", "+task=arith", "run.limit=6", "+task.arith.judged_by={judges:[single_10]}", f"run.out={plan}")
    cli("execute", str(plan), "model.backend=fake", "--out", str(out), "--no-progress")
    return {"base": base, "run": out, "console": cli("score", str(out), "--bootstrap-iters", "100")}


def _judge(judged: dict[str, Any], name: str, *overrides: str) -> str:
    base, run = judged["base"], judged["run"]
    plan = base / f"{name}.msgpack"
    cli("judge", str(run), "--judge", "single_10", "--out", str(plan), "question=null", "model=tiny", *overrides)
    cli("execute", str(plan), "model.backend=fake", "--out", str(base / name), "--no-progress")
    return cli("judge-score", str(base / name), "--into", str(run))


def test_an_ungraded_judge_graded_task_has_no_judge_score(judged: dict[str, Any]) -> None:
    res = _results(judged["run"])
    assert not any(k.startswith("judge_") for k in res["results"]["arith"])  # the grades are absent
    f = res["composites"]["flags"]["arith"]
    assert f["status"] == "n/a" and f["metrics"] == {"judge_score": "n/a"}
    assert f["reasons"] == ["judge-graded, no grades yet (grade it: `lmeval run ... judge=MODEL`)"]
    console = judged["console"]
    assert _row(console, "")[4:7] == ["judge_score", "", "N/A"]  # its own row in the one table
    assert "arith: N/A: judge-graded, no grades yet" in console
    from lmeval.report import build_report

    page = build_report([str(judged["run"])])
    assert 'data-task="arith" data-key="judge_score"' in page and 'data-status="n/a"' in page


def test_a_judge_that_graded_part_of_the_run_is_partial_then_complete(judged: dict[str, Any]) -> None:
    _judge(judged, "judge3", "limit=3")  # the judge plan covers the first 3 of the 6 answers
    res = _results(judged["run"])
    f = res["composites"]["flags"]["arith"]
    assert f["status"] == "partial" and f["metrics"] == {"judge_score,single_10": "partial"}
    assert f["reasons"] == ["judge single_10 graded 3 of 6 documents"]
    _judge(judged, "judge6")  # every answer graded: nothing left to flag
    res = _results(judged["run"])
    assert res["composites"] == {"version": 1, "limit": 6, "flags": {}}
    assert res["results"]["arith"]["judge_n,single_10"] + res["results"]["arith"]["judge_unparsed,single_10"] == 6


def test_the_clustered_table_only_where_it_adds_something(mmlu: dict[str, Any], judged: dict[str, Any]) -> None:
    """#62 item 5: clusters of one document each repeat lm-eval's stderr (no table); a group's subtasks do not."""
    assert "Clustered stderr" not in judged["console"]
    console = mmlu["console"]
    clustered = console[console.index("Clustered stderr and 95% intervals") :]
    names = [_row(clustered, g)[0] for g in ("mmlu", "mmlu_stem", "mmlu_other")]
    assert names == ["mmlu", "mmlu_stem", "mmlu_other"]
    assert "mmlu_anatomy" not in clustered and "(subtask)" in clustered and "(document)" not in clustered


def test_composites_version_is_checked_and_the_limit_read_back(mmlu: dict[str, Any], tmp_path: Path) -> None:
    from lmeval.plans import PlanError, read_scored

    run = read_scored(mmlu["full"], samples=False).results
    assert run.limit == LIMIT and sorted(run.flags()) == sorted(GROUPS)
    doc = _results(mmlu["full"])
    doc["composites"]["version"] = 2
    (tmp_path / "results.json").write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(PlanError, match=r"field composites\.version: 2; this lmeval reads 1$"):
        read_scored(tmp_path, samples=False)
