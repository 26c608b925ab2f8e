"""``run.subsample`` (#40, plans/vocab/subsample.py) and ``sample_scores`` (plans/vocab/samplescores.py) at compile
time.

A subsampled plan holds, for the chosen ids, exactly the full plan's documents and requests (few-shot examples
included), the same ids in any process, the setting and ids in the task config (so the plan hash and
``lmeval diff`` name it); plans without either setting carry no trace of them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from lmeval.compiler.config import CONF_DIR
from lmeval.compiler.pipeline import compile_located
from lmeval.plans.plan import DocRecord, InstanceRecord
from lmeval.plans.vocab.subsample import Subsample, allocate, choose, stratum_of
from tests.support import jsonl_rows

SUB = "run.subsample={n:25,seed:3,strata:answerKey}"
BASE = ["+task=arc_easy", "model=tiny", "run.num_fewshot=2"]


def _compiled(data: Path, *extra: str) -> Any:
    return compile_located([*BASE, f"run.data_dir={data}", *extra])


@pytest.fixture(scope="module")
def full(data: Path) -> Any:
    return _compiled(data)


@pytest.fixture(scope="module")
def sub(data: Path) -> Any:
    return _compiled(data, SUB)


def _by_doc(c: Any) -> tuple[dict[int, DocRecord], dict[str, InstanceRecord]]:
    docs = {r.doc_id: r for r in c.records if isinstance(r, DocRecord)}
    insts = {r.instance_id: r for r in c.records if isinstance(r, InstanceRecord)}
    return docs, insts


def test_subset_holds_the_full_plans_documents(full: Any, sub: Any) -> None:
    rec = sub.header.tasks[0].config["subsample"]
    rows = jsonl_rows("arc_easy", "test")
    assert rec["population"] == len(rows) == full.header.tasks[0].n_docs
    assert {k: rec[k] for k in ("n", "scheme", "seed", "strata")} == {
        "n": 25,
        "scheme": "random",
        "seed": 3,
        "strata": "answerKey",
    }
    sizes = Counter(str(r["answerKey"]) for r in rows)
    assert rec["strata_sizes"] == dict(sizes)
    ids = rec["doc_ids"]
    assert ids == sorted(ids) and len(ids) == 25 == sub.header.tasks[0].n_docs
    got = Counter(str(rows[i]["answerKey"]) for i in ids)  # proportional allocation, from the data itself
    assert got == Counter(rec["doc_strata"]) and dict(got) == allocate(dict(sizes), 25)
    small = {s for s, n in sizes.items() if 25 * n / len(rows) < 1}  # each stratum gets one at least
    assert all(got[s] == 1 for s in small)
    big = sum(n for s, n in sizes.items() if s not in small)
    assert all(abs(got[s] - (25 - len(small)) * n / big) < 1 for s, n in sizes.items() if s not in small)
    fdocs, finsts = _by_doc(full)
    sdocs, sinsts = _by_doc(sub)
    assert sorted(sdocs) == ids
    for i in ids:  # the same document, few-shot examples and requests as in the full run
        assert sdocs[i].doc == rows[i] and sdocs[i] == fdocs[i]
    assert sinsts and all(finsts[k].request_hash == v.request_hash and finsts[k] == v for k, v in sinsts.items())


def test_subsample_ids_are_the_same_in_any_process(tmp_path: Path, data: Path, sub: Any) -> None:
    """Compiled in two processes with different hash seeds: byte-identical plans; and the ids are the rule's
    (sha256 order per stratum), recomputed here from the data."""
    outs = [tmp_path / "a.msgpack", tmp_path / "b.msgpack"]
    for out, seed in zip(outs, ("1", "4242"), strict=True):
        cmd = [sys.executable, "-m", "lmeval", "compile", *BASE, f"run.data_dir={data}", SUB, f"--out={out}"]
        subprocess.run(
            cmd, check=True, env={**os.environ, "PYTHONHASHSEED": seed}, cwd=CONF_DIR.parent, capture_output=True
        )
    assert outs[0].read_bytes() == outs[1].read_bytes()
    strata = [stratum_of(r["answerKey"]) for r in jsonl_rows("arc_easy", "test")]
    drawn = choose("arc_easy", strata, Subsample(25, 3, "answerKey"))
    assert drawn.doc_ids == sub.header.tasks[0].config["subsample"]["doc_ids"]
    other = choose("arc_easy", strata, Subsample(25, 4, "answerKey"))
    assert other.doc_ids != drawn.doc_ids  # the seed matters


def test_diff_names_the_setting(tmp_path: Path, full: Any, sub: Any, cli: Any) -> None:
    a, b = full.write(str(tmp_path / "full.msgpack")), sub.write(str(tmp_path / "sub.msgpack"))
    rc, out, _ = cli("diff", str(a), str(b), "--show", "0")
    assert rc == 1
    assert 'run.subsample: (absent) → {"n": 25, "scheme": "random", "seed": 3, "strata": "answerKey"}' in out
    assert "config.subsample" in out and "docs 2376→25 (+0 -2351 ~0)" in out  # no chosen document changed


def test_plans_without_the_settings_carry_none(full: Any) -> None:
    assert "subsample" not in full.header.config["run"] and "sample_scores" not in full.header.config["run"]
    assert "subsample" not in full.header.tasks[0].config and "sample_scores" not in full.header.tasks[0].config


def test_one_spelling_per_setting(data: Path, sub: Any) -> None:
    """``{n: 25}`` and ``25`` are one plan (the seed's default written out)."""
    a = _compiled(data, "run.subsample=25").header
    b = _compiled(data, "run.subsample={n:25,seed:1234}").header
    assert a.plan_hash == b.plan_hash != sub.header.plan_hash
    assert a.config["run"]["subsample"] == {"n": 25, "scheme": "random", "seed": 1234, "strata": None}


def test_sample_scores_in_the_task_config(data: Path) -> None:
    """``run.sample_scores`` reaches the generation tasks only; a task's own ``sample_scores`` wins."""
    h = compile_located(
        [
            "+task=[arith,arc_easy]",
            "model=tiny",
            f"run.data_dir={data}",
            "run.limit=2",
            "task.arith.repeats=4",
            "run.sample_scores=[mean,pass@2]",
        ]
    ).header
    cfg = {t.name: t.config for t in h.tasks}
    assert cfg["arith"]["sample_scores"] == ["mean", "pass@2"] and "sample_scores" not in cfg["arc_easy"]
    h = compile_located(
        ["+task=arith", "model=tiny", "run.limit=2", "task.repeats=4", "task.sample_scores=majority"]
    ).header
    assert h.tasks[0].config["sample_scores"] == ["majority"]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["+task=arc_easy", "run.subsample=5", "run.limit=5"], "field run.subsample: run.limit takes the first"),
        (["+task=arc_easy", "run.subsample={n:5,strata:nope}"],
         "task arc_easy, field run.subsample.strata: the documents have no field 'nope'"),
        (["+task=arc_easy", "run.subsample=-3"], "field run.subsample.n: must be a positive integer"),
        (["+task=arc_easy", "run.subsample={n:5,sed:1}"], "field run.subsample.sed: unknown"),
        (["+task=arc_easy", "run.subsample={n:5,scheme:first}"], "field run.subsample.scheme: must be one of random"),
        (["+task=arith", "task.repeats=4", "task.sample_scores=[pass@8]"],
         "task arith, field sample_scores: pass@8 needs repeats >= 8, the task has repeats 4"),
        (["+task=arith", "task.sample_scores=[avg]"], "field sample_scores: unknown reduction 'avg'"),
        (["+task=arc_easy", "task.sample_scores=[mean]"],
         "task arc_easy, field sample_scores: scores the repeats of generations"),
        (["+task=arith", "run.sample_scores=[pass@2]"], "task arith, field run.sample_scores: pass@2 needs repeats"),
    ],
)  # fmt: skip
def test_bad_settings_are_one_line(data: Path, cli: Any, args: list[str], says: str) -> None:
    rc, _, err = cli("compile", *args, "model=tiny", f"run.data_dir={data}", "--out", os.devnull)
    assert rc == 2 and says in err and err.count("\n") == 1 and "Traceback" not in err, err
