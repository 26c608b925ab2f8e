"""A new multiple-choice metric and a new aggregation are each one registration, from this module only
(#52 acceptance 2): nothing else in the scorer or the exporters names a metric or an aggregation.

The task is arc_easy, compiled from the shared data and executed on the fake backend; its metric_list then names
the new metric (the plan copied with that metric_list and resealed: the compiler's vocabulary is the contract's),
``lmeval score`` runs in this process (so the registration is in it), and the values are checked against
arithmetic done here from the rows' log-likelihoods and the choice texts; the stderr of the new aggregation
against lm-eval's bootstrap written out here with Python's ``random``."""

from __future__ import annotations

import json
import math
import random
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from lmeval.plans import read_plan
from lmeval.plans.io import PlanReader, write_plan
from lmeval.plans.results import read_manifest, read_results, write_manifest
from lmeval.scorer import (
    AGGREGATION_REGISTRY,
    METRICS,
    Aggregation,
    ChoiceArrays,
    ChoiceDoc,
    Metric,
    register_aggregation,
    register_metric,
)
from tests.bounds import SCORES
from tests.support import cli_in_process as cli
from tests.support import data_dir

TASK = "arc_easy"
N_DOCS = 60
ITERS = 300  # bootstrap resamples: lm-eval draws min(1000, iters) per chunk, chunk i seeded with i


# --- the new metric: accuracy normalised by the UTF-8 bytes of the continuation as requested (" " + choice)


def _utf8_bytes(d: ChoiceDoc) -> float:
    with np.errstate(divide="ignore", invalid="ignore"):
        pred = np.argmax(np.asarray(d.lls) / np.array([float(len((" " + c).encode("utf-8"))) for c in d.choices]))
    return d.hit(pred)


def _utf8_bytes_vector(a: ChoiceArrays) -> np.ndarray:
    return a.hits(a.argmax_over(a.byte_lengths() + 1.0))


# --- a metric whose default aggregation is the new one: the gold's log-likelihood margin over the best other


def _gold_margin(d: ChoiceDoc) -> float:
    others = [ll for i, ll in enumerate(d.lls) if i != d.gold]
    return float(d.lls[d.gold] - max(others))


def _trimmed_mean(items: Sequence[float]) -> float:
    """The mean without the lowest and highest tenth."""
    xs = sorted(items)
    cut = len(xs) // 10
    kept = xs[cut : len(xs) - cut]
    return sum(kept) / len(kept)


@pytest.fixture
def registered() -> Iterator[None]:
    register_metric(
        Metric("acc_utf8_bytes", "mean", True, ("multiple_choice",), choices=_utf8_bytes,
               choices_vector=_utf8_bytes_vector, unit=True)
    )  # fmt: skip
    register_aggregation(Aggregation("trimmed_mean", _trimmed_mean, bootstrap=True))
    register_metric(Metric("gold_margin", "trimmed_mean", True, ("multiple_choice",), choices=_gold_margin))
    yield
    for name in ("acc_utf8_bytes", "gold_margin"):
        del METRICS[name]
    del AGGREGATION_REGISTRY["trimmed_mean"]


@pytest.fixture(scope="module")
def arc_easy_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """arc_easy compiled from the shared data and executed on the fake backend (its log-likelihoods tell the
    normalisations apart): (plan, results directory)."""
    d = tmp_path_factory.mktemp("arc_easy")
    plan, out = d / "plan.msgpack", d / "results"
    for argv in (
        ("compile", f"+task={TASK}", f"run.data_dir={data_dir()}", f"run.limit={N_DOCS}", "model=tiny",
         "--out", str(plan)),
        ("execute", str(plan), "--out", str(out), "model.backend=fake", "--no-progress"),
    ):  # fmt: skip
        rc, _, err = cli(*argv)
        assert rc == 0, err
    return plan, out


def _score(run: tuple[Path, Path], tmp_path: Path, metric_list: list[dict[str, Any]]) -> tuple[int, str, Path]:
    """``lmeval score`` of the run with the task's metric_list replaced (a copy of the plan, resealed, and of
    the results directory pointing at it: the requests and their rows are unchanged)."""
    plan = read_plan(run[0])
    tasks = [
        replace(t, metric_list=metric_list, config={**t.config, "metric_list": metric_list}) if t.name == TASK else t
        for t in plan.header.tasks
    ]
    plan_path = tmp_path / "plan.msgpack"
    with PlanReader(run[0]) as r:  # each document's record, then its requests
        records = [rec for t in plan.header.tasks for rec in r.records(t.name)]
    sealed = write_plan(plan_path, replace(plan.header, tasks=tasks), records)
    rdir = tmp_path / "results"
    shutil.copytree(run[1], rdir)
    write_manifest(rdir, replace(read_manifest(rdir), plan_hash=sealed.plan_hash, plan_path=str(plan_path)))
    rc, _, err = cli("score", str(rdir), "--quiet", "--bootstrap-iters", str(ITERS))
    return rc, err, rdir


