"""``score``: results directory + plan -> results.json, samples.parquet and a table.

Partial results (instances of the plan with no row) are scored document by document: a document counts
only when all of its instances are present. What is missing is printed (per task: count and the first
missing ids) and recorded under ``"partial"`` in results.json; ``lmeval score`` then exits with status 2
unless ``--allow-partial`` is given.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from lmeval.plans import (
    KEY_COLUMNS,
    RESULTS_JSON,
    Contamination,
    MissingInstance,
    ScoredRun,
    SubsetScores,
    TaskPartial,
    TaskSummary,
    check_rows,
    instance_id_for,
    open_run,
    polars_schema,
    reraised_as,
    shard_keys,
    write_repeats,
    write_scored,
)
from lmeval.scorer import groups as grp
from lmeval.scorer import metrics as agg
from lmeval.scorer import metrics as met
from lmeval.scorer import statistics as ivl
from lmeval.scorer.errors import PartialResultsError, ScoreError
from lmeval.scorer.filters import pipelines_of
from lmeval.scorer.filterscores import MISSING, FilterScores, without_docs
from lmeval.scorer.planload import PlanData, TaskDocs, load
from lmeval.scorer.reasoning import cut_note, plan_reasoning
from lmeval.scorer.rows import COLUMNS as ROW_COLUMNS
from lmeval.scorer.rows import Rows, read_rows
from lmeval.scorer.sampleframes import sample_frames, samples_table
from lmeval.scorer.samplescore import with_repeats
from lmeval.scorer.statistics import console_lines, drawn_of, task_subset
from lmeval.scorer.taskscore import describe_missing, score_task
from lmeval.scorer.usercode import Trust, lm_eval_random, task_loaded


@dataclass
class ScoreOutcome:
    path: Path
    run: ScoredRun  # results.json as written
    missing: dict[str, int] = field(default_factory=dict)  # task -> missing instances
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # the subset notes printed under the results table

    @property
    def results(self) -> dict[str, Any]:
        """results.json's document."""
        return self.run.to_dict()

    @property
    def partial(self) -> bool:
        return bool(self.missing)

    def partial_error(self) -> PartialResultsError:
        """What ``lmeval score`` says (exit status 2) for partial results without ``--allow-partial``."""
        total = sum(self.missing.values())
        return PartialResultsError(
            f"partial results: {total} instances missing in {len(self.missing)} task(s) "
            f"({', '.join(f'{t}: {n}' for t, n in self.missing.items())}); scored complete documents only, "
            f"see 'partial' in {self.path / RESULTS_JSON} (--allow-partial to accept)"
        )


def score(
    results_dir: str,
    plan_path: str | None = None,
    *,
    trust_code: bool | None = None,
    include_path: str | Path | Sequence[str | Path] | None = None,
    bootstrap_iters: int = agg.BOOTSTRAP_ITERS,
) -> Path:
    """Score ``results_dir`` and return it (results.json and samples.parquet written into it)."""
    return score_run(
        results_dir,
        plan_path,
        trust_code=trust_code,
        include_path=include_path,
        bootstrap_iters=bootstrap_iters,
    ).path


def score_run(
    results_dir: str,
    plan_path: str | None = None,
    *,
    trust_code: bool | None = None,
    include_path: str | Path | Sequence[str | Path] | None = None,
    bootstrap_iters: int = agg.BOOTSTRAP_ITERS,
    exclude: str | Path | None = None,
) -> ScoreOutcome:
    """``include_path``: folders holding the task folders of user scoring code (``--include-path``); the
    plan records that code by content only (``plans.funcref``). ``exclude``: a contamination report folder
    (``lmeval contamination``); its contaminated documents are left out of the score (``run.excluded``).
    Nothing is printed but warnings (stderr): the CLI prints the tables from the outcome."""
    # only the caller's explicit --trust-code grants trust (never the environment)
    trust = Trust.of(include_path) if trust_code else None
    with reraised_as(ScoreError):
        run = open_run(results_dir, plan=plan_path, scored=False)  # rescoring: results.json is rewritten, not read
        manifest, ppath = run.manifest, run.plan_file()
    plan = load(ppath, index_dir=results_dir)
    if manifest.plan_hash != plan.header.plan_hash:
        raise ScoreError(
            f"{results_dir}: results were produced from plan {manifest.plan_hash[:12]}, "
            f"but {ppath} is plan {plan.header.plan_hash[:12]}; score them with the plan they came from"
        )
    rows = read_rows(results_dir)
    _check_rows(rows, plan, manifest.shard)
    drop: dict[str, list[int]] | None = None
    if exclude is not None:
        from lmeval.contamination import excluded

        drop = excluded(exclude, plan.header.plan_hash)
    outcome = _score(
        results_dir, plan, rows.by_task, manifest.to_dict(), trust, bootstrap_iters, drop, str(exclude or "")
    )
    # what the CLI prints under its tables (lmeval/cli/results_table.py prints them from this data)
    outcome.notes = console_lines(
        outcome.run.subsample.tasks if outcome.run.subsample is not None else {}, plan.header.config.get("run") or {}
    )
    for w in outcome.warnings:
        print(f"WARNING: {w}", file=sys.stderr)
    return outcome


