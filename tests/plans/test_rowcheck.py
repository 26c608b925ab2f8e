"""Every result row is checked against the plan's Instance (plans/results/rowcheck.py) at score, resume, merge and
--reuse: rows of another plan under this plan's manifest, a gap filled from another plan, a duplicated part,
a shard of another plan, an edited plan with its mtime restored: each a one-line error, exit 2, nothing
written.

Two real plans of the same task and documents: arc_easy 0-shot and 5-shot. Their Instances have the same
ids (task, doc, idx) and different requests, so only the request hash tells their rows apart.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import polars as pl
import pytest

from lmeval.cli import main
from lmeval.executor import execute
from lmeval.plans.results import MANIFEST, part_files, read_manifest, read_results
from lmeval.plans.results.partsum import PART_SUM
from lmeval.plans.results.rowcheck import KEY_COLUMNS, RowMismatchError, check_rows, plan_keys, read_row_keys
from tests.executor.conftest import snapshot
from tests.executor.plantools import compiled

FAKE = ["model.backend=fake"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("rowcheck")
    p0 = compiled(base / "zero.msgpack", "+task=arc_easy", "run.limit=12", "run.num_fewshot=0")
    p5 = compiled(base / "five.msgpack", "+task=arc_easy", "run.limit=12", "run.num_fewshot=5")
    out = {"p0": p0, "p5": p5}
    for name, plan in (("r0", p0), ("r5", p5)):
        out[name] = execute(str(plan), out=str(base / name), overrides=FAKE, progress=False, part_size=10)
    for i in range(2):
        out[f"s0_{i}"] = execute(
            str(p0), out=str(base / f"s0_{i}"), overrides=FAKE, shard=f"{i}/2", progress=False, part_size=10
        )
        out[f"s5_{i}"] = execute(
            str(p5), out=str(base / f"s5_{i}"), overrides=FAKE, shard=f"{i}/2", progress=False, part_size=10
        )
    return out


def _copy(src: Path, dst: Path) -> Path:
    """A copy whose parts are named without their checksums (plans/results/partsum.py), so these tests can edit rows
    in place and reach the row checks (a checksummed part edited so is refused first: tests/hostile)."""
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".score-index-*", ".lock"))
    for p in part_files(dst):
        p.rename(p.with_name(PART_SUM.sub(".parquet", p.name)))
    return dst


def _fill(part: Path, own: Path, other: Path) -> None:
    """Write to ``part`` (a part of results ``own``) the rows of results ``other`` for the same Instances."""
    ids = pl.read_parquet(next(own.glob(part.name[: -len(".parquet")] + "*.parquet")))["instance_id"]
    rows = read_results(other).filter(pl.col("instance_id").is_in(ids.implode()))
    assert rows.height == ids.len() > 0
    rows.write_parquet(part)


def _fails(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    capsys.readouterr()
    assert main(list(args)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "Traceback" not in err[0]
    return err[0]


def test_the_plans_differ_only_in_requests(runs: dict[str, Path]) -> None:
    a, b = read_results(runs["r0"]), read_results(runs["r5"])
    assert a["instance_id"].to_list() == b["instance_id"].to_list() and a.height == 48
    assert not set(a["request_hash"]) & set(b["request_hash"])
    assert len(part_files(runs["r0"])) == 5


def test_score_refuses_parts_of_another_plan_under_this_manifest(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = _copy(runs["r5"], tmp_path / "swapped")  # 5-shot parts...
    shutil.copyfile(runs["r0"] / MANIFEST, d / MANIFEST)  # ...under the 0-shot plan's manifest
    before = snapshot(d)
    msg = _fails(capsys, "score", str(d), "--quiet")
    first = part_files(d)[0]
    assert msg.startswith(f"lmeval score: error: {first}: the row of instance ")
    assert re.search(
        r"the row of instance [0-9a-f]{16} \(arc_easy doc \d+ idx \d\) has request_hash '[0-9a-f]{12}…', ", msg
    )
    assert f"but that Instance in plan {runs['p0']} has '" in msg and msg.endswith(
        "(48 such rows; results of another plan?)"
    )
    assert snapshot(d) == {k: v for k, v in snapshot(d).items() if k in before or ".score-index-" in k}
    assert not (d / "results.json").exists()
    # the same directory with its own manifest scores
    shutil.copyfile(runs["r5"] / MANIFEST, d / MANIFEST)
    assert main(["score", str(d), "--quiet"]) == 0


def test_resume_and_score_refuse_a_gap_filled_from_another_plan(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = _copy(runs["r0"], tmp_path / "gap")
    gap = part_files(d)[2]
    gap.unlink()  # a killed run's gap ...
    _fill(gap, runs["r0"], runs["r5"])  # ... filled with the other plan's rows of exactly those Instances
    m = read_manifest(d)
    m.finished = None
    (d / MANIFEST).write_text(json.dumps(m.to_dict()))
    before = snapshot(d)
    msg = _fails(capsys, "execute", str(runs["p0"]), *FAKE, "--out", str(d), "--no-progress")
    assert msg.startswith(f"lmeval execute: error: {gap}: the row of instance ") and "has request_hash" in msg
    assert msg.endswith(f"cannot resume into {d}")
    assert snapshot(d) == before
    msg = _fails(capsys, "score", str(d), "--quiet")
    assert f"{gap}: the row of instance " in msg and "has request_hash" in msg


def test_resume_refuses_rows_of_another_shard(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = _copy(runs["s0_0"], tmp_path / "s0")
    stray = d / "part-000099.parquet"
    shutil.copyfile(part_files(runs["s0_1"])[0], stray)
    msg = _fails(capsys, "execute", str(runs["p0"]), *FAKE, "--shard", "0/2", "--out", str(d), "--no-progress")
    assert f"{stray}: the row of instance " in msg and "is not an Instance of plan" in msg


def test_merge_refuses_a_duplicated_part(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    s1 = _copy(runs["s0_1"], tmp_path / "s1")
    first = part_files(s1)[0]
    dup = s1 / "part-000042.parquet"
    shutil.copyfile(first, dup)
    out = tmp_path / "merged"
    msg = _fails(capsys, "merge", str(runs["s0_0"]), str(s1), "--out", str(out))
    assert msg.startswith(f"lmeval merge: error: {first}: instance ") and f"has a row also in {dup}" in msg
    assert not out.exists()
    dup.unlink()
    assert main(["merge", str(runs["s0_0"]), str(s1), "--out", str(out)]) == 0
    # the same answers (the shards of the module's runs took them from its result store: ``source`` differs)
    assert read_results(out).drop("source").equals(read_results(runs["r0"]).drop("source"))


def test_merge_refuses_a_shard_of_another_plan(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    s1 = _copy(runs["s5_1"], tmp_path / "s1")  # the 5-shot plan's shard 1/2 ...
    m = read_manifest(s1)
    m0 = read_manifest(runs["s0_0"])
    m.plan_hash, m.plan_path = m0.plan_hash, m0.plan_path  # ... with its manifest edited to claim the 0-shot plan
    (s1 / MANIFEST).write_text(json.dumps(m.to_dict()))
    out = tmp_path / "merged"
    msg = _fails(capsys, "merge", str(runs["s0_0"]), str(s1), "--out", str(out))
    assert f"{part_files(s1)[0]}: the row of instance " in msg and "has request_hash" in msg
    assert f"merge refuses {s1}" in msg
    assert not out.exists()
    # merge checks against the plan the manifests name, or --plan, which must be that plan
    msg = _fails(capsys, "merge", str(runs["s0_0"]), str(runs["s0_1"]), "--out", str(out), "--plan", str(runs["p5"]))
    assert "but the shards are results of plan" in msg


def test_reuse_refuses_rows_that_are_not_their_plans(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = _copy(runs["r5"], tmp_path / "old")
    _fill(part_files(old)[1], runs["r5"], runs["r0"])  # the other plan's rows in one part of the reused run
    out = tmp_path / "new"
    msg = _fails(capsys, "execute", str(runs["p0"]), *FAKE, "--reuse", str(old), "--out", str(out), "--no-progress")
    assert msg.startswith(f"lmeval execute: error: --reuse {old}: {part_files(old)[1]}: the row of instance ")
    assert not out.exists()
    # the reused run's plan must be there to check against
    moved = _copy(runs["r5"], tmp_path / "old2")
    m = read_manifest(moved)
    m.plan_path = str(tmp_path / "gone.msgpack")
    (moved / MANIFEST).write_text(json.dumps(m.to_dict()))
    msg = _fails(capsys, "execute", str(runs["p0"]), *FAKE, "--reuse", str(moved), "--out", str(out), "--no-progress")
    assert "gone.msgpack not found" in msg and not out.exists()


def test_an_edited_plan_with_its_mtime_restored_is_caught(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = tmp_path / "plan.msgpack"
    shutil.copyfile(runs["p0"], plan)
    d = _copy(runs["r0"], tmp_path / "r")
    assert main(["score", str(d), "--plan", str(plan), "--quiet"]) == 0
    assert list(d.glob(".score-index-*"))  # the scoring index is there now
    st = os.stat(plan)
    data = plan.read_bytes()
    i = data.rindex(b"Answer:")
    plan.write_bytes(data[:i] + b"Answeq:" + data[i + 7 :])  # same size
    os.utime(plan, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(plan).st_size == st.st_size and os.stat(plan).st_mtime_ns == st.st_mtime_ns
    msg = _fails(capsys, "score", str(d), "--plan", str(plan), "--quiet")
    assert msg == f"lmeval score: error: {plan}: plan hash mismatch: the file was modified or truncated"


def test_check_rows_unit() -> None:
    from lmeval.plans.plan import InstanceRecord

    insts = [
        InstanceRecord(f"{i:016x}", "t", i, 0, "loglikelihood", "c", " x", request_hash=f"{i:064x}") for i in range(3)
    ]
    plan = plan_keys(insts)
    rows = plan.with_columns(pl.lit(0, dtype=pl.Int32).alias("part"))
    check_rows(rows, plan, "p", ["a.parquet"])  # the plan's own rows pass
    check_rows(rows.head(1), plan, "p", ["a.parquet"])  # a partial set too (missing rows are score's business)
    for col, value in (("task", "u"), ("doc_id", 9), ("idx", 1), ("request_type", "generate_until")):
        bad = rows.with_columns(pl.lit(value).cast(rows.schema[col]).alias(col))
        with pytest.raises(RowMismatchError, match=f"a.parquet: the row of instance .* has {col} "):
            check_rows(bad, plan, "p", ["a.parquet"])
    with pytest.raises(RowMismatchError, match="a.parquet: instance .* has a row twice in that part"):
        check_rows(pl.concat([rows, rows.head(1)]), plan, "p", ["a.parquet"])
    assert read_row_keys([]).height == 0


def test_one_reader_of_result_parts(runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``plans.results.read_parts`` is what score, resume, merge, --reuse and the report read rows with: a results
    directory whose path holds glob characters reads like any other; a part that is not Parquet, or lacks a
    column, is a one-line error naming that part, from the scorer as from the reader."""
    from lmeval.plans.errors import PlanError
    from lmeval.plans.results import PART, RESULT_COLUMNS, read_parts

    d = _copy(runs["r0"], tmp_path / "run[1]*?")
    parts = part_files(d)
    assert len(parts) > 1
    keys = read_row_keys(parts)
    assert keys.columns == [*KEY_COLUMNS, PART] and keys[PART].unique().sort().to_list() == list(range(len(parts)))
    assert read_results(d).equals(read_results(runs["r0"]))
    assert main(["score", str(d), "--plan", str(runs["p0"]), "--quiet"]) == 0
    full = read_parts(parts)
    assert full.columns == [*RESULT_COLUMNS, PART] and full.height == keys.height
    pl.read_parquet(parts[1], glob=False).drop("request_hash").write_parquet(parts[1])
    with pytest.raises(PlanError, match=rf"^{re.escape(str(parts[1]))}: unreadable result part \(ColumnNotFoundError"):
        read_row_keys(parts)
    parts[0].write_bytes(b"not parquet")
    for read in (lambda: read_results(d), lambda: read_parts(parts, ["task"])):
        with pytest.raises(PlanError, match=rf"^{re.escape(str(parts[0]))}: unreadable result part"):
            read()
    msg = _fails(capsys, "score", str(d), "--plan", str(runs["p0"]), "--quiet")
    assert msg.startswith(f"lmeval score: error: {parts[0]}: unreadable result part")
