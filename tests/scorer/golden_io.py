"""Turn an lm-eval golden (see make_golden.py) into a plan + results directory our scorer reads.

The plan holds the same documents (gold and choices as lm-eval's process_results saw them), the same
requests and the tasks' metric_list/filter_list; the results directory holds lm-eval's raw responses as
executor rows. Scoring that directory must reproduce lm-eval's per-sample metrics and aggregates.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import polars as pl

from lmeval.plans import read_plan
from lmeval.plans.plan import (
    DocRecord,
    GroupSummary,
    InstanceRecord,
    ModelInfo,
    PlanHeader,
    TaskSummary,
    instance_id_for,
    request_hash_of,
    write_plan,
)
from lmeval.plans.results import RunManifest, polars_schema, write_manifest
from tests.bounds import SCORES

GOLDEN_DIR = Path(__file__).resolve().parent / "golden"


def close(a: Any, b: Any) -> bool:
    """``a`` equals lm-eval's ``b`` within the docs' scorer tolerance (1e-9, relative above 1): strings,
    None and booleans exactly, every number (nested in lists and dicts too) within it (``tests.support.SCORES``).
    A golden holds one machine's numpy bits (``np.exp`` differs in the last bit between AVX2 and AVX-512)."""
    return SCORES.same(a, b)


def aggregate_diffs(exp: dict[str, Any], ours: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Where our results.json differs from lm-eval's aggregate results (values, stderr, versions, n-shot,
    higher_is_better, group_subtasks, effective n-samples); an extra key of ours counts as a difference."""
    diffs: list[tuple[Any, ...]] = []
    for name, metrics in exp["results"].items():
        got = ours["results"][name]
        for k, v in metrics.items():
            if not close(got.get(k), v):
                diffs.append((name, k, got.get(k), v))
        diffs += [(name, k, got[k], "not in lm-eval") for k in set(got) - set(metrics)]
    if set(ours.get("groups", {})) != set(exp.get("groups", {})):
        diffs.append(("groups", set(ours.get("groups", {})), set(exp.get("groups", {}))))
    for key in ("versions", "n-shot", "higher_is_better", "group_subtasks", "n-samples"):
        for name, v in exp[key].items():
            got = ours[key].get(name)
            if key == "n-samples":
                got, v = (got or {}).get("effective"), v["effective"]
            if got != v:
                diffs.append((key, name, got, v))
    return diffs


def sample_diffs(golden: dict[str, Any], samples: pl.DataFrame) -> tuple[list[tuple[Any, ...]], int]:
    """Where our samples.parquet differs from lm-eval's logged samples (every per-sample metric value and
    filtered response); also how many values were compared."""
    index = {(r["task"], r["doc_id"], r["filter"]): r for r in samples.iter_rows(named=True)}
    diffs: list[tuple[Any, ...]] = []
    checked = 0
    for tname, t in golden["tasks"].items():
        for smp in t["samples"]:
            row = index.get((tname, smp["doc_id"], smp["filter"]))
            if row is None:
                diffs.append((tname, smp["doc_id"], smp["filter"], "no sample"))
                continue
            items = json.loads(row["items"]) if row.get("items") else {}
            for k, v in smp.items():
                if k in ("doc_id", "filter", "filtered_resps"):
                    continue
                got = row.get(k, items.get(k))
                if not close(got, v):
                    diffs.append((tname, smp["doc_id"], k, got, v))
                checked += 1
            if t["output_type"] == "generate_until":
                fr = smp["filtered_resps"]
                want = fr[0] if isinstance(fr, list) and len(fr) == 1 else fr
                got = row["filtered"]
                if not isinstance(want, str) and isinstance(got, str):
                    got = json.loads(got)  # samples.parquet holds a non-string filtered response as JSON
                if got != want:
                    diffs.append((tname, smp["doc_id"], smp["filter"], got, want))
    return diffs, checked


def results_for_plan(golden: dict[str, Any], plan_path: Path, rdir: Path) -> Path:
    """A results dir for a plan our compiler made from the golden's own task YAMLs: lm-eval's raw responses
    for each Instance, matched by (task, doc_id, idx); every context must equal lm-eval's byte for byte."""
    plan = read_plan(plan_path)
    by_key = {(name, i["doc_id"], i["idx"]): i for name, t in golden["tasks"].items() for i in t["instances"]}
    rows = []
    for inst in plan.instances:
        g = by_key.pop((inst.task, inst.doc_id, inst.idx))
        assert inst.context == g["context"], (inst.task, inst.doc_id, inst.context, g["context"])
        rows.append(_row(inst.task, g, inst.instance_id, inst.request_hash))
    missing = {k for k in by_key if k[0] in {t.name for t in plan.header.tasks}}
    assert not missing, sorted(missing)[:5]
    rdir.mkdir(parents=True)
    pl.DataFrame(rows, schema=polars_schema(), orient="row").write_parquet(rdir / "part-00000.parquet")
    header = plan.header
    write_manifest(rdir, RunManifest(plan_hash=header.plan_hash, plan_path=str(plan_path),
                                     model={"name": "golden"}, backend="golden"))  # fmt: skip
    return rdir


def load_golden(name: str) -> dict[str, Any]:
    with gzip.open(GOLDEN_DIR / f"{name}.json.gz", "rb") as f:
        data: dict[str, Any] = json.loads(f.read())
    return data


