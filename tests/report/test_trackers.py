"""``--log-to`` / ``lmeval log`` without a tracker's store: names parsed (repeatable, comma lists), an unknown
tracker or a missing library is one line and exit 2 before anything is scored, and nothing of lmeval imports a
tracker's library until one is asked for."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from lmeval.cli.log import TRACKER_NAMES
from lmeval.report.errors import ReportError
from lmeval.report.trackers import TRACKERS, parse_trackers
from tests.report.trackers_support import cli, golden_run


def test_names() -> None:
    assert TRACKER_NAMES == TRACKERS == ("wandb", "trackio", "mlflow")
    assert parse_trackers(["mlflow", "wandb,trackio", " MLflow ,", "wandb"]) == ["mlflow", "wandb", "trackio"]
    with pytest.raises(ReportError, match="unknown tracker 'tensorboard' \\(one of: wandb, trackio, mlflow\\)"):
        parse_trackers(["wandb,tensorboard"])


@pytest.mark.parametrize("tracker", TRACKERS)
def test_a_missing_library_is_one_line_before_scoring(
    tracker: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, tracker, None)  # what `import tracker` meets when it is not installed
    rdir = golden_run(tmp_path)
    rc, out, err = cli("score", str(rdir), "--quiet", "--log-to", f"{tracker}")
    assert (rc, out) == (2, "")
    assert err == (
        f"lmeval score: error: {tracker}: the {tracker} library is not installed (pip install 'lmeval[{tracker}]')\n"
    )
    assert not (rdir / "results.json").exists()  # refused before scoring: nothing half done
    rc, _, err = cli("log", str(rdir), "--to", tracker)
    assert rc == 2 and f"pip install 'lmeval[{tracker}]'" in err and len(err.splitlines()) == 1


def test_unknown_tracker_and_unscored_run(tmp_path: Path) -> None:
    rdir = golden_run(tmp_path)
    rc, _, err = cli("score", str(rdir), "--quiet", "--log-to", "wandb,neptune")
    assert rc == 2 and "unknown tracker 'neptune'" in err and not (rdir / "results.json").exists()
    rc, _, err = cli("log", str(rdir), "--to", "mlflow")
    assert rc == 2 and len(err.splitlines()) == 1 and "not a scored run" in err
    assert not (rdir / "trackers").exists()


def test_no_tracker_is_imported_until_asked_for() -> None:
    code = (
        "import sys, pkgutil, importlib, lmeval.cli, lmeval.report.trackers as t\n"
        "lmeval.cli.build_parser()\n"
        "for m in pkgutil.walk_packages(t.__path__, 'lmeval.report.trackers.'):\n"
        "    importlib.import_module(m.name)\n"
        "print(sorted(m for m in ('wandb', 'trackio', 'mlflow', 'gradio_client') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout == "[]\n"
