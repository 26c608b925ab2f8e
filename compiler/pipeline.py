"""The compile pipeline: Hydra overrides → composed config → model identity → selected tasks (scoring
checked first) → each task built, tokenized and encoded → one sealed plan (``Compiled``); and the file
it is written to. The public entry points are re-exported by ``lmeval.compiler``."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from lmeval.common import gc_paused
from lmeval.compiler.build import BuildOptions
from lmeval.compiler.cache import BuildCache, CacheStats, TaskPart, default_dir, plan_hash_key, records_of
from lmeval.compiler.config import compose, expand_sweep
from lmeval.compiler.encode import Record, load_model_info, plan_header, plan_path
from lmeval.compiler.errors import CompileError, fail
from lmeval.compiler.formats import fallback_format
from lmeval.compiler.parallel import BuildSettings, build_parts, lm_eval_order_parts
from lmeval.compiler.runconfig import RunConfig, run_config
from lmeval.compiler.scorecheck import check_groups, check_task
from lmeval.compiler.tasks import forget_loaded, select_tasks
from lmeval.plans import (
    DEFAULT_CODEC,
    PlanHeader,
    find_backend,
    format_of,
    header_hash_bytes,
    plan_digest,
    seal_header,
    split_locations,
    write_media,
    write_tasks,
)


@dataclass(frozen=True)
class Compiled:
    """A sealed plan (header and each task's encoded records) and the locations the compile was given (output
    file, data dir, include path, model dir: ``plans.identity``), which are not part of the plan. ``records``
    and ``blobs`` (each record's bytes) are decoded from the tasks' bytes when first asked for."""

    header: PlanHeader
    parts: list[TaskPart]
    locations: dict[str, Any]
    cache: CacheStats = field(default_factory=CacheStats)

    @property
    def warnings(self) -> list[str]:
        """One line per task, prompt field and document field that rendered None (``compiler.build.nullfields``)."""
        return [n.message() for p in self.parts for n in p.null_fields]

    @cached_property
    def records(self) -> list[Record]:
        return [r for p in self.parts for r in records_of(p)]

    @cached_property
    def blobs(self) -> list[bytes]:
        out: list[bytes] = []
        for p in self.parts:
            data, pos = p.encoded.data, 0
            for n in p.encoded.lengths:
                out.append(data[pos : pos + n])
                pos += n
        return out

    def write(self, out: str | None = None, codec: str = DEFAULT_CODEC) -> Path:
        """Write the plan to ``out``, else ``run.out``, else ``lmeval-plans/<name>-<hash12>.msgpack`` (cwd)."""
        path = plan_path(self.header, out or self.locations.get("run.out"))
        write_media(path, {k: v for p in self.parts for k, v in p.media})  # images first: a plan never lacks them
        return write_tasks(path, self.header, [p.encoded for p in self.parts], codec)


def compile_plan(overrides: list[str], settings: BuildSettings | None = None) -> tuple[PlanHeader, list[Record]]:
    """Compose the configs with Hydra and compile every selected task into a sealed header + records."""
    c = compile_located(overrides, settings)
    return c.header, c.records


def compile_to_file(overrides: list[str], out: str | None = None, settings: BuildSettings | None = None) -> Path:
    """Compile and write the plan to ``out``, ``run.out`` or ``lmeval-plans/<name>-<hash12>.msgpack`` (cwd)."""
    return compile_located(overrides, settings).write(out)


def compile_sweep(
    overrides: list[str], out: str | None = None, settings: BuildSettings | None = None
) -> list[tuple[list[str], Compiled]]:
    """Every combination of a sweep (``a=1,2``: ``expand_sweep``) compiled, in order; all of them before
    anything is written, so a failing combination leaves no plan behind. ``out`` names one file, so it is
    refused when the sweep gives several plans."""
    combos = expand_sweep(overrides)
    if out and len(combos) > 1:
        raise CompileError("--out names one file but -m gives several plans; use run.out or the default names")
    return [(combo, compile_located(combo, settings)) for combo in combos]


def compile_located(overrides: list[str], settings: BuildSettings | None = None) -> Compiled:
    """Compose, compile and seal; the locations split off the config (``plans.identity.split_locations``)
    come with the plan. ``settings``: the build cache and the worker count (``compiler.parallel``; default
    from the environment). The cyclic garbage collector is paused meanwhile (``common.gcpause``)."""
    with gc_paused():
        return _compile(overrides, settings or BuildSettings())


def with_budget_marker(run: RunConfig, opts: BuildOptions, tok: Any) -> BuildOptions:
    """``opts`` with the forced end marker of ``run.thinking_budget`` and its token ids (``plans/vocab/budgets.py``):
    the first of ``run.reasoning.end``, encoded by the model's tokenizer without special tokens."""
    if not run.thinking_budget or run.reasoning is None:
        return opts
    if tok is None:
        raise fail(
            "needs the model's tokenizer at compile time (the end marker's token ids go into the plan)",
            field="run.thinking_budget",
        )
    end = run.reasoning.end[0]
    ids = tok.encode_many([end], special=False)[0]
    if not ids:
        raise fail(f"the end marker {end!r} encodes to no tokens", field="run.reasoning.end")
    opts.budget_end, opts.budget_end_ids = end, [int(i) for i in ids]
    return opts


def _by_generation(cfg: dict[str, Any], run: RunConfig) -> str | None:
    """A plan for a backend without log-probabilities (a generation-only one: a chat endpoint) takes
    multiple-choice tasks by generation, as ``NAME@gen`` (compiler/formats), unless ``run.format`` chooses:
    the switch is in the plan (other task names and identities), and this note says why."""
    model = cfg.get("model")
    backend = model.get("backend") if isinstance(model, dict) else None
    entry = find_backend(backend)
    if run.format is not None or entry is None or not entry.generation_only:
        return None
    run.format = fallback_format()
    return (
        f"model.backend={backend} returns no log-probabilities: multiple-choice tasks compiled by generation "
        "(NAME@gen; set run.format to choose another format)"
    )


def _compile(overrides: list[str], settings: BuildSettings) -> Compiled:
    forget_loaded()
    cfg = compose(overrides, (settings.cache_dir or default_dir()) if settings.cache else None)
    portable, locations = split_locations(cfg)
    run = run_config(cfg.get("run") or {})
    by_generation = _by_generation(cfg, run)
    tok, model, chat = load_model_info(cfg.get("model"), run.apply_chat_template, run.chat_template_kwargs)
    sel = select_tasks(cfg, run)
    for spec in sel.tasks:  # every task's scoring side, before any prompt is rendered
        check_task(spec)
        if spec.raw.get("turns_field") and not run.apply_chat_template:  # later turns are chat messages
            raise fail(
                "a multi-turn task's later turns are chat messages: it needs run.apply_chat_template=true",
                file=spec.source,
                task=spec.name,
                field="turns_field",
            )
    check_groups(sel.groups, sel.tasks)
    opts = with_budget_marker(run, run.options(), tok)
    cache: BuildCache | None = None
    if run.seed_mode == "lm_eval":  # one global stream over every task: built together, never cached
        parts, stats = lm_eval_order_parts(sel, opts, chat, tok), CacheStats(uncacheable=len(sel.tasks))
    else:
        parts, stats, cache = build_parts(sel.tasks, opts, chat, tok, settings)
    if run.strict_fields:
        nulls = [n for p in parts for n in p.null_fields]
        if nulls:
            raise CompileError(nulls[0].message(strict=True))
    notes = [n for p in parts for n in p.notes]
    if by_generation and any(format_of(s.name) == run.format for s in sel.tasks):
        notes.insert(0, by_generation)
    header = plan_header(portable, model, sel, [p.summary for p in parts], notes)
    try:
        sealed = _seal(header, parts, cache)
    except TypeError as e:
        raise CompileError(f"the plan cannot be encoded canonically: {e}") from None
    return Compiled(sealed, parts, locations, stats)


def _seal(header: PlanHeader, parts: list[TaskPart], cache: BuildCache | None) -> PlanHeader:
    """``seal_tasks``; the plan hash from the build cache's memo when every task came through an entry
    (``buildcache.plan_hash_key``): a warm compile then decompresses and hashes no records."""
    encoded = [p.encoded for p in parts]
    unsealed = seal_header(header, encoded)
    if cache is None or not all(p.digest for p in parts):
        return replace(unsealed, plan_hash=plan_digest(unsealed, encoded))
    head = header_hash_bytes(unsealed.to_dict())
    key = plan_hash_key(head, [p.digest for p in parts])
    plan_hash = cache.plan_hash(key)
    if plan_hash is None:
        plan_hash = plan_digest(unsealed, encoded, head)
        cache.store_plan_hash(key, plan_hash)
    return replace(unsealed, plan_hash=plan_hash)