def _by_hand(run: tuple[Path, Path]) -> list[tuple[int, list[float], list[str]]]:
    """(gold, log-likelihoods, choices) per document: the plan's documents and the run's rows, read here."""
    plan = read_plan(run[0])
    rows = read_results(run[1]).filter(pl.col("task") == TASK)
    ll = {(d, i): v for d, i, v in rows.select("doc_id", "idx", "loglikelihood").iter_rows()}
    out = []
    for doc in sorted((d for d in plan.docs if d.task == TASK), key=lambda d: d.doc_id):
        choices = list(doc.choices or [])
        out.append((int(doc.target), [ll[(doc.doc_id, i)] for i in range(len(choices))], choices))
    return out


def _first_max(xs: list[float]) -> int:
    return max(range(len(xs)), key=lambda i: (xs[i], -i))


def _samples(rdir: Path) -> pl.DataFrame:
    return pl.read_parquet(rdir / "samples.parquet").filter(pl.col("task") == TASK).sort("doc_id")


@pytest.mark.parametrize("with_margin", [False, True], ids=["array-path", "per-document-path"])
def test_a_new_mc_metric_is_one_registration(
    registered: None, arc_easy_run: tuple[Path, Path], tmp_path: Path, with_margin: bool
) -> None:
    # alone, the task scores through the metric's array form; beside a metric that has none, per document
    metric_list = [{"metric": "acc_utf8_bytes"}] + ([{"metric": "gold_margin"}] if with_margin else [])
    rc, err, rdir = _score(arc_easy_run, tmp_path, metric_list)
    assert rc == 0, err
    docs = _by_hand(arc_easy_run)
    hits = [
        float(_first_max([ll / len((" " + c).encode("utf-8")) for ll, c in zip(lls, ch, strict=True)]) == gold)
        for gold, lls, ch in docs
    ]
    plain = [float(_first_max(lls) == gold) for gold, lls, _ in docs]
    assert 0 < sum(hits) < len(hits) and hits != plain  # the data tells hits from misses, and from acc
    assert _samples(rdir)["acc_utf8_bytes"].to_list() == hits
    res = json.loads((rdir / "results.json").read_text())
    assert res["results"][TASK]["acc_utf8_bytes,none"] == sum(hits) / len(hits)
    mean = sum(hits) / len(hits)
    se = math.sqrt(sum((h - mean) ** 2 for h in hits) / (len(hits) - 1) / len(hits))
    assert SCORES.same(res["results"][TASK]["acc_utf8_bytes_stderr,none"], se)
    assert res["higher_is_better"][TASK]["acc_utf8_bytes"] is True


def _lm_eval_bootstrap(f: Any, xs: list[float], iters: int) -> float:
    """lm-eval 0.4.13's bootstrap_stderr, written out: chunk i of min(1000, iters) resamples drawn with
    ``random.Random(i).choices``; the sample standard deviation of the statistics."""
    chunk = min(1000, iters)
    reps = []
    for i in range(iters // chunk):
        rnd = random.Random(i)
        reps += [f(rnd.choices(xs, k=len(xs))) for _ in range(chunk)]
    mu = sum(reps) / len(reps)
    return math.sqrt(sum((r - mu) ** 2 for r in reps) / (len(reps) - 1))


def test_a_new_aggregation_is_one_registration(
    registered: None, arc_easy_run: tuple[Path, Path], tmp_path: Path
) -> None:
    rc, err, rdir = _score(arc_easy_run, tmp_path, [{"metric": "gold_margin"}])  # aggregated by trimmed_mean
    assert rc == 0, err
    margins = [lls[gold] - max(x for i, x in enumerate(lls) if i != gold) for gold, lls, _ in _by_hand(arc_easy_run)]
    assert _samples(rdir)["gold_margin"].to_list() == margins
    xs = sorted(margins)
    cut = len(xs) // 10
    trimmed = sum(xs[cut : len(xs) - cut]) / (len(xs) - 2 * cut)
    assert not SCORES.same(trimmed, sum(margins) / len(margins))  # the trimming changes the value here
    res = json.loads((rdir / "results.json").read_text())["results"][TASK]
    assert SCORES.same(res["gold_margin,none"], trimmed)
    assert SCORES.same(res["gold_margin_stderr,none"], _lm_eval_bootstrap(_trimmed_mean, margins, ITERS))


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"metric": "acc_utf8_bytez"}, "unknown metric 'acc_utf8_bytez' in metric_list"),
        ({"metric": "acc", "aggregation": "trimmed_meen"}, "metric 'acc': unknown aggregation 'trimmed_meen'"),
    ],
)
def test_an_unknown_name_is_one_line_as_before(
    registered: None, arc_easy_run: tuple[Path, Path], tmp_path: Path, entry: dict[str, Any], message: str
) -> None:
    rc, err, rdir = _score(arc_easy_run, tmp_path, [entry])
    assert rc != 0
    lines = err.strip().splitlines()
    assert len(lines) == 1 and f"task {TASK}: {message}" in lines[0], err
    assert "Traceback" not in err and not (rdir / "results.json").exists()
