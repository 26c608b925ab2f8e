"""Result parts and manifests: checksummed parts (``plans/results/partsum.py``), parts that are not regular files, a
manifest's ``plan_path`` that names no plan or another plan, a part with a null ``instance_id`` (one row or two) or
an ``instance_id`` that is not a string."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tests.hostile.corpus import FAKE, Base, Case, case, copytree, forged_manifest, lmeval


def _flip(r: Path) -> Path:
    part = sorted(r.glob("part-*.parquet"))[0]
    data = bytearray(part.read_bytes())
    data[len(data) // 2] ^= 0x01
    part.write_bytes(bytes(data))
    return part


def _unfinished(r: Path) -> None:
    m = json.loads((r / "manifest.json").read_text(encoding="utf-8"))
    m["finished"] = None
    (r / "manifest.json").write_text(json.dumps(m), encoding="utf-8")


@case("parts")
def part_flipped_byte_resume(tmp: Path, base: Base) -> Case:
    r = copytree(base.results, tmp / "r")
    _unfinished(r)
    part = _flip(r)
    argv = ["execute", str(base.plan), FAKE, "--out", str(r), "--no-progress"]
    return Case(argv, (str(part), "checksum"), keep=[r])


@case("parts")
def part_flipped_byte_score(tmp: Path, base: Base) -> Case:
    r = copytree(base.results, tmp / "r")
    part = _flip(r)
    return Case(
        ["score", str(r), "--plan", str(base.plan), "--quiet"],
        (str(part), "checksum"),
        keep=[part],
        absent=[r / "results.json"],
    )


@case("parts")
def part_flipped_byte_merge(tmp: Path, base: Base) -> Case:
    shards = [tmp / "s0", tmp / "s1"]
    for i, d in enumerate(shards):
        p = lmeval("execute", str(base.plan), FAKE, "--shard", f"{i}/2", "--out", str(d), "--no-progress", cwd=tmp)
        assert p.returncode == 0, p.stderr
    part = _flip(shards[1])
    argv = ["merge", *map(str, shards), "--out", str(tmp / "merged")]
    return Case(argv, (str(part), "checksum"), keep=shards, absent=[tmp / "merged"])


def _resumed(c: Case, base: Base) -> Case:
    """The score case ``c`` as a resume: its results dir left unfinished, then ``execute`` into it."""
    r = Path(c.argv[1])
    _unfinished(r)
    return Case(["execute", str(base.plan), FAKE, "--out", str(r), "--no-progress"], c.needles, keep=[r])


@case("parts")
def part_null_instance_id_resume(tmp: Path, base: Base) -> Case:
    return _resumed(part_null_instance_id(tmp, base), base)


@case("parts")
def part_flipped_byte_reuse(tmp: Path, base: Base) -> Case:
    old = copytree(base.results, tmp / "old")
    part = _flip(old)
    argv = ["execute", str(base.plan), FAKE, "--out", str(tmp / "r"), "--no-progress", "--reuse", str(old)]
    return Case(argv, (str(part), "checksum"), keep=[old], absent=[tmp / "r"])


@case("parts")
def part_is_a_fifo_score(tmp: Path, base: Base) -> Case:
    r = copytree(base.results, tmp / "r")
    os.mkfifo(r / "part-000099.parquet")
    return Case(
        ["score", str(r), "--plan", str(base.plan), "--quiet"],
        ("part-000099.parquet", "FIFO"),
        absent=[r / "results.json"],
        timeout=30,
    )


@case("parts")
def part_is_a_fifo_resume(tmp: Path, base: Base) -> Case:
    r = copytree(base.results, tmp / "r")
    _unfinished(r)
    os.mkfifo(r / "part-000099.parquet")
    argv = ["execute", str(base.plan), FAKE, "--out", str(r), "--no-progress"]
    return Case(argv, ("part-000099.parquet", "FIFO"), timeout=30)


def _forged_ids(tmp: Path, base: Base, ids: Any, *needles: str) -> Case:
    """The results with the first part rewritten (as a plain part) with ``ids`` as its ``instance_id`` column."""
    import polars as pl

    r = copytree(base.results, tmp / "r")
    part = sorted(r.glob("part-*.parquet"))[0]
    df = pl.read_parquet(part)
    part.unlink()
    plain = r / "part-000000.parquet"
    df.with_columns(ids.alias("instance_id")).write_parquet(plain)
    return Case(
        ["score", str(r), "--plan", str(base.plan), "--quiet"],
        (str(plain), "instance_id", *needles),
        absent=[r / "results.json"],
    )


def _null_first(n: int) -> Any:
    import polars as pl

    return pl.when(pl.int_range(pl.len()) < n).then(None).otherwise(pl.col("instance_id"))


@case("parts")
def part_null_instance_id(tmp: Path, base: Base) -> Case:
    return _forged_ids(tmp, base, _null_first(1), "is null in 1 row(s)")


@case("parts")
def part_two_null_instance_ids(tmp: Path, base: Base) -> Case:
    return _forged_ids(tmp, base, _null_first(2), "is null in 2 row(s)", "doc ")


@case("parts")
def part_two_null_instance_ids_resume(tmp: Path, base: Base) -> Case:
    return _resumed(part_two_null_instance_ids(tmp, base), base)


@case("parts")
def part_instance_id_not_a_string(tmp: Path, base: Base) -> Case:
    import polars as pl

    return _forged_ids(tmp, base, pl.int_range(pl.len()), "Int64", "expected a string")


@case("parts")
def manifest_plan_path_dev_zero_resume(tmp: Path, base: Base) -> Case:
    r = copytree(base.results, tmp / "r")
    m = json.loads(forged_manifest(base, plan_path="/dev/zero", finished=None))
    (r / "manifest.json").write_text(json.dumps(m), encoding="utf-8")
    argv = ["execute", str(base.plan), FAKE, "--out", str(r), "--no-progress"]
    return Case(argv, ("plan_path", "/dev/zero"), keep=[r], timeout=30)


@case("parts")
def manifest_plan_path_other_plan_resume(tmp: Path, base: Base) -> Case:
    other = tmp / "other.msgpack"
    p = lmeval("compile", "+task=arith", "run.limit=2", "--out", str(other), cwd=tmp)
    assert p.returncode == 0, p.stderr
    r = copytree(base.results, tmp / "r")
    m = json.loads(forged_manifest(base, plan_path=str(other), finished=None))
    (r / "manifest.json").write_text(json.dumps(m), encoding="utf-8")
    argv = ["execute", str(base.plan), FAKE, "--out", str(r), "--no-progress"]
    return Case(argv, ("plan_path", str(other), "another plan"), keep=[r])


@case("parts")
def manifest_shard_claim_all_rows_score(tmp: Path, base: Base) -> Case:
    """A manifest claiming shard 1/2 over the parts of the whole plan: score refuses it as resume does."""
    r = copytree(base.results, tmp / "r")
    (r / "manifest.json").write_bytes(forged_manifest(base, shard="1/2"))
    return Case(
        ["score", str(r), "--plan", str(base.plan), "--quiet"],
        ("part-", "another shard"),
        keep=sorted(r.glob("part-*")),
        absent=[r / "results.json"],
    )


@case("parts")
def manifest_shard_claim_all_rows_resume(tmp: Path, base: Base) -> Case:
    r = copytree(base.results, tmp / "r")
    (r / "manifest.json").write_bytes(forged_manifest(base, shard="1/2", finished=None))
    argv = ["execute", str(base.plan), FAKE, "--shard", "1/2", "--out", str(r), "--no-progress"]
    return Case(argv, ("part-", "another shard"), keep=[r])
