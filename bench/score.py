"""Benchmark: re-scoring 1,000,000 result rows with lmeval's scorer vs lm-eval 0.4.13's own scoring loop.

    cd /work/main && .venv/bin/python bench/score.py [--rows 1000000] [--lm-eval-sample 50000]

Two synthetic tasks, each with ``--rows`` result rows:
- gen: generate_until, gsm8k's scoring (filters strict-match = regex + take_first and flexible-extract =
  regex group_select -1 + take_first; exact_match with ignore_case and gsm8k's regexes_to_ignore).
- mc: multiple_choice with 4 choices per document (rows/4 documents), acc and acc_norm.

lmeval: ``scorer.score_run`` end to end on a results directory (reads the plan and Parquet, filters,
metrics, stderr, writes results.json and samples.parquet), bootstrap settings as default.
lm-eval: its own code on the same rows: ``FilterEnsemble.apply`` over ``Instance`` objects, then
``ConfigurableTask.process_results`` per document, then ``mean``/``mean_stderr`` (what its evaluator
does after the model has answered). It runs on the first ``--lm-eval-sample`` documents and the time is
extrapolated linearly to all rows (its loop is per document, so linear); the table says so.
Results go to bench/results/score.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import polars as pl

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from machine_info import cpu_model  # noqa: E402  (bench/ is sys.path[0])

from lmeval.plans.plan import (  # noqa: E402
    DocRecord,
    InstanceRecord,
    ModelInfo,
    PlanHeader,
    TaskSummary,
    instance_id_for,
    write_plan,  # noqa: E402
)
from lmeval.plans.results import RunManifest, polars_schema, write_manifest  # noqa: E402

GSM_METRICS: list[dict[str, Any]] = [
    {
        "metric": "exact_match",
        "aggregation": "mean",
        "higher_is_better": True,
        "ignore_case": True,
        "ignore_punctuation": False,
        "regexes_to_ignore": [",", "\\$", "(?s).*#### ", "\\.$"],
    }
]
GSM_FILTERS: list[dict[str, Any]] = [
    {
        "name": "strict-match",
        "filter": [{"function": "regex", "regex_pattern": "#### (\\-?[0-9\\.\\,]+)"}, {"function": "take_first"}],
    },
    {
        "name": "flexible-extract",
        "filter": [
            {"function": "regex", "group_select": -1, "regex_pattern": "(-?[$0-9.,]{2,})|(-?[0-9]+)"},
            {"function": "take_first"},
        ],
    },
]
MC_METRICS: list[dict[str, Any]] = [
    {"metric": "acc", "aggregation": "mean", "higher_is_better": True},
    {"metric": "acc_norm", "aggregation": "mean", "higher_is_better": True},
]


def synth_gen(n: int, seed: int = 0) -> tuple[list[str], list[str]]:
    rng = np.random.default_rng(seed)
    ans = rng.integers(0, 100000, n)
    shape = rng.integers(0, 6, n)
    noise = rng.integers(0, 1000, n)
    targets = [f"She has {a // 7} and {a % 7} more, so {a // 7} * 7 + {a % 7} = {a}.\n#### {a}" for a in ans.tolist()]
    resp = []
    for a, s, z in zip(ans.tolist(), shape.tolist(), noise.tolist(), strict=True):
        if s == 0:
            r = f"First we compute {z} + {a - z} = {a}.\nSo the total is {a}.\n#### {a}"
        elif s == 1:
            r = f"Let me think. There are {z} apples and {a} pears.\n#### {a + 1:,}"
        elif s == 2:
            r = f"The answer is ${a:,}."
        elif s == 3:
            r = f"I am not sure about this one, {z} maybe"
        elif s == 4:
            r = f"Step 1: {z} * 2 = {2 * z}\nStep 2: add {a}\nAnswer: {a}\n"
        else:
            r = f"Réponse : {a} € (environ {z})\n#### {a}"
        resp.append(r)
    return targets, resp


def write_task(out: Path, name: str, kind: str, rows: int) -> Path:
    rng = np.random.default_rng(1)
    docs: list[DocRecord] = []
    insts: list[InstanceRecord] = []
    result_cols: dict[str, list[Any]] = {c: [] for c in polars_schema()}
    if kind == "gen":
        targets, resps = synth_gen(rows)
        for i in range(rows):
            docs.append(DocRecord(task=name, doc_id=i, doc={"q": i}, target=targets[i]))
        iids = [instance_id_for(name, i, 0) for i in range(rows)]
        for i in range(rows):
            insts.append(
                InstanceRecord(
                    instance_id=iids[i],
                    task=name,
                    doc_id=i,
                    idx=0,
                    request_type="generate_until",
                    context="Q",
                    generation_kwargs={"until": ["\n\n"]},
                )
            )
        result_cols.update(
            instance_id=iids,
            task=[name] * rows,
            doc_id=list(range(rows)),
            idx=[0] * rows,
            request_type=["generate_until"] * rows,
            request_hash=[""] * rows,
            loglikelihood=[None] * rows,
            is_greedy=[None] * rows,
            n_continuation_tokens=[10] * rows,
            response=resps,
            responses=[[r] for r in resps],
            finish_reason=["stop"] * rows,
        )
        ts = TaskSummary(
            name=name,
            output_type="generate_until",
            n_docs=rows,
            n_instances=rows,
            num_fewshot=0,
            task_hash="",
            data_fingerprint="",
            metric_list=GSM_METRICS,
            filter_list=GSM_FILTERS,
        )
    else:
        nd = rows // 4
        lens = rng.integers(1, 40, (nd, 4))
        gold = rng.integers(0, 4, nd)
        lls = np.round(-rng.random(rows) * 30, 2)
        greedy = rng.random(rows) < 0.1
        doc_ids, idxs, iids = [], [], []
        for d in range(nd):
            ch = ["x" * int(k) for k in lens[d]]
            docs.append(DocRecord(task=name, doc_id=d, doc={"q": d}, target=int(gold[d]), choices=ch))
            for j in range(4):
                iid = instance_id_for(name, d, j)
                insts.append(
                    InstanceRecord(
                        instance_id=iid,
                        task=name,
                        doc_id=d,
                        idx=j,
                        request_type="loglikelihood",
                        context="Q",
                        continuation=" " + ch[j],
                    )
                )
                doc_ids.append(d)
                idxs.append(j)
                iids.append(iid)
        n = nd * 4
        result_cols.update(
            instance_id=iids,
            task=[name] * n,
            doc_id=doc_ids,
            idx=idxs,
            request_type=["loglikelihood"] * n,
            request_hash=[""] * n,
            loglikelihood=lls[:n].tolist(),
            is_greedy=greedy[:n].tolist(),
            n_continuation_tokens=[3] * n,
            response=[None] * n,
            responses=[None] * n,
            finish_reason=[None] * n,
        )
        ts = TaskSummary(
            name=name,
            output_type="multiple_choice",
            n_docs=nd,
            n_instances=n,
            num_fewshot=0,
            task_hash="",
            data_fingerprint="",
            metric_list=MC_METRICS,
        )
    records: list[Any] = []
    by_doc: dict[int, list[InstanceRecord]] = {}
    for inst in insts:
        by_doc.setdefault(inst.doc_id, []).append(inst)
    for drec in docs:
        records.append(drec)
        records.extend(by_doc[drec.doc_id])
    header = PlanHeader(config={"bench": kind}, model=ModelInfo(name="bench"), tasks=[ts])
    plan = out / f"{name}.msgpack"
    sealed = write_plan(plan, header, records)
    rdir = out / f"{name}-results"
    rdir.mkdir(parents=True, exist_ok=True)
    n = len(result_cols["instance_id"])  # columns it does not set (the optional ones) are null
    result_cols = {c: v if v else [None] * n for c, v in result_cols.items()}
    pl.DataFrame(result_cols, schema=polars_schema()).write_parquet(rdir / "part-00000.parquet")
    write_manifest(
        rdir, RunManifest(plan_hash=sealed.plan_hash, plan_path=str(plan), model={"name": "bench"}, backend="bench")
    )
    return rdir


def lm_eval_loop(
    kind: str, rdir: Path, n_docs: int, log_samples: bool = False
) -> tuple[float, float, dict[str, float]]:
    """lm-eval's own filter + process_results + aggregation on the first n_docs documents."""
    os.environ["DISABLE_MULTIPROC"] = "1"
    from lm_eval.api.instance import Instance
    from lm_eval.api.metrics import mean, mean_stderr
    from lm_eval.api.registry import get_metric
    from lm_eval.api.task import ConfigurableTask
    from lm_eval.filters import build_filter_ensemble
    from lm_eval.utils import handle_non_serializable, hash_string

    from lmeval.plans.plan import PlanReader

    df = pl.read_parquet(rdir / "part-00000.parquet")
    plan_path = next(rdir.parent.glob(f"{rdir.name.removesuffix('-results')}.msgpack"))
    docs: dict[int, DocRecord] = {}
    with PlanReader(plan_path, verify=False) as r:
        for rec in r:
            if isinstance(rec, DocRecord):
                if rec.doc_id >= n_docs:
                    break
                docs[rec.doc_id] = rec
    df = df.filter(pl.col("doc_id") < n_docs).sort(["doc_id", "idx"])
    instances = []
    for row in df.iter_rows(named=True):
        d = docs[row["doc_id"]]
        doc = {"target": d.target, "choices": d.choices}
        if kind == "gen":
            inst = Instance(
                request_type="generate_until", doc=doc, arguments=("Q", {}), idx=0, metadata=("t", row["doc_id"], 1)
            )
            inst.resps = list(row["responses"])
        else:
            inst = Instance(
                request_type="loglikelihood",
                doc=doc,
                arguments=("Q", " a"),
                idx=row["idx"],
                metadata=("t", row["doc_id"], 1),
            )
            inst.resps = [(row["loglikelihood"], bool(row["is_greedy"]))]
        instances.append(inst)
    if kind == "gen":
        filters = [
            (f["name"], [[s["function"], {k: v for k, v in s.items() if k != "function"}] for s in f["filter"]])
            for f in GSM_FILTERS
        ]
        metric_kwargs = {
            k: v for k, v in GSM_METRICS[0].items() if k not in ("metric", "aggregation", "higher_is_better")
        }
        fake = SimpleNamespace(
            OUTPUT_TYPE="generate_until",
            config=SimpleNamespace(process_results=None, doc_to_choice=None),
            _metric_fn_list={"exact_match": get_metric("exact_match")},
            _metric_fn_kwargs={"exact_match": metric_kwargs},
            _aggregation_list={"exact_match": mean},
            _higher_is_better={"exact_match": True},
            multiple_target=0,
            multiple_input=0,
            doc_to_target=lambda doc: doc["target"],
        )
    else:
        filters = [("none", [["take_first", None]])]
        fake = SimpleNamespace(
            OUTPUT_TYPE="multiple_choice",
            config=SimpleNamespace(process_results=None, doc_to_choice="choices"),
            _metric_fn_list={"acc": get_metric("acc"), "acc_norm": get_metric("acc_norm")},
            _metric_fn_kwargs={},
            multiple_target=0,
            multiple_input=0,
            doc_to_target=lambda doc: doc["target"],
            doc_to_choice=lambda doc: doc["choices"],
        )
    t0, c0 = time.perf_counter(), time.process_time()
    by_doc: dict[int, list[Any]] = {}
    for inst in instances:
        by_doc.setdefault(inst.doc_id, []).append(inst)
    agg: dict[str, float] = {}
    logged: list[dict[str, Any]] = []
    for fname, comps in filters:
        build_filter_ensemble(fname, comps).apply(instances)
        raw: dict[str, list[float]] = {}
        for doc_id in sorted(by_doc):
            reqs = by_doc[doc_id]
            res = ConfigurableTask.process_results(fake, reqs[0].doc, [r.filtered_resps[fname] for r in reqs])
            if log_samples:  # what evaluator.evaluate adds per document with --log_samples
                target = reqs[0].doc["target"]
                example = {
                    "doc_id": doc_id,
                    "doc": reqs[0].doc,
                    "target": target,
                    "arguments": [r.args for r in reqs],
                    "resps": [r.resps for r in reqs],
                    "filtered_resps": [r.filtered_resps[fname] for r in reqs],
                    "filter": fname,
                    "metrics": list(res.keys()),
                    "doc_hash": hash_string(
                        json.dumps(reqs[0].doc, indent=2, default=handle_non_serializable, ensure_ascii=False)
                    ),
                    "prompt_hash": hash_string(reqs[0].arguments[0]),
                    "target_hash": hash_string(str(target)),
                }
                example.update(res)
                logged.append(example)
            for k, v in res.items():
                raw.setdefault(k, []).append(v)
        for k, v in raw.items():
            agg[f"{k},{fname}"] = mean(v)
            agg[f"{k}_stderr,{fname}"] = mean_stderr(v)
    return time.perf_counter() - t0, time.process_time() - c0, agg


