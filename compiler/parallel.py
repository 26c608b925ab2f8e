"""Every selected task built into a ``TaskPart``: from the build cache when it holds the task's key, else built,
in worker processes when more than one task is to be built and more than one worker is allowed.

With N workers, N - 1 processes are forked (they inherit the composed config, the loaded tokenizer and the
imported task code, so they start at once) and take the tasks from the first one on, while this process builds
from the last one down until it meets them (it then needs no entry for its own tasks: a worker's entry costs
packing, unpacking and decompressing its records again). Each builds whole tasks, exactly as the serial loop
does: a task's global generators are seeded afresh for it (``compiler.build.seeds``) and its bytes depend on nothing
another task did. A worker hands back its task as a build-cache entry (``compiler.cache.part``), checked like one
read from disk. The workers' results are taken in task order, and they build every task before the ones this
process took, so the first failing task's error is the one raised, as in a serial compile.

``BuildSettings``: ``cache`` (``lmeval compile --no-cache``, ``LMEVAL_BUILD_CACHE=0``), ``workers``
(``lmeval compile --jobs N``, ``LMEVAL_COMPILE_JOBS``; default: the number of CPUs)."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from lmeval.compiler.build import BuildOptions, ChatFn, TaskBuilder, has_python, seeded_globals
from lmeval.compiler.cache import (
    BuildCache,
    CacheStats,
    TaskPart,
    default_dir,
    enabled_from_env,
    entry_digest,
    max_bytes_from_env,
    pack_part,
    part_of,
    task_key,
    tokenizer_key,
    unpack_part,
    workers_from_env,
)
from lmeval.compiler.encode import ModelTokenizer
from lmeval.compiler.tasks import Selection, TaskConfig


@dataclass(frozen=True)
class BuildSettings:
    """How a compile builds its tasks (none of it reaches the plan)."""

    cache: bool = field(default_factory=enabled_from_env)
    workers: int = field(default_factory=workers_from_env)
    cache_dir: Path | None = None  # default: buildcache.default_dir()


@dataclass
class _Job:
    specs: list[TaskConfig]
    opts: BuildOptions
    chat: ChatFn | None
    tok: ModelTokenizer | None
    keys: list[str | None]


_JOB: _Job | None = None  # what forked workers build from


def _build(job: _Job, i: int) -> TaskPart:
    spec = job.specs[i]
    opts = job.opts
    with seeded_globals(opts.python_seed, opts.numpy_seed, with_numpy=has_python(spec.raw)):
        bt = TaskBuilder(spec, opts, job.chat).build()
    return part_of(bt, opts, job.tok)


def _built_here(job: _Job, i: int, cache: BuildCache | None) -> TaskPart:
    """Task ``i`` built in this process, stored in the cache when it has a key."""
    part = _build(job, i)
    key = job.keys[i]
    if cache is not None and key is not None:
        blob = pack_part(key, part)
        cache.store(key, blob)
        part = replace(part, digest=entry_digest(blob))
    return part


def _worker(i: int) -> bytes:
    assert _JOB is not None
    return pack_part(_JOB.keys[i] or "", _build(_JOB, i))


@contextlib.contextmanager
def _no_tokenizer_threads() -> Iterator[None]:
    """Forked workers must not use the tokenizers library's thread pool (it does not survive a fork); one
    worker per core is the parallelism. The variable is read when the workers encode."""
    old = os.environ.get("TOKENIZERS_PARALLELISM")
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("TOKENIZERS_PARALLELISM", None)
        else:
            os.environ["TOKENIZERS_PARALLELISM"] = old


def build_parts(
    specs: list[TaskConfig],
    opts: BuildOptions,
    chat: ChatFn | None,
    tok: ModelTokenizer | None,
    settings: BuildSettings,
) -> tuple[list[TaskPart], CacheStats, BuildCache | None]:
    """Every task's part, in order (see the module docstring), and the build cache (None when off)."""
    global _JOB
    cache = BuildCache(settings.cache_dir or default_dir(), max_bytes_from_env()) if settings.cache else None
    keys: list[str | None] = [None] * len(specs)
    parts: list[TaskPart | None] = [None] * len(specs)
    if cache is not None:
        tkey = tokenizer_key(tok, opts.apply_chat_template)
        for i, spec in enumerate(specs):
            keys[i] = task_key(spec, opts, tkey)
            if keys[i] is None:
                cache.stats.uncacheable += 1
            else:
                parts[i] = cache.load(keys[i])  # type: ignore[arg-type]
    todo = [i for i, p in enumerate(parts) if p is None]
    job = _Job(specs, opts, chat, tok, keys)
    workers = max(1, min(settings.workers, len(todo)))
    if "fork" not in multiprocessing.get_all_start_methods():
        workers = 1  # (Windows) workers must inherit the loaded state; build in this process
    if workers == 1:
        for i in todo:
            parts[i] = _built_here(job, i, cache)
    else:
        _JOB = job
        try:
            with (
                _no_tokenizer_threads(),
                ProcessPoolExecutor(max_workers=workers - 1, mp_context=multiprocessing.get_context("fork")) as pool,
            ):
                futures: list[Future[bytes]] = [pool.submit(_worker, i) for i in todo]
                try:
                    # this process builds from the last task down, each one no worker has started (its future
                    # cancelled), until it meets the workers; the first error in task order is raised, as the
                    # workers build every task before the last one this process took
                    failed: Exception | None = None
                    here = len(todo)
                    while here > 0 and failed is None and futures[here - 1].cancel():
                        here -= 1
                        try:
                            parts[todo[here]] = _built_here(job, todo[here], cache)
                        except Exception as e:  # noqa: BLE001 - raised below unless a task before it fails
                            failed = e
                    for i, fut in zip(todo[:here], futures[:here], strict=True):
                        blob = fut.result()
                        key = keys[i]
                        parts[i] = unpack_part(blob, key or "")
                        if cache is not None and key is not None:
                            cache.store(key, blob)
                    if failed is not None:
                        raise failed
                finally:
                    for fut in futures:
                        fut.cancel()  # after an error: build no more
        finally:
            _JOB = None
    if cache is not None and cache.stats.stored:
        cache.evict()
    done = [p for p in parts if p is not None]
    assert len(done) == len(specs)
    return done, cache.stats if cache is not None else CacheStats(uncacheable=len(specs)), cache


def lm_eval_order_parts(
    sel: Selection, opts: BuildOptions, chat: ChatFn | None, tok: ModelTokenizer | None
) -> list[TaskPart]:
    """Every task's part under ``run.seed_mode=lm_eval`` (``compiler.build.seeds``), in plan order: the global
    generators seeded once and, in lm-eval's load order (``Selection.load_order``), every task's documents
    processed, then every task rendered, as lm-eval's ``simple_evaluate`` does. One process, no cache: what a
    task draws depends on every task before it."""
    by_name = {spec.name: spec for spec in sel.tasks}
    order = [by_name[name] for name in sel.load_order]
    with seeded_globals(opts.python_seed, opts.numpy_seed, with_numpy=any(has_python(s.raw) for s in order)):
        builders = [TaskBuilder(spec, opts, chat) for spec in order]
        prepared = [b.prepare() for b in builders]
        built = {spec.name: b.render(p) for spec, b, p in zip(order, builders, prepared, strict=True)}
    return [part_of(built[spec.name], opts, tok) for spec in sel.tasks]
