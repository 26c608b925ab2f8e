"""The scored-run contract: what ``lmeval score`` writes into a results directory and what ``compare`` and
``report`` read back (design note: ``plans/scored/SCORED.md``).

Two files beside the run's manifest and parts: ``results.json`` (lm-eval's results schema, a
``ScoredRun``) and ``samples.parquet`` (one row per task, document and filter: ``SAMPLE_COLUMNS`` then one
Float64 column per metric with per-document numbers, and ``items`` for the rest). ``write_scored`` is the
one writer, ``read_scored`` the one reader: a regular file under its size limit, JSON under
``plans.limits``, every field of the type below; anything else is one ``PlanError`` naming the file and
the field, read without blocking (a FIFO) and without reading an oversized file.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lmeval.common import json_text, write_atomic
from lmeval.plans.errors import PlanError
from lmeval.plans.limits import loads_json
from lmeval.plans.results import read_bounded, read_parquet
from lmeval.plans.scored.clean import Contamination, parse_contamination
from lmeval.plans.scored.composites import Flag, composites_dict, parse_limit, run_flags
from lmeval.plans.scored.intervals import Intervals, parse_intervals
from lmeval.plans.scored.subset import SubsetScores, parse_subset

if TYPE_CHECKING:
    import polars as pl

SCORED_VERSION = 1  # samples.parquet's key-value metadata ``lmeval-scored``; results.json has no version field
SCORED_VERSION_KEY = "lmeval-scored"
RESULTS_JSON = "results.json"
SAMPLES_PARQUET = "samples.parquet"
MAX_RESULTS_BYTES = 16 << 20  # results.json: configs of every task; mmlu's 57 subjects take about 1 MB
MAX_SAMPLES_BYTES = 2 << 30  # samples.parquet: one row per document and filter
# the leading columns of samples.parquet, name -> polars dtype name (then the metric columns, then ``items``)
SAMPLE_COLUMNS: dict[str, str] = {
    "task": "String",
    "doc_id": "Int64",
    "filter": "String",
    "target": "String",
    "filtered": "String",
}
ITEMS = "items"  # samples.parquet: JSON of a document's non-numeric per-document metric values
# optional columns (plans compiled with ``run.reasoning``, plans/vocab/reasoning.py): the first response's reasoning
# part (null: none), its length in characters, in tokens (the executor's count, plans/results/manifest.py; null where
# the results have none) and its answer part; files without them are read as before
REASONING_COLUMNS: dict[str, str] = {"reasoning": "String", "reasoning_chars": "Int64", "reasoning_tokens": "Int64",
                                     "answer": "String"}  # fmt: skip


@dataclass
class MissingInstance:
    """One Instance of the plan with no result row (``partial.TASK.first_missing``)."""

    doc_id: int
    """The document's id in its task."""
    idx: int
    """The Instance's index within its document."""
    instance_id: str
    """``plans.records.instance_id_for(task, doc_id, idx)``."""


@dataclass
class TaskPartial:
    """What a task lacked when it was scored (``partial.TASK``): only its complete documents count."""

    missing_instances: int
    """Instances of the plan with no result row."""
    expected_instances: int
    """Instances the plan holds for the task."""
    incomplete_docs: int
    """Documents left out of the scores because one of their Instances is missing."""
    first_missing: list[MissingInstance] = field(default_factory=list)
    """The first missing Instances (at most five), by document and index."""