def build(
    golden: dict[str, Any],
    out: Path,
    tasks: list[str] | None = None,
    drop: set[tuple[str, int, int]] | None = None,
    patch: dict[str, dict[str, Any]] | None = None,
) -> tuple[Path, Path]:
    """Write ``out/plan.msgpack`` and ``out/results`` for the golden's tasks; return (plan, results dir).

    ``drop``: (task, doc_id, idx) instances left out of the results; ``patch``: per task, TaskSummary
    fields to replace (e.g. a broken metric_list).
    """
    names = tasks or list(golden["tasks"])
    groups = [g for g in golden["groups"] if _all_leaves_in(g, golden["groups"], set(names))]
    group_of: dict[str, list[str]] = {}
    for g in groups:
        for s in g["subtasks"]:
            group_of.setdefault(s, []).append(g["name"])
    summaries: list[TaskSummary] = []
    records: list[DocRecord | InstanceRecord] = []
    rows: list[tuple[Any, ...]] = []
    for name in names:
        t = golden["tasks"][name]
        n_inst = len(t["instances"])
        config: dict[str, Any] = {"task": name}
        if t.get("task_alias"):
            config["task_alias"] = t["task_alias"]
        fields: dict[str, Any] = dict(
            name=name,
            output_type=t["output_type"],
            n_docs=len(t["docs"]),
            n_instances=n_inst,
            num_fewshot=t["num_fewshot"] or 0,
            task_hash="",
            data_fingerprint="",
            version=t["version"],
            metric_list=t["metric_list"],
            filter_list=t["filter_list"],
            groups=group_of.get(name, []),
            config=config,
        )
        fields.update((patch or {}).get(name, {}))
        summaries.append(TaskSummary(**fields))
        by_doc: dict[int, list[dict[str, Any]]] = {}
        for inst in t["instances"]:
            by_doc.setdefault(inst["doc_id"], []).append(inst)
        for d in t["docs"]:
            records.append(
                DocRecord(task=name, doc_id=d["doc_id"], doc=d["doc"], target=d["target"], choices=d["choices"])
            )
            for inst in sorted(by_doc[d["doc_id"]], key=lambda i: i["idx"]):
                iid = instance_id_for(name, inst["doc_id"], inst["idx"])
                rh = request_hash_of(
                    inst["request_type"],
                    inst["context"],
                    inst.get("continuation"),
                    inst.get("generation_kwargs"),
                    None,
                    None,
                )
                records.append(
                    InstanceRecord(
                        instance_id=iid,
                        task=name,
                        doc_id=inst["doc_id"],
                        idx=inst["idx"],
                        request_type=inst["request_type"],
                        context=inst["context"],
                        continuation=inst.get("continuation"),
                        generation_kwargs=inst.get("generation_kwargs"),
                        repeats=inst.get("repeats", 1),
                        request_hash=rh,
                    )
                )
                if drop and (name, inst["doc_id"], inst["idx"]) in drop:
                    continue
                rows.append(_row(name, inst, iid, rh))
    header = PlanHeader(
        config={"golden": golden["source"]},
        model=ModelInfo(name=f"golden-{golden['source']}"),
        tasks=summaries,
        groups=[
            GroupSummary(
                name=g["name"],
                subtasks=g["subtasks"],
                aggregate_metric_list=g["aggregate_metric_list"],
                version=g["version"],
            )
            for g in groups
        ],
        extra={"aliases": {g["name"]: g["alias"] for g in groups if g.get("alias")}},
    )
    out.mkdir(parents=True, exist_ok=True)
    plan_path = out / "plan.msgpack"
    sealed = write_plan(plan_path, header, records)
    rdir = out / "results"
    rdir.mkdir(exist_ok=True)
    pl.DataFrame(rows, schema=polars_schema(), orient="row").write_parquet(rdir / "part-00000.parquet")
    write_manifest(
        rdir,
        RunManifest(
            plan_hash=sealed.plan_hash, plan_path=str(plan_path), model={"name": header.model.name}, backend="golden"
        ),
    )
    return plan_path, rdir


def _all_leaves_in(g: dict[str, Any], groups: list[dict[str, Any]], names: set[str]) -> bool:
    by = {x["name"]: x for x in groups}

    def leaves(n: str) -> list[str]:
        return [c for s in by[n]["subtasks"] for c in (leaves(s) if s in by else [s])]

    return all(x in names for x in leaves(g["name"]))


def _row(task: str, inst: dict[str, Any], iid: str, rh: str) -> tuple[Any, ...]:
    resps = inst["resps"]
    ll = greedy = response = None
    responses = None
    if inst["request_type"] == "loglikelihood":
        ll, greedy = resps[0][0], bool(resps[0][1])
    elif inst["request_type"] == "loglikelihood_rolling":
        ll = resps[0]
    else:
        responses = list(resps)
        response = responses[0]
    return (
        iid,
        task,
        inst["doc_id"],
        inst["idx"],
        inst["request_type"],
        rh,
        ll,
        greedy,
        None,
        response,
        responses,
        "stop" if response is not None else None,
        None,  # reasoning_tokens
        None,  # thinking_forced
        "computed",  # source
    )
