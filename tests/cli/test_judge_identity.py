"""``judge-score`` checks the identity it claims (#53 items 5 and 7), without a real model (fake backend): the run
graded into has the answers the judge plan judged (another run whose answers differ, or answers edited after
``lmeval judge``, is refused), the judge run is finished, every judge row is an Instance of the judge plan (a
forged row for a document the judge plan does not hold is refused); a grade like ``1e999`` is unparsed and
``judge.json`` holds no ``Infinity``/``NaN``."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from tests.support import cli_in_process as cli

PARSE = [r"parse.regex=answer (\S+)", "parse.min=0", "parse.max=null"]  # no upper bound: 1e999 passes it


def _ok(*argv: str) -> str:
    rc, out, err = cli(*argv)
    assert rc == 0, err
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """d/judged: a scored fake gsm8k run (3 docs); d/judge.msgpack its judge plan; d/jr: the judge plan run."""
    from tests.support import data_dir

    d = tmp_path_factory.mktemp("judge")
    _ok("compile", "+task=gsm8k", "run.limit=3", f"run.data_dir={data_dir()}", "model=tiny", "--out",
        str(d / "p.msgpack"))  # fmt: skip
    _ok("execute", str(d / "p.msgpack"), "model.backend=fake", "--out", str(d / "judged"), "--no-progress")
    _ok("score", str(d / "judged"), "--quiet")
    _ok("judge", str(d / "judged"), "--judge", "single_10", "model=tiny", *PARSE, "--out", str(d / "judge.msgpack"))
    _ok("execute", str(d / "judge.msgpack"), "model.backend=fake", "--out", str(d / "jr"), "--no-progress")
    return d


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def _rewrite_rows(results: Path, change: Callable[[pl.DataFrame], pl.DataFrame]) -> None:
    """Replace a results directory's parts by one part holding ``change(rows)`` (a part named without a checksum
    is read unchecked: what a forger writes)."""
    parts = sorted(results.glob("part-*.parquet"))
    df = pl.concat([pl.read_parquet(p) for p in parts])
    for p in parts:
        p.unlink()
    change(df).write_parquet(results / "part-000000.parquet")


def _score_into(jr: Path, judged: Path, *extra: str) -> tuple[int, str, str]:
    return cli("judge-score", str(jr), "--into", str(judged), *extra)


def test_the_judged_run_grades_and_judge_json_is_json(runs: Path, tmp_path: Path) -> None:
    judged = _copy(runs / "judged", tmp_path / "judged")
    rc, out, err = _score_into(runs / "jr", judged)
    assert rc == 0 and "over 3 documents, 0 unparsed" in out, out + err
    json.loads((judged / "judge.json").read_text(), parse_constant=_no_constant)


def test_answers_edited_after_judging_are_refused(runs: Path, tmp_path: Path) -> None:
    judged = _copy(runs / "judged", tmp_path / "judged")
    samples = pl.read_parquet(judged / "samples.parquet")
    samples.with_columns(filtered=pl.col("filtered") + " (edited)").write_parquet(judged / "samples.parquet")
    before = (judged / "results.json").read_bytes()
    rc, _, err = _score_into(runs / "jr", judged)
    assert rc == 2 and "its answers are not the ones the judge plan judged" in err and err.count("\n") == 1, err
    assert not (judged / "judge.json").exists() and (judged / "results.json").read_bytes() == before


def test_an_unfinished_judge_run_is_refused(runs: Path, tmp_path: Path) -> None:
    judged = _copy(runs / "judged", tmp_path / "judged")
    jr = _copy(runs / "jr", tmp_path / "jr")
    _rewrite_rows(jr, lambda df: df.filter(pl.col("doc_id") != 1))  # one answer lost
    m = json.loads((jr / "manifest.json").read_text())
    (jr / "manifest.json").write_text(json.dumps({**m, "finished": None}))
    rc, _, err = _score_into(jr, judged)
    assert rc == 2 and "the judge run is unfinished (2 of 3 Instances answered)" in err, err
    assert not (judged / "judge.json").exists()


def test_a_forged_row_for_a_document_not_in_the_judge_plan_is_refused(runs: Path, tmp_path: Path) -> None:
    from lmeval.plans import instance_id_for

    judged = _copy(runs / "judged", tmp_path / "judged")
    jr = _copy(runs / "jr", tmp_path / "jr")
    forged = {"doc_id": 99, "instance_id": instance_id_for("judge_gsm8k", 99, 0), "response": " answer 1000"}

    def add(df: pl.DataFrame) -> pl.DataFrame:
        row = {**df.row(0, named=True), **forged}
        return pl.concat([df, pl.DataFrame([row], schema=df.schema)])

    _rewrite_rows(jr, add)
    rc, _, err = _score_into(jr, judged)
    assert rc == 2 and err.count("\n") == 1 and "judge_gsm8k" in err and "99" in err, err
    assert not (judged / "judge.json").exists()


def test_a_non_finite_grade_is_unparsed(runs: Path, tmp_path: Path) -> None:
    judged = _copy(runs / "judged", tmp_path / "judged")
    jr = _copy(runs / "jr", tmp_path / "jr")
    texts = {0: " fake answer 1e999", 1: " fake answer inf", 2: " fake answer 7"}
    _rewrite_rows(jr, lambda df: df.with_columns(response=pl.col("doc_id").replace_strict(texts)))
    rc, out, err = _score_into(jr, judged)
    assert rc == 0 and "judge_score 7.0000" in out and "1 documents, 2 unparsed" in out, out + err
    text = (judged / "judge.json").read_text()
    entry: Any = json.loads(text, parse_constant=_no_constant)
    (grades,) = [e["tasks"]["gsm8k"]["grades"] for e in entry.values()]
    assert grades == {"0": None, "1": None, "2": 7.0}


def test_parse_rule_refuses_non_finite_bounds_and_grades() -> None:
    from lmeval.plans import ParseRule, PlanError

    rule = ParseRule.from_dict({"regex": r"\[\[(\S+)\]\]", "min": 1, "max": 10}, "single")
    assert [rule.grade(f"[[{x}]]") for x in ("1e999", "-1e999", "nan", "inf", "1", "10")] == [
        None, None, None, None, 1.0, 10.0]  # fmt: skip
    with pytest.raises(PlanError, match="judge.parse.max: a finite number"):
        ParseRule.from_dict({"regex": r"(\d)", "min": 1, "max": float("inf")}, "single")


def _no_constant(name: str) -> Any:
    raise AssertionError(f"{name} in judge.json: not JSON")


BOMBS = {
    "{{ 'x' * 999999999 }}": "template exceeds a bound",
    "{{ '%999999999s' % 'x' }}": "template exceeds a bound",
    "{{ 9 ** 999999999 }}": "template exceeds a bound",
    "{{ 2 ** 20000 }}": "template exceeds a bound",
    "{% for i in range(200000) %}{% endfor %}": "template failed: OverflowError",
    "{% include 'x' %}": "TemplateNotFound",
    "{{ ''.__class__.__mro__ }}": "template refused by the sandbox",
    "{{ 'x'.center(999999999) }}": "template exceeds a bound",
    "{% for a in range(99999) %}{% for b in range(99999) %}{% endfor %}{% endfor %}": "ran longer than the limit",
}


def test_judge_templates_are_under_the_task_templates_limits(runs: Path, tmp_path: Path) -> None:
    """#53 item 9: the rubric (and question/reference) templates are bounded as task templates are: each bomb
    is a one-line error naming the judge, task, doc and field, within the render time limit."""
    for n, (rubric, says) in enumerate(BOMBS.items()):
        for key in ("rubric", "question"):
            rc, _, err = cli("judge", str(runs / "judged"), "--judge", "single_10", "model=tiny", f"{key}={rubric}",
                             "--out", str(tmp_path / f"j{n}.msgpack"))  # fmt: skip
            assert rc == 2 and err.count("\n") == 1 and says in err, (rubric, err)
            assert f"judge single_10, task gsm8k, doc 0: judge.{key}:" in err, err
            assert not (tmp_path / f"j{n}.msgpack").exists()
            if "range(99999)" in rubric:
                break  # 10 s each: the rubric alone


def test_judge_configs_are_read_under_the_task_yaml_limits(runs: Path, tmp_path: Path) -> None:
    """#53 item 9: a judge YAML with an alias bomb, one over the size limit (sparse) and a FIFO named .yaml are
    refused in one line without being expanded or read whole; so is an override value holding an alias bomb."""
    import os

    bomb = tmp_path / "bomb.yaml"
    lines = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    lines += [f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}]"
              for i in range(1, 12)]  # fmt: skip
    bomb.write_text("\n".join(lines) + "\nmode: single\n")
    big = tmp_path / "big.yaml"
    with open(big, "wb") as f:
        f.truncate(2 << 30)
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    for judge, says in ((bomb, "values"), (big, "more than the limit"), (fifo, "no ")):
        rc, _, err = cli("judge", str(runs / "judged"), "--judge", str(judge))
        assert rc == 2 and err.count("\n") == 1 and says in err, (judge, err)
    items = ["&a0 [x, x, x, x, x, x, x, x, x, x]"] + [f"&a{i} [{', '.join([f'*a{i - 1}'] * 8)}]" for i in range(1, 12)]
    override = "generation.until=[" + ", ".join(items) + "]"  # the same bomb, flow style, in one override value
    rc, _, err = cli("judge", str(runs / "judged"), "--judge", "single_10", "model=tiny", override)
    assert rc == 2 and err.count("\n") == 1 and "judge override value" in err and "values" in err, err