def _check_rows(rows: Rows, plan: PlanData, shard: str | None) -> None:
    """Every row is the answer to its Instance of the plan (of the manifest's ``shard``, as resume checks),
    once (``plans.rowcheck``): one-line error naming the part file and the Instance otherwise."""
    if not rows.parts:
        return
    names = [t.name for t in plan.header.tasks]  # both sides in header task order, each by (doc_id, idx)
    expected = pl.concat([plan.tasks[n].instances.with_columns(task=pl.lit(n, dtype=pl.String)) for n in names]).select(
        KEY_COLUMNS
    )
    expected = shard_keys(expected, shard)
    with reraised_as(ScoreError):
        check_rows(rows.keys(names), expected, plan.path, [str(p) for p in rows.parts])


@dataclass
class _TaskScored:
    """One task's share of the scored run."""

    metrics: dict[str, Any]  # results.json's results.TASK
    sample_len: int
    hib: dict[str, Any]
    frames: list[pl.DataFrame]
    spec: dict[str, Any] | None
    partial: TaskPartial | None
    sample: ivl.TaskSample | None = None  # what its clustered stderrs and intervals are computed from
    repeats: pl.DataFrame | None = None  # sample_scores: every repeat's rows (plans/scored/repeats.py)
    subset: dict[str, Any] | None = None  # run.subsample: results.json's subsample.tasks.TASK


def _score(
    results_dir: str,
    plan: PlanData,
    results: dict[str, pl.DataFrame],
    manifest: dict[str, Any],
    trust: Trust | None,
    iters: int,
    drop: dict[str, list[int]] | None = None,
    report: str = "",
) -> ScoreOutcome:
    """``drop``: task -> doc ids left out of the score (``--exclude`` of contamination report ``report``):
    ``results`` is the clean subset's score, ``contamination.all`` the score on all documents."""
    _refuse_unknown_tasks(results_dir, plan, results)
    header = plan.header
    aliases: dict[str, str] = dict(header.extra.get("aliases") or {})  # compiler: task and group aliases
    empty = pl.DataFrame(schema={k: v for k, v in polars_schema().items() if k in ROW_COLUMNS})
    warnings: list[str] = []

    # --exclude: each task is scored once, on all its documents; the clean score aggregates the subset
    both = {
        ts.name: _score_one(
            results_dir, plan, ts, results.get(ts.name, empty), trust, iters, aliases, warnings,
            None if drop is None else drop.get(ts.name, []),
        )
        for ts in header.tasks
    }  # fmt: skip
    scored = {name: clean for name, (clean, _) in both.items()}
    run = _scored_run(plan, scored, manifest, iters, aliases)
    samples_of = {t: s.sample for t, s in scored.items() if s.sample is not None}
    run.intervals = ivl.intervals(header.groups, run.results, samples_of)
    if drop is not None:  # which documents the score leaves out, and the score on all of them
        excluded = {t: sorted(ids) for t, ids in drop.items() if ids}
        if excluded:
            run.run["excluded"] = excluded
        every = {name: full for name, (_, full) in both.items() if full is not None}
        run.contamination = Contamination(report, excluded, _scored_run(plan, every, manifest, iters, aliases).results)
    samples = samples_table([f for t in scored.values() for f in t.frames])
    repeat_frames = [t.repeats for t in scored.values() if t.repeats is not None]
    write_repeats(results_dir, pl.concat(repeat_frames, how="diagonal_relaxed") if repeat_frames else None)
    write_scored(results_dir, run, samples)
    missing = {t: p.missing_instances for t, p in run.partial.items()}
    return ScoreOutcome(Path(results_dir), run, missing, warnings)


def _refuse_unknown_tasks(results_dir: str, plan: PlanData, results: dict[str, pl.DataFrame]) -> None:
    unknown = sorted(set(results) - {t.name for t in plan.header.tasks})
    if unknown:
        r = results[unknown[0]].row(0, named=True)
        raise ScoreError(
            f"{results_dir}: result rows for task {unknown[0]!r} (doc {r['doc_id']}), which is not in plan {plan.path}"
        )