@dataclass
class ScoredRun:
    """``results.json``: lm-eval 0.4.13's results document plus the plan and run it was scored from.

    Metric maps (``results.TASK``, ``groups.GROUP``) hold ``alias``, ``name``, ``sample_len`` and one entry
    per ``"metric,filter"`` (a number, ``"N/A"``, a non-finite float written as its string, or null) with
    its ``"metric_stderr,filter"``."""

    results: dict[str, dict[str, Any]]
    """Task or group name -> its metric map (groups too, as lm-eval writes them)."""
    group_subtasks: dict[str, list[str]] = field(default_factory=dict)
    """Group -> its direct subtasks and subgroups, in the config's order (drives the table order)."""
    groups: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Groups with an aggregation -> their metric map (omitted from the file when empty)."""
    configs: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Task -> its resolved task config, as the plan holds it."""
    versions: dict[str, Any] = field(default_factory=dict)
    """Task or group -> its version."""
    n_shot: dict[str, Any] = field(default_factory=dict)
    """``n-shot``: task or group -> few-shot examples per prompt."""
    higher_is_better: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Task or group -> metric -> whether a higher value is better."""
    n_samples: dict[str, dict[str, Any]] = field(default_factory=dict)
    """``n-samples``: task -> ``{"original": documents in the plan, "effective": documents scored}``."""
    plan_hash: str = ""
    """The plan the results were produced from (``plans.integrity``); equals the manifest's."""
    plan_path: str = ""
    """Where that plan was read from when scoring (provenance; may no longer exist)."""
    model: dict[str, Any] = field(default_factory=dict)
    """The plan header's model identity (``plans.records.ModelSpec``)."""
    run: dict[str, Any] = field(default_factory=dict)
    """The manifest's ``model``, ``backend``, ``engine_args``, ``versions``, ``shard``, ``started``, ``finished``."""
    bootstrap_iters: int | None = None
    """Bootstrap resamples behind the stderr of non-mean aggregations."""
    spec: dict[str, Any] = field(default_factory=dict)
    """JSONL-spec task -> ``{"categories": {c: {"score", "n"}}, "overall": {"score", "n"}}`` (omitted when empty)."""
    partial: dict[str, TaskPartial] = field(default_factory=dict)
    """Task -> what it lacked; present only for partial results (``lmeval score --allow-partial``)."""
    contamination: Contamination | None = None
    """``lmeval score --exclude``: the excluded documents and the score on all of them (``plans.scoredclean``)."""
    intervals: Intervals | None = None
    """Clustered standard errors and 95% intervals per task or group and metric (``plans.scoredintervals``)."""
    subsample: SubsetScores | None = None
    """``run.subsample``: per task, the estimate of the full run's score and its interval (``plans.scoredsubset``)."""
    limit: float | None = None
    """The plan's ``run.limit`` (``composites.limit``): every composite over it is partial."""

    def flags(self) -> dict[str, Flag]:
        """Partial and N/A composites (``plans/scored/composites.py``), from the rest of the run."""
        return run_flags(self)

    def table(self, column: str) -> dict[str, Any]:
        """A top-level map by its JSON name (``results``, ``groups``, ``versions``, ``n-shot``, ...)."""
        value = _JSON_FIELDS.get(column)
        return getattr(self, value) if value is not None else {}

    def depths(self) -> tuple[dict[str, int], list[str]]:
        """lm-eval's table order: (name -> depth, names in order), groups then their subtasks indented."""
        children = {c for cs in self.group_subtasks.values() for c in cs}
        present = set(self.results)
        depth: dict[str, int] = {}
        order: list[str] = []

        def visit(name: str, d: int) -> None:
            if name in depth:
                return
            depth[name] = d
            if name in present:
                order.append(name)
            for c in self.group_subtasks.get(name, []):
                visit(c, d + 1)

        for name in list(self.group_subtasks) + sorted(present):
            if name not in children:
                visit(name, 0)
        order.extend(sorted(present - set(order)))
        return depth, order

    def to_dict(self) -> dict[str, Any]:
        """The results.json document (JSON types only; non-finite floats as strings, as lm-eval writes them)."""
        out: dict[str, Any] = {
            "results": self.results,
            "group_subtasks": self.group_subtasks,
            "configs": dict(sorted(self.configs.items())),
            "versions": dict(sorted(self.versions.items())),
            "n-shot": dict(sorted(self.n_shot.items())),
            "higher_is_better": dict(sorted(self.higher_is_better.items())),
            "n-samples": self.n_samples,
            "plan_hash": self.plan_hash,
            "plan_path": self.plan_path,
            "model": self.model,
            "run": self.run,
            "bootstrap_iters": self.bootstrap_iters,
        }
        if self.groups:
            out["groups"] = self.groups
        if self.spec:
            out["spec"] = self.spec
        if self.partial:
            out["partial"] = {
                t: {
                    "missing_instances": p.missing_instances,
                    "expected_instances": p.expected_instances,
                    "incomplete_docs": p.incomplete_docs,
                    "first_missing": [vars(m) for m in p.first_missing],
                }
                for t, p in self.partial.items()
            }
        if self.contamination is not None:
            out["contamination"] = self.contamination.to_dict()
        if self.intervals is not None:
            out["intervals"] = self.intervals.to_dict()
        if self.subsample is not None:
            out["subsample"] = self.subsample.to_dict()
        if (composites := composites_dict(self.flags(), self.limit)) is not None:
            out["composites"] = composites
        return jsonable(out)


