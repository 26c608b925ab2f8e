"""``score``: results directory + plan -> results.json, samples.parquet and a table.

Partial results (instances of the plan with no row) are scored document by document: a document counts
only when all of its instances are present. What is missing is printed (per task: count and the first
missing ids) and recorded under ``"partial"`` in results.json; ``lmeval score`` then exits with status 2
unless ``--allow-partial`` is given.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from lmeval.common.atomic import write_atomic
from lmeval.plans.errors import PlanError
from lmeval.plans.records import instance_id_for
from lmeval.plans.results import plan_of, polars_schema, read_manifest, write_json_atomic
from lmeval.plans.rowcheck import KEY_COLUMNS, check_rows
from lmeval.scorer import aggregate as agg
from lmeval.scorer import groups as grp
from lmeval.scorer import metrics as met
from lmeval.scorer.errors import PartialResultsError, ScoreError
from lmeval.scorer.filters import pipelines_of
from lmeval.scorer.planload import PlanData, TaskDocs, load
from lmeval.scorer.pyref import Trust
from lmeval.scorer.rows import COLUMNS as ROW_COLUMNS
from lmeval.scorer.rows import Rows, read_rows
from lmeval.scorer.taskscore import MISSING, FilterScores, _json, describe_missing, score_task

RESULTS_JSON = "results.json"
SAMPLES_PARQUET = "samples.parquet"


@dataclass
class ScoreOutcome:
    path: Path
    results: dict[str, Any]
    missing: dict[str, int] = field(default_factory=dict)  # task -> missing instances
    warnings: list[str] = field(default_factory=list)

    @property
    def partial(self) -> bool:
        return bool(self.missing)

    def partial_error(self) -> PartialResultsError:
        """What ``lmeval score`` says (exit status 2) for partial results without ``--allow-partial``."""
        total = sum(self.missing.values())
        return PartialResultsError(
            f"partial results: {total} instances missing in {len(self.missing)} task(s) "
            f"({', '.join(f'{t}: {n}' for t, n in self.missing.items())}); scored complete documents only, "
            f"see 'partial' in {self.path}/results.json (--allow-partial to accept)"
        )


def score(
    results_dir: str,
    plan_path: str | None = None,
    console: bool = True,
    *,
    trust_code: bool | None = None,
    include_path: str | Path | Sequence[str | Path] | None = None,
    bootstrap_iters: int = agg.BOOTSTRAP_ITERS,
) -> Path:
    """Score ``results_dir`` and return it (results.json and samples.parquet written into it)."""
    return score_run(results_dir, plan_path, console, trust_code=trust_code, include_path=include_path,
                     bootstrap_iters=bootstrap_iters).path  # fmt: skip


def score_run(
    results_dir: str,
    plan_path: str | None = None,
    console: bool = True,
    *,
    trust_code: bool | None = None,
    include_path: str | Path | Sequence[str | Path] | None = None,
    bootstrap_iters: int = agg.BOOTSTRAP_ITERS,
) -> ScoreOutcome:
    """``include_path``: folders holding the task folders of user scoring code (``--include-path``); the
    plan records that code by content only (``plans.funcref``)."""
    # only the caller's explicit --trust-code grants trust (never the environment)
    trust = Trust.of(include_path) if trust_code else None
    try:
        manifest = read_manifest(results_dir)
    except PlanError as e:
        raise ScoreError(str(e)) from None
    try:
        ppath = plan_of(results_dir, manifest, plan_path)
    except PlanError as e:
        raise ScoreError(str(e)) from None
    plan = load(ppath, index_dir=results_dir)
    if manifest.plan_hash != plan.header.plan_hash:
        raise ScoreError(
            f"{results_dir}: results were produced from plan {manifest.plan_hash[:12]}, "
            f"but {ppath} is plan {plan.header.plan_hash[:12]}; score them with the plan they came from"
        )
    rows = read_rows(results_dir)
    _check_rows(rows, plan)
    outcome = _score(results_dir, plan, rows.by_task, manifest.to_dict(), trust, bootstrap_iters)
    out_dir = Path(results_dir)
    write_json_atomic(out_dir / RESULTS_JSON, outcome.results)
    if console:
        from lmeval.scorer.report import print_tables

        print_tables(outcome.results)
        for task, agg in (outcome.results.get("spec") or {}).items():
            cats = ", ".join(f"{c} {v['score']:.4f} (n={v['n']})" for c, v in agg["categories"].items())
            print(f"{task} by category: {cats}; overall {agg['overall']['score']:.4f} (n={agg['overall']['n']})")
    for w in outcome.warnings:
        print(f"WARNING: {w}", file=sys.stderr)
    return outcome


def _check_rows(rows: Rows, plan: PlanData) -> None:
    """Every row is the answer to its Instance of the plan, once (``plans.rowcheck``): one-line error
    naming the part file and the Instance otherwise."""
    if not rows.parts:
        return
    names = [t.name for t in plan.header.tasks]  # both sides in header task order, each by (doc_id, idx)
    expected = pl.concat(
        [plan.tasks[n].instances.with_columns(task=pl.lit(n, dtype=pl.String)) for n in names]
    ).select(KEY_COLUMNS)
    try:
        check_rows(rows.keys(names), expected, plan.path, [str(p) for p in rows.parts])
    except PlanError as e:
        raise ScoreError(str(e)) from None


def _score(
    results_dir: str,
    plan: PlanData,
    results: dict[str, pl.DataFrame],
    manifest: dict[str, Any],
    trust: Trust | None,
    iters: int,
) -> ScoreOutcome:
    header = plan.header
    task_names = [t.name for t in header.tasks]
    unknown = sorted(set(results) - set(task_names))
    if unknown:
        r = results[unknown[0]].row(0, named=True)
        raise ScoreError(
            f"{results_dir}: result rows for task {unknown[0]!r} (doc {r['doc_id']}), which is not in plan {plan.path}"
        )
    task_results: dict[str, dict[str, Any]] = {}
    configs: dict[str, Any] = {}
    versions: dict[str, Any] = {}
    n_shot: dict[str, Any] = {}
    hib: dict[str, dict[str, Any]] = {}
    n_samples: dict[str, dict[str, int]] = {}
    missing_report: dict[str, Any] = {}
    missing_counts: dict[str, int] = {}
    warnings: list[str] = []
    sample_frames: list[pl.DataFrame] = []
    spec_breakdown: dict[str, Any] = {}
    empty = pl.DataFrame(schema={k: v for k, v in polars_schema().items() if k in ROW_COLUMNS})
    aliases: dict[str, str] = dict(header.extra.get("aliases") or {})  # compiler: task and group aliases
    for ts in header.tasks:
        td = plan.tasks[ts.name]
        tm = met.resolve(ts.name, ts.output_type, ts.metric_list, ts.config, trust)
        pipes = pipelines_of(ts.filter_list, ts.name)
        rows = results.get(ts.name, empty)
        expected = td.instances.select("doc_id", "idx")
        same = (
            rows.height == expected.height
            and rows["doc_id"].equals(expected["doc_id"])
            and rows["idx"].equals(expected["idx"])
        )
        if same:
            missing = expected.clear()
        else:
            extra = rows.join(expected, on=["doc_id", "idx"], how="anti")
            if extra.height:
                r = extra.row(0, named=True)
                raise ScoreError(
                    f"{results_dir}: task {ts.name} doc {r['doc_id']} idx {r['idx']}: "
                    f"instance {instance_id_for(ts.name, r['doc_id'], r['idx'])} "
                    f"is not in plan {plan.path} (results from a different plan?)"
                )
            missing = expected.join(rows.select("doc_id", "idx"), on=["doc_id", "idx"], how="anti")
        if missing.height:
            bad_docs = missing["doc_id"].unique()
            rows = rows.filter(~pl.col("doc_id").is_in(bad_docs.implode()))
            missing_counts[ts.name] = missing.height
            missing_report[ts.name] = {
                "missing_instances": missing.height,
                "expected_instances": expected.height,
                "incomplete_docs": bad_docs.len(),
                "first_missing": [
                    {"doc_id": d, "idx": i, "instance_id": instance_id_for(ts.name, d, i)}
                    for d, i in missing.sort(["doc_id", "idx"]).head(5).iter_rows()
                ],
            }
            warnings.append(
                "partial results: "
                + describe_missing(ts.name, missing)
                + f"; scored {td.docs.height - bad_docs.len()} of {td.docs.height} documents"
            )
        fscores = score_task(ts, td, rows, tm, pipes, trust)
        metrics_out, sample_len = _aggregate_task(ts.name, fscores, tm, iters, warnings)
        alias = ts.config.get("task_alias") or aliases.get(ts.name) or ts.name
        task_results[ts.name] = {"alias": alias, "name": ts.name, "sample_len": sample_len, **metrics_out}
        configs[ts.name] = ts.config
        versions[ts.name] = ts.version
        n_shot[ts.name] = ts.num_fewshot
        hib[ts.name] = {k: v for k, v in tm.higher_is_better.items()}
        n_samples[ts.name] = {"original": ts.n_docs, "effective": sample_len}
        sample_frames.extend(_sample_frames(ts.name, td, fscores))
        if any(m.get("metric") == "jsonl_spec" for m in ts.metric_list):
            spec_breakdown[ts.name] = _spec_breakdown(td, rows)
    group_results, group_versions, group_subtasks = grp.aggregate_groups(header.groups, task_results, aliases)
    for g, m in group_results.items():
        task_results[g] = m
    versions.update(group_versions)
    grp.propagate(header.groups, group_subtasks, n_shot, hib)
    out: dict[str, Any] = {
        "results": task_results,
        "groups": {g: m for g, m in group_results.items() if grp.has_aggregation(header.groups, g)},
        "group_subtasks": group_subtasks,
        "configs": dict(sorted(configs.items())),
        "versions": dict(sorted(versions.items())),
        "n-shot": dict(sorted(n_shot.items())),
        "higher_is_better": dict(sorted(hib.items())),
        "n-samples": n_samples,
        "plan_hash": header.plan_hash,
        "plan_path": plan.path,
        "model": header.model.to_dict(),
        "run": {
            k: manifest.get(k) for k in ("model", "backend", "engine_args", "versions", "shard", "started", "finished")
        },
        "bootstrap_iters": iters,
    }
    if not out["groups"]:
        del out["groups"]
    if spec_breakdown:
        out["spec"] = spec_breakdown
    if missing_report:
        out["partial"] = missing_report
    _write_samples(Path(results_dir), sample_frames)
    return ScoreOutcome(Path(results_dir), _jsonable(out), missing_counts, warnings)


def _aggregate_task(
    task: str, fscores: list[FilterScores], tm: met.TaskMetrics, iters: int, warnings: list[str]
) -> tuple[dict[str, Any], int]:
    out: dict[str, Any] = {}
    sample_len = 0
    for fs in fscores:
        for key, vals in fs.values.items():
            items = vals.to_list() if isinstance(vals, pl.Series) else [v for v in vals if v is not MISSING]
            if not items:
                continue
            how = tm.aggregation.get(key, "mean")
            try:
                value = how(items) if callable(how) else agg.aggregate(how, items)
                se = agg.stderr(how, key, items, iters)
            except (TypeError, ValueError, ZeroDivisionError) as e:
                raise ScoreError(f"task {task}: cannot aggregate {key},{fs.filter} ({type(e).__name__}: {e})") from None
            out[f"{key},{fs.filter}"] = value
            out[f"{key}_stderr,{fs.filter}"] = se
            sample_len = max(sample_len, len(items))
    return out, sample_len


def _sample_frames(task: str, td: Any, fscores: list[FilterScores]) -> list[pl.DataFrame]:
    frames = []
    for fs in fscores:
        n = len(fs.doc_ids)
        if not n:
            continue
        docs = td.docs
        if not (docs.height == n and docs["doc_id"].equals(fs.doc_ids)):
            docs = docs.join(pl.DataFrame({"doc_id": fs.doc_ids}), on="doc_id", how="semi").sort("doc_id")
        tgt = docs.select(
            pl.coalesce(pl.col("target_str"), pl.col("target_int").cast(pl.String), pl.col("target_json"))
        ).to_series()
        cols: dict[str, Any] = {
            "task": pl.Series([task] * n, dtype=pl.String),
            "doc_id": fs.doc_ids.alias("doc_id"),
            "filter": pl.Series([fs.filter] * n, dtype=pl.String),
            "target": tgt.alias("target"),
            "filtered": fs.filtered if fs.filtered is not None else pl.Series([None] * n, dtype=pl.String),
        }
        items: dict[str, list[Any]] = {}
        for key, vals in fs.values.items():
            if isinstance(vals, pl.Series):
                cols[key] = vals.cast(pl.Float64)
            elif all(isinstance(v, bool) or v is None or v is MISSING for v in vals):
                cols[key] = pl.Series([None if v is MISSING or v is None else float(v) for v in vals], dtype=pl.Float64)
            else:
                items[key] = vals
        if items:
            keys = list(items)
            cols["items"] = pl.Series(
                [_json({k: items[k][i] for k in keys if items[k][i] is not MISSING}) for i in range(n)],
                dtype=pl.String,
            )
        frames.append(pl.DataFrame(cols))
    return frames


def _write_samples(out_dir: Path, frames: list[pl.DataFrame]) -> None:

    df = (
        pl.concat(frames, how="diagonal_relaxed", rechunk=False)
        if frames
        else pl.DataFrame(
            schema={
                "task": pl.String,
                "doc_id": pl.Int64,
                "filter": pl.String,
                "target": pl.String,
                "filtered": pl.String,
            }
        )
    )
    write_atomic(out_dir / SAMPLES_PARQUET, lambda f: df.write_parquet(f, compression="lz4", statistics=False))


def _jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, float):
        return x if math.isfinite(x) else str(x)
    if hasattr(x, "item") and callable(x.item):
        return _jsonable(x.item())
    return x


def _spec_breakdown(td: TaskDocs, rows: pl.DataFrame) -> dict[str, Any]:
    """A JSONL-spec task per category and overall (corpus BLEU for bleu_4, means otherwise)."""
    from lmeval.scorer import spec_scoring

    first = rows.filter(pl.col("idx") == 0)
    doc_ids = first["doc_id"].to_list()
    recs = {r.doc_id: r for r in td.records(doc_ids)}
    pairs = [(recs[d].doc, resp or "") for d, resp in zip(doc_ids, first["response"].to_list(), strict=True)]
    return spec_scoring.aggregate_spec(spec_scoring.score_spec_rows(pairs))
