"""``lmeval score --log-to wandb``: an offline W&B run (WANDB_MODE unset: offline, under RESULTS/trackers/wandb)
read back from its ``.wandb`` file through wandb's own protobuf records: the summary holds results.json's
metrics, the config the provenance, the Tables the results table and one row per sample."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.report.trackers_support import (
    check_config,
    check_samples,
    cli,
    expected_metrics,
    expected_results_rows,
    score_and_log,
)
from tests.report.wandb_reader import read_offline_run


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    mp = pytest.MonkeyPatch()
    mp.delenv("WANDB_MODE", raising=False)
    mp.setenv("WANDB_SILENT", "true")
    try:
        run = score_and_log(tmp_path_factory.mktemp("wandb"), "wandb")
    finally:
        mp.undo()
    (run_dir,) = (run["rdir"] / "trackers" / "wandb").glob("offline-run-*")
    run["wandb"] = read_offline_run(run_dir)
    return run


def test_the_run_is_offline_and_named(logged: dict[str, Any]) -> None:
    w = logged["wandb"]
    assert w.project == "lmeval" and w.name == f"results-{logged['results']['plan_hash'][:12]}"
    assert w.exit_code == 0
    assert logged["out"].splitlines()[-1] == f"wandb: {w.run_dir} (upload: wandb sync {w.run_dir})"


def test_summary_holds_the_metrics(logged: dict[str, Any]) -> None:
    want = expected_metrics(logged["results"])
    got = {k: v for k, v in logged["wandb"].summary.items() if "/" in k}
    assert got == want


def test_config_is_the_provenance(logged: dict[str, Any]) -> None:
    check_config(logged["wandb"].config, logged["results"])


def test_results_table(logged: dict[str, Any]) -> None:
    table = logged["wandb"].table("results")
    assert table["columns"] == ["task", "filter", "metric", "value", "stderr"]
    assert {tuple(r) for r in table["data"]} == expected_results_rows(logged["results"])
    assert len(table["data"]) == len(expected_results_rows(logged["results"]))


def test_samples_table(logged: dict[str, Any]) -> None:
    table = logged["wandb"].table("samples")
    check_samples(table["columns"], table["data"], logged["samples"])


def test_lmeval_log_an_existing_run(logged: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same run logged again later (``lmeval log``), into another folder, project and name."""
    monkeypatch.delenv("WANDB_MODE", raising=False)
    before = (logged["rdir"] / "results.json").read_bytes()
    rc, out, err = cli("log", str(logged["rdir"]), "--to", "wandb", "--dir", str(tmp_path), "--project", "p2",
                       "--name", "again")  # fmt: skip
    assert rc == 0, err
    (run_dir,) = (tmp_path / "wandb").glob("offline-run-*")
    w = read_offline_run(run_dir)
    assert (w.project, w.name, w.exit_code) == ("p2", "again", 0)
    assert {k: v for k, v in w.summary.items() if "/" in k} == expected_metrics(logged["results"])
    assert out == f"wandb: {run_dir} (upload: wandb sync {run_dir})\n"
    assert (logged["rdir"] / "results.json").read_bytes() == before