_JSON_FIELDS = {
    "results": "results",
    "groups": "groups",
    "group_subtasks": "group_subtasks",
    "configs": "configs",
    "versions": "versions",
    "n-shot": "n_shot",
    "higher_is_better": "higher_is_better",
    "n-samples": "n_samples",
    "spec": "spec",
}


@dataclass
class ScoredFiles:
    """A scored results directory as read: results.json and (when asked for) samples.parquet."""

    results: ScoredRun
    """results.json."""
    samples: pl.DataFrame
    """samples.parquet (an empty frame of ``SAMPLE_COLUMNS`` when not read)."""


def jsonable(x: Any) -> Any:
    """``x`` with JSON types only: string keys, lists for tuples, numpy scalars unwrapped, non-finite
    floats as their string (``"nan"``, ``"inf"``)."""
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, float):
        return x if math.isfinite(x) else str(x)
    if hasattr(x, "item") and callable(x.item):
        return jsonable(x.item())
    return x


# --- writing ---------------------------------------------------------------------------------------------


def write_scored(results_dir: str | os.PathLike[str], run: ScoredRun, samples: pl.DataFrame) -> None:
    """Write both files of the contract, each atomically (results.json last: it marks the run scored)."""
    out = Path(results_dir)
    meta = {SCORED_VERSION_KEY: str(SCORED_VERSION)}
    write_atomic(
        out / SAMPLES_PARQUET,
        lambda f: samples.write_parquet(f, compression="lz4", statistics=False, metadata=meta),
    )
    write_results(out, run)


def write_results(results_dir: str | os.PathLike[str], run: ScoredRun) -> None:
    """results.json alone, atomically: the one writer of the file (``write_scored`` writes it last; the judge's
    grades are merged into it through here, ``plans.judging.add_metrics``)."""
    text = json_text(run.to_dict(), indent=2, sort_keys=True) + "\n"
    write_atomic(Path(results_dir) / RESULTS_JSON, lambda f: f.write(text.encode("utf-8")))


def empty_samples() -> pl.DataFrame:
    """samples.parquet of a run with no scored document."""
    import polars as pl

    return pl.DataFrame(schema={k: getattr(pl, t) for k, t in SAMPLE_COLUMNS.items()})


# --- reading ---------------------------------------------------------------------------------------------


def read_scored(results_dir: str | os.PathLike[str], *, samples: bool = True) -> ScoredFiles:
    """results.json (and samples.parquet when ``samples``) of ``results_dir``, checked; ``PlanError``
    (one line naming the file and the field) for anything the contract does not allow."""
    d = Path(results_dir)
    rp = d / RESULTS_JSON
    if not os.path.lexists(rp):
        raise PlanError(f"{results_dir}: not a scored run (no {RESULTS_JSON}; run `lmeval score {results_dir}` first)")
    run = parse_results(read_bounded(rp, MAX_RESULTS_BYTES, RESULTS_JSON), rp)
    frame = _read_samples(d / SAMPLES_PARQUET, results_dir) if samples else empty_samples()
    return ScoredFiles(run, frame)


def parse_results(data: bytes, path: Path) -> ScoredRun:
    """A ``ScoredRun`` from results.json's bytes; ``PlanError`` naming ``path`` and the field."""
    try:
        doc = loads_json(data)
    except ValueError as e:
        raise PlanError(f"{path}: malformed {RESULTS_JSON}: {e}") from None
    if not isinstance(doc, dict):
        raise PlanError(f"{path}: malformed {RESULTS_JSON}: not a JSON object ({_kind(doc)})")
    check = _Fields(path, doc)
    results = check.maps_of_metrics("results", required=True)
    return ScoredRun(
        results=results,
        group_subtasks=check.map_of("group_subtasks", list, "a list"),
        groups=check.maps_of_metrics("groups"),
        configs=check.map_of("configs", dict, "an object"),
        versions=check.map_of("versions", object, "a value"),
        n_shot=check.map_of("n-shot", object, "a value"),
        higher_is_better=check.map_of("higher_is_better", dict, "an object"),
        n_samples=check.map_of("n-samples", dict, "an object"),
        plan_hash=check.text("plan_hash"),
        plan_path=check.text("plan_path"),
        model=check.obj("model"),
        run=check.obj("run"),
        bootstrap_iters=check.count("bootstrap_iters"),
        spec=check.map_of("spec", dict, "an object"),
        partial={t: check.partial(t, p) for t, p in check.map_of("partial", dict, "an object").items()},
        contamination=parse_contamination(doc.get("contamination"), check.fail),
        intervals=parse_intervals(doc.get("intervals"), check.fail),
        subsample=parse_subset(doc.get("subsample"), check.fail),
        limit=parse_limit(doc.get("composites"), check.fail),
    )