def _score_one(
    results_dir: str,
    plan: PlanData,
    ts: TaskSummary,
    rows: pl.DataFrame,
    trust: Trust | None,
    iters: int,
    aliases: dict[str, str],
    warnings: list[str],
    drop: list[int] | None = None,
) -> tuple[_TaskScored, _TaskScored | None]:
    """The task's share of the scored run, less the documents ``drop``; and, when ``drop`` is given
    (``--exclude``), its share scored on all documents: filters and metrics run once, on all of them."""
    td = plan.tasks[ts.name]
    run_cfg = plan.header.config.get("run")
    # the task's scoring code finds the global random state lm-eval's gives it (scorer/usercode/globalrandom.py)
    with lm_eval_random(run_cfg if isinstance(run_cfg, dict) else {}, f"task {ts.name}"):
        tm = met.resolve_metrics(ts.name, ts.output_type, ts.metric_list, ts.config, trust)
        task_loaded()
        rows, partial = _complete_docs(results_dir, plan.path, ts.name, td, rows, warnings)
        reasoning = plan_reasoning(plan.header.config)
        pipes = pipelines_of(ts.filter_list, ts.name)
        try:
            every = score_task(ts, td, rows, tm, pipes, trust, reasoning)
            repeat_rows = with_repeats(ts, td, rows, tm, pipes, trust, reasoning, every)  # sample_scores
        except ScoreError as e:  # a document that cannot be scored: the plan holding it named first
            raise ScoreError(f"{plan.path}: {e}" if str(e).startswith("task ") else str(e)) from None
    alias = ts.config.get("task_alias") or aliases.get(ts.name) or ts.name
    has_spec = any(m.get("metric") == "jsonl_spec" for m in ts.metric_list)
    drawn = drawn_of(ts)  # run.subsample: the estimate of the full run's score

    def share(fscores: list[FilterScores], kept: pl.DataFrame, notes: list[str], frames: bool = True) -> _TaskScored:
        metrics, sample_len, boot = _aggregate_task(ts.name, fscores, tm, iters, notes)
        fr = sample_frames(ts.name, td, fscores) if frames else []
        means = frozenset(k for k, how in tm.aggregation.items() if how == "mean")
        return _TaskScored(
            {"alias": alias, "name": ts.name, "sample_len": sample_len, **metrics},
            sample_len,
            dict(tm.higher_is_better),
            fr,
            _spec_breakdown(td, kept) if has_spec else None,
            partial,
            ivl.task_sample(ts.name, ts.config, td, fr, means, boot) if frames else None,
            _kept_rows(repeat_rows, kept) if frames else None,
            task_subset(drawn, fscores, tm) if drawn is not None else None,
        )

    clean_rows = rows.filter(~pl.col("doc_id").is_in(drop)) if drop else rows
    note = cut_note(ts.name, clean_rows, reasoning) if reasoning and ts.output_type == "generate_until" else None
    warnings += [note] if note else []
    if not drop:  # nothing left out: the clean share is the whole one
        whole = share(every, rows, warnings)
        return whole, (None if drop is None else whole)
    clean = share([without_docs(fs, drop) for fs in every], clean_rows, warnings)
    return clean, share(every, rows, [], frames=False)


def _kept_rows(repeat_rows: pl.DataFrame | None, kept: pl.DataFrame) -> pl.DataFrame | None:
    """The repeats' rows of the documents of ``kept`` (the rows scored)."""
    if repeat_rows is None:
        return None
    return repeat_rows.filter(pl.col("doc_id").is_in(kept["doc_id"].unique().implode()))


def _complete_docs(
    results_dir: str, plan_path: str, task: str, td: TaskDocs, rows: pl.DataFrame, warnings: list[str]
) -> tuple[pl.DataFrame, TaskPartial | None]:
    """The rows of the documents all of whose Instances have a row, and what the others lack (None when
    nothing does); a row of an Instance the plan does not hold is an error."""
    expected = td.instances.select("doc_id", "idx")
    if (
        rows.height == expected.height
        and rows["doc_id"].equals(expected["doc_id"])
        and rows["idx"].equals(expected["idx"])
    ):
        return rows, None
    extra = rows.join(expected, on=["doc_id", "idx"], how="anti")
    if extra.height:
        r = extra.row(0, named=True)
        raise ScoreError(
            f"{results_dir}: task {task} doc {r['doc_id']} idx {r['idx']}: "
            f"instance {instance_id_for(task, r['doc_id'], r['idx'])} "
            f"is not in plan {plan_path} (results from a different plan?)"
        )
    missing = expected.join(rows.select("doc_id", "idx"), on=["doc_id", "idx"], how="anti")
    if not missing.height:
        return rows, None
    bad_docs = missing["doc_id"].unique()
    first = missing.sort(["doc_id", "idx"]).head(5).iter_rows()
    warnings.append(
        f"partial results: {describe_missing(task, missing)}; "
        f"scored {td.docs.height - bad_docs.len()} of {td.docs.height} documents"
    )
    return rows.filter(~pl.col("doc_id").is_in(bad_docs.implode())), TaskPartial(
        missing.height,
        expected.height,
        bad_docs.len(),
        [MissingInstance(d, i, instance_id_for(task, d, i)) for d, i in first],
    )


