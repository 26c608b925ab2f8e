"""The compile pipeline: Hydra overrides → composed config → model identity → selected tasks (scoring
checked first) → each task built, tokenized and encoded → one sealed plan (``Compiled``); and the file
it is written to. The public entry points are re-exported by ``lmeval.compiler``."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lmeval.common.gcpause import gc_paused
from lmeval.compiler.build import TaskBuilder
from lmeval.compiler.built import BuildOptions, BuiltTask, ChatFn
from lmeval.compiler.config import compose, expand_sweep, run_config
from lmeval.compiler.errors import CompileError
from lmeval.compiler.header import plan_header, task_summary
from lmeval.compiler.modelinfo import load_model_info
from lmeval.compiler.plan_files import write_compiled
from lmeval.compiler.scorecheck import check_groups, check_task
from lmeval.compiler.seeds import has_python, seeded_globals
from lmeval.compiler.task_records import Record, task_records
from lmeval.compiler.task_selection import select_tasks
from lmeval.compiler.task_tree import Selection
from lmeval.plans.identity import split_locations
from lmeval.plans.io import DEFAULT_CODEC, seal
from lmeval.plans.records import PlanHeader, TaskSummary


@dataclass(frozen=True)
class Compiled:
    """A sealed plan (header, records and their bytes) and the locations the compile was given (output
    file, data dir, include path, model dir: ``plans.identity``), which are not part of the plan."""

    header: PlanHeader
    records: list[Record]
    blobs: list[bytes]
    locations: dict[str, Any]

    def write(self, out: str | None = None, codec: str = DEFAULT_CODEC) -> Path:
        """Write the plan to ``out``, else ``run.out``, else ``plans/<name>-<hash12>.msgpack`` (cwd)."""
        return write_compiled(self.header, self.blobs, out or self.locations.get("run.out"), codec)


def compile_plan(overrides: list[str]) -> tuple[PlanHeader, list[Record]]:
    """Compose the configs with Hydra and compile every selected task into a sealed header + records."""
    c = compile_located(overrides)
    return c.header, c.records


def compile_to_file(overrides: list[str], out: str | None = None) -> Path:
    """Compile and write the plan to ``out``, ``run.out`` or ``plans/<name>-<hash12>.msgpack`` (cwd)."""
    return compile_located(overrides).write(out)


def compile_sweep(overrides: list[str], out: str | None = None) -> list[tuple[list[str], Compiled]]:
    """Every combination of a sweep (``a=1,2``: ``expand_sweep``) compiled, in order; all of them before
    anything is written, so a failing combination leaves no plan behind. ``out`` names one file, so it is
    refused when the sweep gives several plans."""
    combos = expand_sweep(overrides)
    if out and len(combos) > 1:
        raise CompileError("--out names one file but -m gives several plans; use run.out or the default names")
    return [(combo, compile_located(combo)) for combo in combos]


def compile_located(overrides: list[str]) -> Compiled:
    """Compose, compile and seal; the locations split off the config (``plans.identity.split_locations``)
    come with the plan. The cyclic garbage collector is paused meanwhile (``common.gcpause``)."""
    with gc_paused():
        return _compile(overrides)


def built_tasks(sel: Selection, opts: BuildOptions, chat: ChatFn | None, seed_mode: str) -> Iterator[BuiltTask]:
    """Every selected task built, in plan order (``sel.tasks``), under ``run.seed_mode`` (compiler/seeds.py):
    ``per_task`` seeds the global generators afresh for each task (built one at a time); ``lm_eval`` seeds
    them once and, in lm-eval's load order, processes every task's documents, then renders every task."""
    if seed_mode == "per_task":
        for spec in sel.tasks:
            with seeded_globals(opts.python_seed, opts.numpy_seed, with_numpy=has_python(spec.raw)):
                bt = TaskBuilder(spec, opts, chat).build()
            yield bt
        return
    by_name = {spec.name: spec for spec in sel.tasks}
    order = [by_name[name] for name in sel.load_order]
    with seeded_globals(opts.python_seed, opts.numpy_seed, with_numpy=any(has_python(s.raw) for s in order)):
        builders = [TaskBuilder(spec, opts, chat) for spec in order]
        prepared = [b.prepare() for b in builders]
        built = {spec.name: b.render(p) for spec, b, p in zip(order, builders, prepared, strict=True)}
    for spec in sel.tasks:
        yield built[spec.name]


def _compile(overrides: list[str]) -> Compiled:
    cfg = compose(overrides)
    portable, locations = split_locations(cfg)
    run = run_config(cfg.get("run") or {})
    tok, model, chat = load_model_info(cfg.get("model"), run.apply_chat_template, run.chat_template_kwargs)
    sel = select_tasks(cfg, run)
    for spec in sel.tasks:  # every task's scoring side, before any prompt is rendered
        check_task(spec)
    check_groups(sel.groups, sel.tasks)
    opts = run.options()
    records: list[Record] = []
    blobs: list[bytes] = []
    summaries: list[TaskSummary] = []
    notes: list[str] = []
    for bt in built_tasks(sel, opts, chat, run.seed_mode):
        notes += bt.notes
        recs, task_blobs, fingerprint = task_records(bt, tok)
        records += recs
        blobs += task_blobs
        summaries.append(task_summary(bt, opts, fingerprint))
    header = plan_header(portable, model, sel, summaries, notes)
    try:
        sealed, blobs = seal(header, records, blobs)
    except TypeError as e:
        raise CompileError(f"the plan cannot be encoded canonically: {e}") from None
    return Compiled(sealed, records, blobs, locations)
