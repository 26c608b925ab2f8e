"""MLflow: one run per scored run in experiment ``project``, in ``MLFLOW_TRACKING_URI`` when set, else a local
file store under the tracker folder (``mlflow ui --backend-store-uri file:DIR``; MLflow 3 keeps the file store
in maintenance mode behind ``MLFLOW_ALLOW_FILE_STORE``, which is set for that store only).

MLflow refuses commas in metric and parameter names: ``arc_easy/acc,none`` is logged as ``arc_easy/acc.none``
(and any other character it refuses as ``_``). Params: the provenance, flattened (``model.name``); artifacts:
``lmeval/config.json`` (the provenance whole), ``lmeval/results_table.parquet`` and
``lmeval/samples_table.parquet`` (logged tables, ``mlflow.load_table``; Parquet, as MLflow's JSON tables round
floats to 10 decimals)."""

from __future__ import annotations

import json
import os
import re
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from lmeval.report.trackers.payload import TABLE_COLUMNS, Payload

_BATCH = 100  # params per call (MLflow's log_batch limit), metrics too
MAX_PARAM = 6000  # characters of a param value MLflow stores
_REFUSED = re.compile(r"[^/\w.\- ]")


def mlflow_key(key: str) -> str:
    """A metric or param name MLflow accepts: ``,`` -> ``.``, any other refused character -> ``_``."""
    return _REFUSED.sub("_", key.replace(",", "."))


def flat_params(config: dict[str, Any], prefix: str = "") -> dict[str, str]:
    """Nested config -> ``a.b.c`` -> string value (JSON for lists), cut to what MLflow stores."""
    out: dict[str, str] = {}
    for k, v in config.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out.update(flat_params(v, f"{key}."))
        else:
            text = v if isinstance(v, str) else json.dumps(v, sort_keys=True)
            out[mlflow_key(key)] = text[:MAX_PARAM]
    return out


@contextmanager
def _store(store: Path) -> Iterator[str]:
    """The tracking URI to use, with the file store allowed while it is in use (when it is ours)."""
    uri = os.environ.get("MLFLOW_TRACKING_URI")
    if uri:
        yield uri
        return
    store.mkdir(parents=True, exist_ok=True)
    before = os.environ.get("MLFLOW_ALLOW_FILE_STORE")
    os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"
    try:
        yield store.resolve().as_uri()
    finally:
        if before is None:
            os.environ.pop("MLFLOW_ALLOW_FILE_STORE", None)
        else:
            os.environ["MLFLOW_ALLOW_FILE_STORE"] = before


def _columns(names: list[str] | tuple[str, ...], rows: list[list[Any]]) -> dict[str, list[Any]]:
    return {c: [r[i] for r in rows] for i, c in enumerate(names)}


def log_mlflow(p: Payload, store: Path, project: str, name: str) -> str:
    """Log ``p`` as an MLflow run; where it went."""
    from mlflow import MlflowClient

    with _store(store) as uri:
        client = MlflowClient(uri)
        exp = client.get_experiment_by_name(project)
        exp_id = exp.experiment_id if exp is not None else client.create_experiment(project)
        run = client.create_run(exp_id, run_name=name, tags={"lmeval.plan_hash": p.config.get("plan_hash") or ""})
        rid = run.info.run_id
        status = "FAILED"
        try:
            _log_run(client, rid, p)
            status = "FINISHED"
        finally:
            client.set_terminated(rid, status=status)
    return f"{uri} (experiment {project!r}, run {rid})"


def _log_run(client: Any, rid: str, p: Payload) -> None:
    from mlflow.entities import Metric, Param

    params = [Param(k, v) for k, v in flat_params(p.config).items()]
    for i in range(0, len(params), _BATCH):
        client.log_batch(rid, params=params[i : i + _BATCH])
    now = int(time.time() * 1000)
    metrics = [Metric(mlflow_key(k), v, now, 0) for k, v in p.metrics.items()]
    for i in range(0, len(metrics), _BATCH):
        client.log_batch(rid, metrics=metrics[i : i + _BATCH])
    client.log_dict(rid, p.config, "lmeval/config.json")
    with warnings.catch_warnings():  # pandas' deprecation notes about MLflow's own code
        warnings.simplefilter("ignore")
        _log_tables(client, rid, p)


def _log_tables(client: Any, rid: str, p: Payload) -> None:
    client.log_table(rid, _columns(TABLE_COLUMNS, p.results), "lmeval/results_table.parquet")
    client.log_table(rid, _columns(p.sample_columns, p.samples), "lmeval/samples_table.parquet")