def _scored_run(
    plan: PlanData, scored: dict[str, _TaskScored], manifest: dict[str, Any], iters: int, aliases: dict[str, str]
) -> ScoredRun:
    """results.json from the tasks' shares: the groups aggregated, n-shot and higher_is_better propagated."""
    header = plan.header
    tasks = {ts.name: ts for ts in header.tasks}
    results = {t: s.metrics for t, s in scored.items()}
    compared = {t.name: fmt["metric"] for t in header.tasks if isinstance(fmt := t.config.get("format"), dict)}
    group_results, group_versions, group_subtasks = grp.aggregate_groups(header.groups, results, aliases, compared)
    results.update(group_results)
    n_shot: dict[str, Any] = {t: tasks[t].num_fewshot for t in scored}
    hib = {t: s.hib for t, s in scored.items()}
    grp.propagate(header.groups, group_subtasks, n_shot, hib)
    return ScoredRun(
        results=results,
        group_subtasks=group_subtasks,
        groups={g: m for g, m in group_results.items() if grp.has_aggregation(header.groups, g)},
        configs={t: tasks[t].config for t in scored},
        versions={**{t: tasks[t].version for t in scored}, **group_versions},
        n_shot=n_shot,
        higher_is_better=hib,
        n_samples={t: {"original": tasks[t].n_docs, "effective": s.sample_len} for t, s in scored.items()},
        plan_hash=header.plan_hash,
        plan_path=plan.path,
        model=header.model.to_dict(),
        run={
            k: manifest.get(k) for k in ("model", "backend", "engine_args", "versions", "shard", "started", "finished")
        },
        bootstrap_iters=iters,
        spec={t: s.spec for t, s in scored.items() if s.spec is not None},
        partial={t: s.partial for t, s in scored.items() if s.partial is not None},
        subsample=SubsetScores(subsets) if (subsets := {t: s.subset for t, s in scored.items() if s.subset}) else None,
        limit=(header.config.get("run") or {}).get("limit"),
    )


def _aggregate_task(
    task: str, fscores: list[FilterScores], tm: met.TaskMetrics, iters: int, warnings: list[str]
) -> tuple[dict[str, Any], int, dict[str, tuple[float, float]]]:
    """(results.TASK's metrics, documents scored, "metric,filter" -> bootstrap percentile interval)."""
    out: dict[str, Any] = {}
    boot: dict[str, tuple[float, float]] = {}
    sample_len = 0
    for fs in fscores:
        for key, vals in fs.values.items():
            items = vals.to_list() if isinstance(vals, pl.Series) else [v for v in vals if v is not MISSING]
            if not items:
                continue
            how = tm.aggregation.get(key, "mean")
            try:
                value = how(items) if callable(how) else agg.aggregate(how, items)
                se, interval = agg.stderr_interval(how, key, items, iters)
            except (TypeError, ValueError, ZeroDivisionError) as e:
                raise ScoreError(f"task {task}: cannot aggregate {key},{fs.filter} ({type(e).__name__}: {e})") from None
            out[f"{key},{fs.filter}"] = value
            out[f"{key}_stderr,{fs.filter}"] = se
            if interval is not None:
                boot[f"{key},{fs.filter}"] = interval
            sample_len = max(sample_len, len(items))
    return out, sample_len, boot


def _spec_breakdown(td: TaskDocs, rows: pl.DataFrame) -> dict[str, Any]:
    """A JSONL-spec task per category and overall (corpus BLEU for bleu_4, means otherwise)."""
    from lmeval.scorer.metrics import aggregate_spec, score_spec_rows

    first = rows.filter(pl.col("idx") == 0)
    doc_ids = first["doc_id"].to_list()
    recs = {r.doc_id: r for r in td.records(doc_ids)}
    pairs = [(recs[d].doc, resp or "") for d, resp in zip(doc_ids, first["response"].to_list(), strict=True)]
    return aggregate_spec(score_spec_rows(pairs))
