"""Shared by the tracker tests: a real scored run (the scorer's ``fake`` golden: arc_challenge, winogrande, asdiv,
gsm8k with two filters and mmlu's 57 subjects in four groups; lm-eval's own responses, scored) logged through the
CLI, and what each tracker's store must hold of it (results.json's metrics, samples.parquet's rows)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import polars as pl

from tests.scorer.golden_io import build, load_golden
from tests.support import cli_in_process as cli


def golden_run(base: Path) -> Path:
    """The unscored results directory of the ``fake`` golden."""
    _, rdir = build(load_golden("fake"), base / "golden")
    return Path(rdir)


def score_and_log(base: Path, tracker: str) -> dict[str, Any]:
    """``lmeval score RDIR --log-to TRACKER``; the run's files as written, and the command's output."""
    rdir = golden_run(base)
    rc, out, err = cli("score", str(rdir), "--quiet", "--bootstrap-iters", "10", "--log-to", tracker)
    assert rc == 0, err
    results = json.loads((rdir / "results.json").read_text(encoding="utf-8"))
    samples = pl.read_parquet(rdir / "samples.parquet")
    return {"rdir": rdir, "out": out, "err": err, "results": results, "samples": samples}


def expected_metrics(results: dict[str, Any]) -> dict[str, float]:
    """``TASK/METRIC,FILTER`` (stderr too) -> value, every finite number of results.json's ``results``."""
    out = {}
    for task, metrics in results["results"].items():
        for key, v in metrics.items():
            if "," in key and isinstance(v, (int, float)) and math.isfinite(v):
                out[f"{task}/{key}"] = float(v)
    assert len(out) > 100 and "gsm8k/exact_match,strict-match" in out and "mmlu/acc,none" in out
    return out


def expected_results_rows(results: dict[str, Any]) -> set[tuple[Any, ...]]:
    """(task, filter, metric, value, stderr) of every metric (not stderr) of results.json."""
    rows = set()
    for task, metrics in results["results"].items():
        for key, v in metrics.items():
            metric, sep, filt = key.partition(",")
            if sep and not metric.endswith("_stderr"):
                rows.add((task, filt, metric, v, metrics.get(f"{metric}_stderr,{filt}")))
    return rows


def check_samples(columns: list[str], rows: list[dict[str, Any]] | list[list[Any]], samples: pl.DataFrame) -> None:
    """The logged samples table is samples.parquet: one row per task, document and filter, the same values."""
    assert len(rows) == samples.height > 300
    got = [r if isinstance(r, dict) else dict(zip(columns, r, strict=True)) for r in rows]
    assert columns == samples.columns
    for want, have in zip(samples.iter_rows(named=True), got, strict=True):
        for k, v in want.items():
            h = have.get(k)
            if isinstance(v, float) and math.isnan(v):
                assert h is None or math.isnan(h), (k, want, have)
            else:
                assert h == v, (k, want, have)


def check_config(config: dict[str, Any], results: dict[str, Any]) -> None:
    """The logged provenance: plan hash, model identity, lmeval version, the run."""
    assert config["plan_hash"] == results["plan_hash"] and len(config["plan_hash"]) == 64
    assert config["model"]["name"] == results["model"]["name"] == "golden-fake"
    assert config["run"]["backend"] == results["run"]["backend"]
    from importlib.metadata import version

    assert config["lmeval_version"] == version("lmeval")
