"""A document field the prompt names that is missing from a data row or null in it (compiler/build/nullfields.py):
rendered ``None`` as lm-eval does (the same prompt bytes), with a one-line warning naming the data file, task,
prompt field, document field, count and first doc id, the same from a fresh build, a forked worker's and a
cache hit; under ``run.strict_fields=true`` the compile stops with that line (exit 2)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from lmeval.compiler.parallel import BuildSettings
from lmeval.compiler.pipeline import Compiled, compile_located
from lmeval.plans.plan import InstanceRecord
from tests.support import jsonl_rows

Cli = Callable[..., tuple[int, str, str]]  # tests/compiler/conftest.py's ``cli``
N = 30
MISSING, NULLED = (3, 7), (12,)  # rows losing their question, rows whose question is null


@pytest.fixture
def holes(tmp_path: Path) -> Path:
    """A data dir: arc_easy's first N test rows with ``question`` removed or nulled in three of them; arc_challenge's
    untouched (a second task, so a two-worker compile forks)."""
    d = tmp_path / "data"
    for name in ("arc_easy", "arc_challenge"):
        rows = jsonl_rows(name, "test", N)
        if name == "arc_easy":
            for i in MISSING:
                del rows[i]["question"]
            for i in NULLED:
                rows[i]["question"] = None
        (d / name).mkdir(parents=True)
        (d / name / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return d


def _overrides(d: Path, *extra: str) -> list[str]:
    return ["+task=[arc_easy,arc_challenge]", f"run.data_dir={d}", *extra]


def _contexts(c: Compiled, task: str) -> dict[int, str]:
    return {r.doc_id: r.context for r in c.records if isinstance(r, InstanceRecord) and r.task == task and r.idx == 0}


def test_a_missing_or_null_prompt_field_is_one_warning_with_the_count(holes: Path, tmp_path: Path, cli: Cli) -> None:
    rc, _, err = cli("compile", *_overrides(holes), "--no-cache", "--out", str(tmp_path / "p.msgpack"))
    assert rc == 0, err
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1, err
    w = warnings[0]
    for needle in (
        str(holes / "arc_easy" / "test.jsonl"),
        "task arc_easy",
        "field doc_to_text",
        "'question'",
        "in 3 document(s)",
        "first doc 3",
        "'None'",
    ):
        assert needle in w, (needle, w)


def test_the_prompt_bytes_are_lm_evals_and_untouched_rows_unchanged(holes: Path, data: Path) -> None:
    off = BuildSettings(cache=False, workers=1)
    got = _contexts(compile_located(_overrides(holes), off), "arc_easy")
    want = _contexts(compile_located(["+task=arc_easy", f"run.data_dir={data}", f"run.limit={N}"], off), "arc_easy")
    assert sorted(got) == sorted(want) == list(range(N))
    for i in range(N):
        if i in MISSING + NULLED:
            assert got[i] == "Question: None\nAnswer:", got[i]  # what lm-eval's Jinja renders from datasets' None
        else:
            assert got[i] == want[i]


def test_fresh_forked_and_cached_builds_warn_alike(holes: Path, tmp_path: Path) -> None:
    serial = compile_located(_overrides(holes), BuildSettings(cache=False, workers=1))
    on = BuildSettings(cache=True, workers=2, cache_dir=tmp_path / "cache")
    cold = compile_located(_overrides(holes), on)  # built in a forked worker and here, stored
    warm = compile_located(_overrides(holes), on)  # every task from the cache
    assert warm.cache.hits == 2 and cold.cache.stored == 2
    assert len(serial.warnings) == 1 and serial.warnings == cold.warnings == warm.warnings
    assert serial.header.plan_hash == cold.header.plan_hash == warm.header.plan_hash


def test_strict_fields_stops_the_compile_with_one_line(holes: Path, tmp_path: Path, cli: Cli) -> None:
    out = tmp_path / "p.msgpack"
    rc, _, err = cli("compile", *_overrides(holes, "run.strict_fields=true"), "--out", str(out))
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    for needle in (
        str(holes / "arc_easy" / "test.jsonl"),
        "task arc_easy",
        "field doc_to_text",
        "'question'",
        "in 3 document(s)",
        "first doc 3",
        "run.strict_fields",
    ):
        assert needle in err, (needle, err)
    assert not out.exists()
    # the rows before the first hole compile under the flag; a flag that is not a boolean is refused
    rc, _, err = cli("compile", *_overrides(holes, "run.strict_fields=true", "run.limit=3"), "--out", str(out))
    assert rc == 0 and "warning:" not in err, err
    rc, _, err = cli("compile", *_overrides(holes, "run.strict_fields=maybe"), "--out", str(tmp_path / "q"))
    assert rc == 2 and "run.strict_fields" in err and "true or false" in err, err
