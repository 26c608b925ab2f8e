"""``lmeval score --log-to trackio``: a run in Trackio's local store (TRACKIO_DIR unset: under
RESULTS/trackers/trackio) read back through Trackio's own API (``trackio.Api`` for the run and its config,
``SQLiteStorage.get_logs`` for the logged step): the metrics equal results.json's, the tables hold the results
table and one row per sample."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from tests.report.trackers_support import (
    check_config,
    check_samples,
    expected_metrics,
    expected_results_rows,
    score_and_log,
)


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    assert "trackio" not in sys.modules  # trackio reads its store folder once, at import
    mp = pytest.MonkeyPatch()
    mp.delenv("TRACKIO_DIR", raising=False)
    try:
        run = score_and_log(tmp_path_factory.mktemp("trackio"), "trackio")
    finally:
        mp.undo()
    import trackio
    from trackio.sqlite_storage import SQLiteStorage

    store = run["rdir"] / "trackers" / "trackio"
    assert Path(trackio.utils.TRACKIO_DIR) == store.resolve() and (store / "lmeval.db").is_file()
    (tr,) = list(trackio.Api().runs("lmeval"))
    run["run"], run["logs"] = tr, SQLiteStorage.get_logs("lmeval", tr.name)
    return run


def test_the_run_and_its_config(logged: dict[str, Any]) -> None:
    assert logged["run"].name == f"results-{logged['results']['plan_hash'][:12]}"
    check_config(logged["run"].config, logged["results"])
    assert logged["out"].splitlines()[-1].startswith("trackio: ")
    assert "Trackio" not in logged["out"]  # trackio's own messages went to stderr


def test_metrics_are_the_results(logged: dict[str, Any]) -> None:
    (step,) = logged["logs"]
    got = {k: v for k, v in step.items() if "/" in k}
    assert got == expected_metrics(logged["results"])


def test_results_and_samples_tables(logged: dict[str, Any]) -> None:
    (step,) = logged["logs"]
    assert step["results"]["_type"] == step["samples"]["_type"] == "trackio.table"
    rows = step["results"]["_value"]
    assert list(rows[0]) == ["task", "filter", "metric", "value", "stderr"]
    assert {tuple(r.values()) for r in rows} == expected_results_rows(logged["results"])
    samples = step["samples"]["_value"]
    check_samples(list(samples[0]), samples, logged["samples"])
