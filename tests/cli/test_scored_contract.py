"""The scored-run contract (``plans/scored/files.py``) on hostile results.json and samples.parquet: ``lmeval
compare`` and ``lmeval report`` print one line naming the file (and field), exit 2, no traceback, no hang;
and a scored run reads back as exactly what was written."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from lmeval.cli import main
from lmeval.plans.errors import PlanError
from lmeval.plans.scored.files import MAX_RESULTS_BYTES, RESULTS_JSON, SAMPLES_PARQUET, read_scored
from lmeval.scorer.score import score_run
from tests.scorer.golden_io import build, load_golden

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    golden = load_golden("fake")
    _, rdir = build(golden, tmp_path_factory.mktemp("scored"))
    score_run(str(rdir), bootstrap_iters=100)
    return rdir


def _write(text: str | bytes) -> Callable[[Path], None]:
    def put(p: Path) -> None:
        p.unlink()
        p.write_bytes(text.encode() if isinstance(text, str) else text)

    return put


def _link(target: str) -> Callable[[Path], None]:
    def put(p: Path) -> None:
        p.unlink()
        p.symlink_to(target)

    return put


def _fifo(p: Path) -> None:
    p.unlink()
    os.mkfifo(p)


def _folder(p: Path) -> None:
    p.unlink()
    p.mkdir()


RESULTS_CASES: dict[str, tuple[Callable[[Path], None], str]] = {
    "30 MB": (
        _write(b'{"results": {}, "pad": "' + b"x" * (30 << 20) + b'"}'),
        f"more than the limit of {MAX_RESULTS_BYTES}",
    ),
    "deeply nested": (_write("[" * 100_000 + "]" * 100_000), "nested deeper than 64 levels"),
    "nested under the limit of bytes": (_write('{"results": ' + '{"a": ' * 80 + "1" + "}" * 81), "nested deeper"),
    "a list": (_write("[1, 2]"), "not a JSON object (a list)"),
    "null": (_write("null"), "not a JSON object (null)"),
    "garbage bytes": (_write(b"\xff\xfe\x00garbage\x80"), "malformed results.json: not"),
    "no results map": (_write('{"plan_hash": "x"}'), "field results: missing or not an object"),
    "a metric that is a list": (
        _write('{"results": {"t": {"acc,none": [1]}}}'),
        "field results.t.acc,none: not a number",
    ),
    "plan_hash a number": (_write('{"results": {}, "plan_hash": 3}'), "field plan_hash: not a string"),
    "partial count a string": (
        _write('{"results": {}, "partial": {"t": {"missing_instances": "many"}}}'),
        "field partial.t.missing_instances: not an integer",
    ),
    "/dev/zero": (_link("/dev/zero"), "expected a regular results.json, found a character device"),
    "a FIFO": (_fifo, "expected a regular results.json, found a FIFO"),
    "a directory": (_folder, "expected a regular results.json, found a directory"),
}

SAMPLES_CASES: dict[str, tuple[Callable[[Path], None], str]] = {
    "30 MB of garbage": (_write(os.urandom(1 << 16) * 480), "samples.parquet: not a Parquet file"),
    "garbage bytes": (_write(b"PAR1garbagePAR1"), "samples.parquet: not a Parquet file"),
    "empty": (_write(b""), "samples.parquet: not a Parquet file"),
    "/dev/zero": (_link("/dev/zero"), "expected a regular samples.parquet, found a character device"),
    "a FIFO": (_fifo, "expected a regular samples.parquet, found a FIFO"),
    "a directory": (_folder, "expected a regular samples.parquet, found a directory"),
}


def _hostile(scored: Path, tmp: Path, name: str, put: Callable[[Path], None]) -> Path:
    d = tmp / "hostile"
    shutil.copytree(scored, d)
    put(d / name)
    return d


CHILD = {"a FIFO", "/dev/zero"}  # could block or never end if read: run in a child with a timeout


def _one_line_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str], child: bool) -> str:
    if child:  # a hang fails the test at the timeout instead of blocking the suite
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        code = "import sys; from lmeval.cli import main; sys.exit(main(sys.argv[1:]))"
        p = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=120, env=env)
        rc, err = p.returncode, p.stderr
    else:
        rc, err = main(argv), capsys.readouterr().err
    assert rc == 2, (rc, err[-2000:])
    assert err.count("\n") == 1 and "Traceback" not in err, err[-2000:]
    return err


def _both_commands(scored: Path, bad: Path, tmp: Path, capsys: pytest.CaptureFixture[str], case: str) -> list[str]:
    return [
        _one_line_exit_2(["compare", str(scored), str(bad)], capsys, case in CHILD),
        _one_line_exit_2(["report", str(bad), "-o", str(tmp / "report.html")], capsys, case in CHILD),
    ]


@pytest.mark.parametrize("case", list(RESULTS_CASES))
def test_hostile_results_json(scored: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str) -> None:
    put, needle = RESULTS_CASES[case]
    bad = _hostile(scored, tmp_path, RESULTS_JSON, put)
    for err in _both_commands(scored, bad, tmp_path, capsys, case):
        assert needle in err and str(bad / RESULTS_JSON) in err, err
    assert not (tmp_path / "report.html").exists()


@pytest.mark.parametrize("case", list(SAMPLES_CASES))
def test_hostile_samples_parquet(scored: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str) -> None:
    put, needle = SAMPLES_CASES[case]
    bad = _hostile(scored, tmp_path, SAMPLES_PARQUET, put)
    for err in _both_commands(scored, bad, tmp_path, capsys, case):
        assert needle in err and str(bad / SAMPLES_PARQUET) in err, err


def test_samples_without_key_column(scored: Path, tmp_path: Path) -> None:
    import polars as pl

    bad = _hostile(scored, tmp_path, SAMPLES_PARQUET, lambda p: None)
    pl.read_parquet(bad / SAMPLES_PARQUET).drop("doc_id").write_parquet(bad / SAMPLES_PARQUET)
    with pytest.raises(PlanError, match="column 'doc_id' missing or not Int64"):
        read_scored(bad)


def test_unscored_run_names_the_command(scored: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = _hostile(scored, tmp_path, RESULTS_JSON, Path.unlink)
    assert main(["compare", str(scored), str(bad)]) == 2
    assert f"not a scored run (no results.json; run `lmeval score {bad}` first)" in capsys.readouterr().err


def test_reads_back_what_score_wrote(scored: Path) -> None:
    """The reader's record is the written document, field for field (results.json round-trips)."""
    files = read_scored(scored)
    on_disk = json.loads((scored / RESULTS_JSON).read_text(encoding="utf-8"))
    assert files.results.to_dict() == on_disk
    assert files.results.plan_hash and files.results.results and files.samples.height > 0
    depth, order = files.results.depths()
    assert set(order) == set(on_disk["results"]) and all(d >= 0 for d in depth.values())
