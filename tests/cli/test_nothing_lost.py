""" "Nothing already written is lost": a command that fails leaves every file it would have replaced exactly as
it was, and leaves no temporary files behind (compile onto an existing plan, a failing re-score over
results.json, a refused merge into an existing directory). Execution runs on the deterministic fake backend."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import cli_in_process as _cli


def _snapshot(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def _kept(before: dict[str, bytes], after: dict[str, bytes]) -> bool:
    """Every file that existed is still there with the same bytes, and nothing half-written was left."""
    lost = [k for k, v in before.items() if after.get(k) != v]
    temp = [k for k in after.keys() - before.keys() if "tmp" in k.lower() or k.endswith(".partial")]
    assert not lost and not temp, (lost, temp)
    return True


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# arith's doc 29 has b == 7: the template fails there, after 29 documents were rendered and encoded
FAILS_AT_DOC_29 = 'task.doc_to_text="Q {{a}} {{ 1 // (b - 7) }}"'


def test_failed_compile_keeps_the_existing_plan(tmp_path: Path) -> None:
    plan = tmp_path / "p.msgpack"
    rc, out, _ = _cli("compile", "+task=arith", f"run.out={plan}")
    assert rc == 0 and out.strip().splitlines()[-1] == str(plan)
    before = _snapshot(tmp_path)
    rc, _, err = _cli("compile", "+task=arith", f"run.out={plan}", FAILS_AT_DOC_29)
    assert rc == 2
    assert "doc 29" in _one_line(err) and "doc_to_text" in err
    assert _snapshot(tmp_path) == before  # same bytes, and no temporary file left beside it


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """A 2-task plan executed on the fake backend (whole and as two shards) and scored."""
    work = tmp_path_factory.mktemp("lost")
    plan = work / "plan.msgpack"
    other = work / "other.msgpack"
    assert _cli("compile", "+task=arith", "run.limit=30", f"run.out={plan}")[0] == 0
    assert _cli("compile", "+task=arith", "run.limit=30", "run.num_fewshot=1", f"run.out={other}")[0] == 0
    res = work / "res"
    assert _cli("execute", str(plan), "model.backend=fake", "--out", str(res))[0] == 0
    assert _cli("score", str(res), "--quiet")[0] == 0
    for i in (0, 1):
        shard = ("--shard", f"{i}/2", "--out", str(work / f"s{i}"))
        assert _cli("execute", str(plan), "model.backend=fake", *shard)[0] == 0
    assert _cli("execute", str(other), "model.backend=fake", "--shard", "1/2", "--out", str(work / "x1"))[0] == 0
    return work, plan, other


def test_failed_rescore_keeps_results_json(scored: tuple[Path, Path, Path]) -> None:
    work, _, other = scored
    res = work / "res"
    assert (res / "results.json").is_file() and (res / "samples.parquet").is_file()
    before = _snapshot(res)
    # scored against the wrong plan: refused
    rc, _, err = _cli("score", str(res), "--plan", str(other), "--quiet")
    assert rc == 2 and str(other) in _one_line(err)
    assert _kept(before, _snapshot(res))
    # a results part truncated after the first score: refused, the earlier results stay
    part = sorted(res.glob("part-*.parquet"))[0]
    saved = part.read_bytes()
    try:
        part.write_bytes(saved[: len(saved) // 2])
        before = _snapshot(res)
        rc, _, err = _cli("score", str(res), "--quiet")
        assert rc == 2 and part.name in _one_line(err)
        assert _kept(before, _snapshot(res))
    finally:
        part.write_bytes(saved)


def test_refused_merge_keeps_the_existing_output(scored: tuple[Path, Path, Path]) -> None:
    work, _, _ = scored
    merged = work / "merged"
    rc, out, _ = _cli("merge", str(work / "s0"), str(work / "s1"), "--out", str(merged))
    assert rc == 0 and out.strip().splitlines()[-1] == str(merged)
    before = _snapshot(merged)
    assert before
    # a shard of another plan merged into the same output: refused, the merged directory untouched
    rc, _, err = _cli("merge", str(work / "s0"), str(work / "x1"), "--out", str(merged))
    assert rc == 2 and str(work / "x1") in _one_line(err)
    assert _snapshot(merged) == before


def test_overrides_may_follow_the_options(scored: tuple[Path, Path, Path]) -> None:
    """`lmeval execute PLAN --out DIR model.backend=fake`: overrides after an option are still overrides."""
    work, plan, _ = scored
    rc, out, _ = _cli("execute", str(plan), "--out", str(work / "after"), "model.backend=fake")
    assert rc == 0 and out.strip().splitlines()[-1] == str(work / "after")
    with pytest.raises(SystemExit) as e:  # anything else after the options is still refused
        _cli("execute", str(plan), "--out", str(work / "after2"), "--bogus")
    assert e.value.code == 2
