"""A new multiple-choice metric and a new aggregation are each one registration, from this module only
(#52 acceptance 2): nothing else in the compiler, the scorer or the exporters names a metric or an aggregation.

The registration makes the name known to the compile checks too (``plans.add_metric_spec``), so arc_easy compiles
from the shared data with its metric_list naming the new metric (a Hydra override, as a user would write it),
executes on the fake backend (its log-likelihoods tell the normalisations apart) and ``lmeval score`` runs, all in
this process (so the registration is in it); the values are checked against arithmetic done here from the rows'
log-likelihoods and the choice texts, the stderr of the new aggregation against lm-eval's bootstrap written out
here with Python's ``random``."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from lmeval.plans import read_plan
from lmeval.plans.results import read_results
from lmeval.scorer import (
    AGGREGATION_REGISTRY,
    METRICS,
    Aggregation,
    ChoiceArrays,
    ChoiceDoc,
    Metric,
    register_aggregation,
    register_metric,
    unregister_aggregation,
    unregister_metric,
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
        unregister_metric(name)
    unregister_aggregation("trimmed_mean")
    assert "gold_margin" not in METRICS and "trimmed_mean" not in AGGREGATION_REGISTRY


def _metric_list_override(metric_list: list[dict[str, str]]) -> str:
    entries = ",".join("{" + ",".join(f"{k}:{v}" for k, v in e.items()) + "}" for e in metric_list)
    return f"task.{TASK}.metric_list=[{entries}]"


def _compile(tmp_path: Path, metric_list: list[dict[str, str]]) -> tuple[int, str, Path]:
    plan = tmp_path / "plan.msgpack"
    rc, _, err = cli("compile", f"+task={TASK}", f"run.data_dir={data_dir()}", f"run.limit={N_DOCS}", "model=tiny",
                     _metric_list_override(metric_list), "--out", str(plan))  # fmt: skip
    return rc, err, plan


def _run(tmp_path: Path, metric_list: list[dict[str, str]]) -> tuple[Path, Path]:
    """arc_easy with ``metric_list``, compiled, executed on the fake backend and scored: (plan, results)."""
    rc, err, plan = _compile(tmp_path, metric_list)
    assert rc == 0, err
    out = tmp_path / "results"
    for argv in (
        ("execute", str(plan), "--out", str(out), "model.backend=fake", "--no-progress"),
        ("score", str(out), "--quiet", "--bootstrap-iters", str(ITERS)),
    ):
        rc, _, err = cli(*argv)
        assert rc == 0, err
    return plan, out


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
def test_a_new_mc_metric_is_one_registration(registered: None, tmp_path: Path, with_margin: bool) -> None:
    # alone, the task scores through the metric's array form; beside a metric that has none, per document
    metric_list = [{"metric": "acc_utf8_bytes"}] + ([{"metric": "gold_margin"}] if with_margin else [])
    run = _run(tmp_path, metric_list)
    rdir = run[1]
    docs = _by_hand(run)
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


@pytest.mark.parametrize("named", [False, True], ids=["metric-default", "named-in-metric_list"])
def test_a_new_aggregation_is_one_registration(registered: None, tmp_path: Path, named: bool) -> None:
    # aggregated by trimmed_mean: gold_margin's default, or named by the task (the compile checks the name)
    run = _run(tmp_path, [{"metric": "gold_margin"} | ({"aggregation": "trimmed_mean"} if named else {})])
    rdir = run[1]
    margins = [lls[gold] - max(x for i, x in enumerate(lls) if i != gold) for gold, lls, _ in _by_hand(run)]
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
        (
            {"metric": "acc_utf8_bytez"},
            "field metric_list[0].metric: unknown metric 'acc_utf8_bytez' (did you mean acc_utf8_bytes",
        ),
        (
            {"metric": "acc", "aggregation": "trimmed_meen"},
            "field metric_list[0].aggregation: unknown aggregation 'trimmed_meen' (did you mean trimmed_mean",
        ),
    ],
)
def test_an_unknown_name_is_one_line_at_compile(
    registered: None, tmp_path: Path, entry: dict[str, str], message: str
) -> None:
    rc, err, plan = _compile(tmp_path, [entry])
    assert rc != 0
    lines = err.strip().splitlines()
    assert len(lines) == 1 and f"task {TASK}, {message}" in lines[0], err
    assert "Traceback" not in err and not plan.exists()


def test_unregistered_names_are_unknown_again(tmp_path: Path) -> None:
    """Without the registration (the fixture above undid it) the compile refuses the name: it was the
    registration, not a file of the product, that made it known."""
    rc, err, _ = _compile(tmp_path, [{"metric": "acc_utf8_bytes"}])
    assert rc != 0 and "unknown metric 'acc_utf8_bytes'" in err, err