def _kind(v: Any) -> str:
    return "null" if v is None else {list: "a list", str: "a string", bool: "a boolean"}.get(type(v), "a number")


class _Fields:
    """Typed access to results.json's fields: each a one-line ``PlanError`` naming the file and field."""

    def __init__(self, path: Path, doc: dict[str, Any]) -> None:
        self.path, self.doc = path, doc

    def fail(self, where: str, what: str) -> PlanError:
        return PlanError(f"{self.path}: field {where}: {what}")

    def obj(self, name: str) -> dict[str, Any]:
        v = self.doc.get(name, {})
        if v is None:
            return {}
        if not isinstance(v, dict):
            raise self.fail(name, f"not an object ({_kind(v)})")
        return v

    def map_of(self, name: str, kind: type, what: str) -> dict[str, Any]:
        m = self.obj(name)
        for k, v in m.items():
            if not isinstance(v, kind):
                raise self.fail(f"{name}.{k}", f"not {what} ({_kind(v)})")
        return m

    def maps_of_metrics(self, name: str, required: bool = False) -> dict[str, dict[str, Any]]:
        if required and not isinstance(self.doc.get(name), dict):
            raise self.fail(name, "missing or not an object")
        m = self.map_of(name, dict, "an object")
        for task, metrics in m.items():
            for key, v in metrics.items():
                if "," in key and (isinstance(v, bool) or not (isinstance(v, (int, float, str)) or v is None)):
                    raise self.fail(f"{name}.{task}.{key}", f"not a number ({_kind(v)})")
        return m

    def text(self, name: str) -> str:
        v = self.doc.get(name, "")
        if v is None:
            return ""
        if not isinstance(v, str):
            raise self.fail(name, f"not a string ({_kind(v)})")
        return v

    def count(self, name: str) -> int | None:
        v = self.doc.get(name)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
            raise self.fail(name, f"not an integer ({_kind(v)})")
        return v

    def partial(self, task: str, p: dict[str, Any]) -> TaskPartial:
        where = f"partial.{task}"
        ints = {}
        for k in ("missing_instances", "expected_instances", "incomplete_docs"):
            v = p.get(k, 0)
            if isinstance(v, bool) or not isinstance(v, int):
                raise self.fail(f"{where}.{k}", f"not an integer ({_kind(v)})")
            ints[k] = v
        first = p.get("first_missing", [])
        if not isinstance(first, list):
            raise self.fail(f"{where}.first_missing", f"not a list ({_kind(first)})")
        missing = []
        for i, m in enumerate(first):
            try:
                missing.append(MissingInstance(int(m["doc_id"]), int(m["idx"]), str(m["instance_id"])))
            except (TypeError, KeyError, ValueError):
                raise self.fail(f"{where}.first_missing[{i}]", "not {doc_id, idx, instance_id}") from None
        return TaskPartial(**ints, first_missing=missing)


def _read_samples(path: Path, results_dir: str | os.PathLike[str]) -> pl.DataFrame:

    import polars as pl

    if not os.path.lexists(path):
        raise PlanError(f"{path}: missing; rescore with `lmeval score {results_dir}`")
    meta, frame = read_parquet(path, MAX_SAMPLES_BYTES, SAMPLES_PARQUET)
    version = meta.get(SCORED_VERSION_KEY, str(SCORED_VERSION))  # written before the key existed: the same layout
    if version != str(SCORED_VERSION):
        raise PlanError(f"{path}: {SAMPLES_PARQUET} version {version[:20]!r}; this lmeval reads {SCORED_VERSION}")
    for col, dtype in {**SAMPLE_COLUMNS, **REASONING_COLUMNS}.items():
        if col in ("target", "filtered", *REASONING_COLUMNS) and col not in frame.schema:
            continue  # optional for readers
        if frame.schema.get(col) != getattr(pl, dtype):
            raise PlanError(f"{path}: column {col!r} missing or not {dtype}")
    return frame