def machine() -> str:
    cpu = cpu_model()
    nproc = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
    return f"{platform.machine()}, {os.cpu_count()} CPUs (nproc {nproc}), {cpu}"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--lm-eval-sample", type=int, default=50_000, help="documents lm-eval scores (extrapolated)")
    args = ap.parse_args()
    from lmeval.scorer.score import score_run

    rows_md = []
    notes = []
    with tempfile.TemporaryDirectory(prefix="lmeval-bench-score-") as tmp:
        out = Path(tmp)
        for kind in ("gen", "mc"):
            t0 = time.perf_counter()
            rdir = write_task(out, f"bench_{kind}", kind, args.rows)
            setup = time.perf_counter() - t0
            t0 = time.perf_counter()
            score_run(str(rdir))
            cold = time.perf_counter() - t0  # reads the plan, writes the scoring index
            load0 = os.getloadavg()[0]
            t0, c0 = time.perf_counter(), time.process_time()
            res = score_run(str(rdir))
            ours, ours_cpu = time.perf_counter() - t0, time.process_time() - c0
            n_docs = res.results["n-samples"][f"bench_{kind}"]["effective"]
            per_doc = 1 if kind == "gen" else 4
            sample_docs = min(args.lm_eval_sample // per_doc, n_docs)
            t_lm, c_lm, agg_lm = lm_eval_loop(kind, rdir, sample_docs)
            t_ls, c_ls, _ = lm_eval_loop(kind, rdir, sample_docs, log_samples=True)
            scale = n_docs / sample_docs
            full, full_cpu = t_lm * scale, c_lm * scale
            full_ls, full_ls_cpu = t_ls * scale, c_ls * scale
            label = (
                "generate_until, 2 regex filters + exact_match (gsm8k)"
                if kind == "gen"
                else "multiple_choice x4, acc + acc_norm"
            )
            rows_md.append(
                f"| {label} | {args.rows:,} | {n_docs:,} | {ours:.2f} / {ours_cpu:.2f} | {cold:.2f} "
                f"| {t_lm:.2f} / {c_lm:.2f} ({sample_docs:,}) | {full:.1f} / {full_cpu:.1f} "
                f"| {full / ours:.1f}x / {full_cpu / ours_cpu:.1f}x | {full_ls:.1f} / {full_ls_cpu:.1f} "
                f"| {full_ls / ours:.1f}x / {full_ls_cpu / ours_cpu:.1f}x | {load0:.1f} |"
            )
            ours_agg = {k: v for k, v in res.results["results"][f"bench_{kind}"].items() if "," in k}
            notes.append(f"- {kind}: lmeval aggregates {ours_agg}; lm-eval on its {sample_docs:,}-doc sample {agg_lm}")
            print(
                f"{kind}: setup {setup:.0f}s, first score {cold:.2f}s, "
                f"re-score {ours:.2f}s wall / {ours_cpu:.2f}s CPU; "
                f"lm-eval {full:.1f}s wall / {full_cpu:.1f}s CPU (extrapolated from {sample_docs} docs); "
                f"ratio {full / ours:.1f}x wall, {full_cpu / ours_cpu:.1f}x CPU; load {load0:.1f}",
                flush=True,
            )
    md = [
        "# Scoring benchmark (bench/score.py)",
        "",
        f"Machine: {machine()}",
        "",
        f"Python {platform.python_version()}, polars {pl.__version__}",
        "",
        "| task | result rows | docs | lmeval re-score (s wall / CPU) | lmeval first score (s) "
        "| lm-eval measured (s wall / CPU, docs) | lm-eval extrapolated to all docs (s wall / CPU) "
        "| speed-up (wall / CPU) | lm-eval + --log_samples extrapolated (s wall / CPU) "
        "| speed-up vs lm-eval + --log_samples (wall / CPU) | load avg |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        *rows_md,
        "",
        "lmeval: `scorer.score_run` end to end (Parquet read, filters, metrics, stderr, results.json, "
        "samples.parquet). 'First score' also reads the whole plan (msgpack, sha256 check) and writes the "
        "scoring index into the results directory; 're-score' (this benchmark's case: a filter or metric "
        "changed, score again) reads the index. lm-eval 0.4.13: its FilterEnsemble, "
        "ConfigurableTask.process_results and mean/mean_stderr on the same rows, run on a sample of documents "
        "and extrapolated linearly (its loop is per document); '+ --log_samples' adds the per-document sample "
        "record evaluator.evaluate builds with --log_samples (doc/prompt/target hashes), the counterpart of "
        "our samples.parquet. CPU = process CPU time (all threads). "
        "'load avg' is the 1-minute load average when lmeval's timing started: on a shared machine wall "
        "times inflate, CPU times much less. Setup (writing plan and Parquet) is not timed.",
        "",
        *notes,
    ]
    (REPO / "bench" / "results").mkdir(parents=True, exist_ok=True)
    (REPO / "bench" / "results" / "score.md").write_text("\n".join(md) + "\n", encoding="utf-8")
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
