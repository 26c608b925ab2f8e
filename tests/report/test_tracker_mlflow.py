"""``lmeval score --log-to mlflow``: a run in a local MLflow file store (MLFLOW_TRACKING_URI unset: under
RESULTS/trackers/mlflow) read back with ``MlflowClient``: metrics (commas as dots, MLflow refuses commas) equal
results.json's, params and ``lmeval/config.json`` the provenance, the logged tables the results table and one row
per sample; a tracker failing part way leaves the scored run as written and marks its MLflow run FAILED."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.report.trackers_support import (
    check_config,
    check_samples,
    cli,
    expected_metrics,
    expected_results_rows,
    golden_run,
    score_and_log,
)


def _client(store: Path) -> Any:
    from mlflow import MlflowClient

    mp = pytest.MonkeyPatch()
    mp.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # reading the file store back needs the same opt-in
    client = MlflowClient(store.resolve().as_uri())
    client.search_experiments()  # the store is opened here
    mp.undo()
    return client


def _only_run(client: Any) -> Any:
    exp = client.get_experiment_by_name("lmeval")
    (run,) = client.search_runs([exp.experiment_id])
    return run


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    mp = pytest.MonkeyPatch()
    mp.delenv("MLFLOW_TRACKING_URI", raising=False)
    mp.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    try:
        run = score_and_log(tmp_path_factory.mktemp("mlflow"), "mlflow")
    finally:
        mp.undo()
    run["client"] = client = _client(run["rdir"] / "trackers" / "mlflow")
    run["run"] = _only_run(client)
    return run


def _artifact(run: dict[str, Any], path: str) -> Any:
    local = run["client"].download_artifacts(run["run"].info.run_id, path, str(run["rdir"] / "dl"))
    return json.loads(Path(local).read_text(encoding="utf-8"))


def _table(run: dict[str, Any], path: str) -> tuple[list[str], list[dict[str, Any]]]:
    """A logged table through MLflow's own reader (``mlflow.load_table``): its columns and rows."""
    import mlflow

    mlflow.set_tracking_uri(run["client"].tracking_uri)
    info = run["run"].info
    df = run["client"].load_table(info.experiment_id, path, run_ids=[info.run_id], extra_columns=["run_id"])
    assert set(df["run_id"]) == {info.run_id}
    df = df.drop(columns=["run_id"])
    rows = [{k: (None if v is None or v != v and not isinstance(v, str) else v) for k, v in r.items()}
            for r in df.to_dict(orient="records")]  # fmt: skip
    return list(df.columns), rows


def test_the_run_finished(logged: dict[str, Any]) -> None:
    info = logged["run"].info
    assert info.status == "FINISHED" and info.run_name == f"results-{logged['results']['plan_hash'][:12]}"
    assert info.run_id in logged["out"].splitlines()[-1]


def test_metrics_are_the_results(logged: dict[str, Any]) -> None:
    want = {k.replace(",", "."): v for k, v in expected_metrics(logged["results"]).items()}
    assert logged["run"].data.metrics == want


def test_params_and_config_are_the_provenance(logged: dict[str, Any]) -> None:
    params = logged["run"].data.params
    assert params["plan_hash"] == logged["results"]["plan_hash"] and params["model.name"] == "golden-fake"
    check_config(_artifact(logged, "lmeval/config.json"), logged["results"])


def test_results_and_samples_tables(logged: dict[str, Any]) -> None:
    columns, rows = _table(logged, "lmeval/results_table.parquet")
    assert columns == ["task", "filter", "metric", "value", "stderr"]
    assert {tuple(r.values()) for r in rows} == expected_results_rows(logged["results"])
    columns, rows = _table(logged, "lmeval/samples_table.parquet")
    check_samples(columns, rows, logged["samples"])


def test_a_tracker_failing_leaves_the_scored_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mlflow import MlflowClient

    def broken(*_: Any, **__: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setattr(MlflowClient, "log_table", broken)  # after params and metrics: part way
    rdir = golden_run(tmp_path)
    rc, out, err = cli("score", str(rdir), "--quiet", "--bootstrap-iters", "10", "--log-to", "mlflow")
    assert rc == 2 and out.strip() == str(rdir)
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "mlflow: OSError" in err and f"retry with `lmeval log {rdir} --to mlflow`" in err
    assert "the scored run is unchanged" in err
    written = {p: (rdir / p).read_bytes() for p in ("results.json", "samples.parquet")}
    rc, _, err = cli("log", str(rdir), "--to", "mlflow")
    assert rc == 2 and {p: (rdir / p).read_bytes() for p in written} == written
    from lmeval.plans.scored.files import read_scored

    assert read_scored(rdir).samples.height > 300  # still a valid scored run
    client = _client(rdir / "trackers" / "mlflow")
    exp = client.get_experiment_by_name("lmeval")
    runs = client.search_runs([exp.experiment_id])
    assert [r.info.status for r in runs] == ["FAILED", "FAILED"]
    assert "lmeval/results_table.parquet" not in [a.path for a in client.list_artifacts(runs[0].info.run_id, "lmeval")]
