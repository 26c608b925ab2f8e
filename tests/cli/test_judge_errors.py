"""``lmeval judge`` / ``judge-score`` on bad input: one line naming the file and field, exit 2, no traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import cli_in_process as cli


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--judge", "nope"], "conf/judge/nope.yaml"),
        (["--judge", "single_10", "mode=x"], "judge.mode"),
        (["--judge", "single_10", "parse.regex=(a"], "judge.parse.regex"),
        (["--judge", "single_10", "parse.regex=no group"], "exactly one group"),
        (["--judge", "single_10", "generation.max_gen_toks=0"], "judge.generation.max_gen_toks"),
        (["--judge", "single_10", "model=nomodel"], "conf/model/nomodel.yaml"),
        (["--judge", "single_10"], "not a results directory"),
    ],
)
def test_judge_bad_input(tmp_path: Path, extra: list[str], says: str) -> None:
    rc, out, err = cli("judge", str(tmp_path), *extra)
    assert rc == 2 and says in err and err.count("\n") == 1 and "Traceback" not in err, err


def test_judge_of_an_unscored_run(tmp_path: Path) -> None:
    """A results directory (its manifest read first, ``plans.open_run``) that was never scored."""
    manifest = {"plan_hash": "ab" * 32, "plan_path": "", "model": {}, "backend": "fake"}
    (tmp_path / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    rc, _, err = cli("judge", str(tmp_path), "--judge", "single_10")
    assert rc == 2 and "not a scored run" in err and err.count("\n") == 1 and "Traceback" not in err, err


def test_judge_score_of_a_non_judge_run(tmp_path: Path) -> None:
    rc, _, err = cli("judge-score", str(tmp_path), "--into", str(tmp_path))
    assert rc == 2 and "not a results directory" in err and err.count("\n") == 1, err
