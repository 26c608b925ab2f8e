"""lm-eval 0.5's ``multiple_inputs`` winogrande and its ``scorer:`` key score here as lm-eval 0.5.0.dev1 scores
them on the same outputs (#55). The goldens (tests/parity/lm_eval_05/golden/scores.json.gz) are lm-eval 0.5's
own ``simple_evaluate`` with a fake model (log-likelihoods and generations a function of the request text) on
20 local documents, its sample logs kept; our plan of the same YAMLs gets those very outputs (each Instance's
context must equal lm-eval 0.5's, byte for byte) and our scorer must give lm-eval 0.5's per-document metrics
and aggregates."""

from __future__ import annotations

import gzip
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from lmeval import compiler
from lmeval.scorer.score import score_run
from tests.scorer.golden_io import close, results_for_plan

HERE = Path(__file__).resolve().parents[1] / "parity" / "lm_eval_05"
INCLUDE = f"[{HERE / 'yaml'},{HERE / 'winogrande'}]"
# golden case -> (our selection, our task name, lm-eval 0.5's task name, num_fewshot)
CASES = {
    "winogrande": ("winogrande", "winogrande", "winogrande", 0),
    "winogrande_5shot": ("winogrande", "winogrande", "winogrande", 5),
    "arc_scorer": ("arc_scorer", "arc_scorer", "arc_scorer", 0),
    "arc_scorer_type": ("arc_scorer_type", "arc_scorer_type", "arc_scorer_type", 0),
    "arc_easy_05@generate": ("arc_easy_05@generate", "arc_easy_05@generate", "arc_easy_05", 0),
    "arc_scorer_repeats": ("arc_scorer_repeats", "arc_scorer_repeats", "arc_scorer_repeats", 0),
}
# lm-eval 0.5 reduces a repeated generation to pass@1 and pass@N of its metric: lmeval's sample_scores
# (plans/vocab/samplescores.py) computes the same unbiased estimator, keyed METRIC_pass@K
SAMPLE_SCORES = {"arc_scorer_repeats": "run.sample_scores=[pass@1,pass@3]"}


@cache
def golden() -> dict[str, Any]:
    with gzip.open(HERE / "golden" / "scores.json.gz", "rt", encoding="utf-8") as f:
        doc: dict[str, Any] = json.load(f)
    assert doc["lm_eval"] == "0.5.0.dev1"
    return dict(doc["cases"])


@pytest.mark.parametrize("case", sorted(CASES))
def test_scores_are_lm_eval_05s(case: str, tmp_path: Path) -> None:
    from tests.compiler.conftest import data_dir

    data = data_dir()
    select, ours, theirs, shots = CASES[case]
    g = golden()[case]
    plan = compiler.compile_to_file(
        [
            f"run.tasks=[{select}]",
            f"run.data_dir={data}",
            "run.limit=20",
            f"run.num_fewshot={shots}",
            f"run.include_path={INCLUDE}",
            *([SAMPLE_SCORES[case]] if case in SAMPLE_SCORES else []),
        ],
        out=str(tmp_path / "plan.msgpack"),
    )
    t = g["tasks"][theirs]
    rdir = results_for_plan({"tasks": {ours: {"instances": t["instances"]}}}, Path(plan), tmp_path / "run")
    out = score_run(str(rdir), bootstrap_iters=0)
    res, ref = out.results["results"][ours], g["results"]["results"][theirs]
    keys = [k for k in ref if "," in k and "_stderr" not in k]
    name = {k: _ours(k) for k in keys}
    assert keys and all(close(res[name[k]], ref[k]) for k in keys), (
        case,
        {k: (res.get(name[k]), ref[k]) for k in keys},
    )
    assert all(res[name[k].replace(",", "_stderr,")] == "N/A" for k in keys)  # no bootstrap, as the golden
    # every document's metric and filtered response, as lm-eval 0.5 logged them
    import polars as pl

    rows = {(r["doc_id"], r["filter"]): r for r in pl.read_parquet(rdir / "samples.parquet").iter_rows(named=True)}
    assert len(rows) == len(t["samples"]) == 20
    for smp in t["samples"]:
        row = rows[(smp["doc_id"], smp["filter"])]
        for m in smp["metrics"]:
            got = row.get(_ours(m)) if _ours(m) in row else json.loads(row["items"] or "{}").get(_ours(m))
            assert close(got, smp[m]), (case, smp["doc_id"], m, got, smp[m])
        if case.startswith("arc_"):
            assert row["filtered"] == smp["filtered_resps"][0][0], (case, smp["doc_id"])  # the first repeat
    assert len({smp[m] for smp in t["samples"] for m in smp["metrics"]}) >= 2  # the outputs tell docs apart
    _exported_as_lm_eval_05(rdir, ours, t["samples"], tmp_path / "export")


def _ours(key: str) -> str:
    """lm-eval 0.5's ``pass@K(METRIC)[,FILTER]`` is lmeval's ``METRIC_pass@K[,FILTER]``."""
    m = re.match(r"^pass@(\d+)\((.+)\)(,.*)?$", key)
    return f"{m[2]}_pass@{m[1]}{m[3] or ''}" if m else key


def _exported_as_lm_eval_05(rdir: Path, task: str, logged: list[dict[str, Any]], out: Path) -> None:
    """``lmeval export --format lm-eval-0.5-samples``: lm-eval 0.5's own sample logs, line for line (``doc`` and
    ``doc_hash`` aside: plans keep a document's keys sorted)."""
    from lmeval.report.export import export

    (path,) = export(str(rdir), "lm-eval-0.5-samples", str(out))
    assert path.name.startswith(f"samples_{task}_")
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == len(logged)
    for got, want in zip(lines, sorted(logged, key=lambda x: x["doc_id"]), strict=True):
        assert set(got) == set(want), set(got) ^ set(want)
        assert got["doc"] == want["doc"]
        for k in set(want) - {"doc", "doc_hash"}:
            assert close(got[k], want[k]), (task, got["doc_id"], k, got[k], want[k])
