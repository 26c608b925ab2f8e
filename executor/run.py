"""``execute``: stream a plan's Instances through a backend into a results directory.

Order of work: read and verify the whole plan, resolve the model, check the tokenizer and the results
directory (nothing is written before all of these pass); then write the manifest, copy reusable results
(``--reuse``), and run the pending Instances, kind by kind (executor/jobloop.py: scoring, then generation),
in this process or on a Ray pool (executor/pool/), writing Parquet parts as results arrive. Resume
is implicit: Instances already in the directory are skipped. Before anything runs, the result store
(``run.store``; executor/ANSWERSTORE.md) answers what it holds; every answer computed is stored.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lmeval.common import term_safe
from lmeval.executor import faults, hardware
from lmeval.executor.backends import Backend, plan_refusal, start_backend
from lmeval.executor.efficiency import efficiency
from lmeval.executor.errors import ExecuteError
from lmeval.executor.estimate import estimate_note, run_estimate
from lmeval.executor.hardware import versions
from lmeval.executor.instances import load_instances, parse_shard
from lmeval.executor.jobloop import JobLoop, RunStats, ms_since
from lmeval.executor.modelconf import ModelSpec, model_identity
from lmeval.executor.options import RunOptions
from lmeval.executor.preflight import preflight
from lmeval.executor.progress import Progress
from lmeval.executor.quiet import ENGINE_LOG, engine_output
from lmeval.executor.requests import is_sampled
from lmeval.executor.resume import check_resume, reuse_rows, reuse_table
from lmeval.executor.runmodel import resolve_run_model
from lmeval.executor.store import PartWriter, ResultsDir
from lmeval.executor.storeuse import StoreUse, StoringSink, plan_row
from lmeval.executor.vocab import check_token_ids, vocab_size
from lmeval.plans import InstanceRecord, Numerics, PlanError, PlanHeader, RunManifest, plan_keys, without_secrets

BackendFactory = Callable[[ModelSpec, Path | None], Backend]


def efficiency_note(stats: RunStats) -> str:
    """``, efficiency 0.93 (distinct / computed tokens), 5120 tokens/s`` for the summary line; empty when the
    backend does not count what it computes."""
    ratio = efficiency(stats.distinct_tokens, stats.computed_tokens)
    if ratio is None:
        return ""
    seconds = (stats.scoring_ms + stats.generation_ms) / 1000
    rate = f", {stats.computed_tokens / seconds:.0f} tokens/s" if seconds > 0 else ""
    return (
        f", efficiency {ratio:.2f} ({stats.distinct_tokens} distinct / {stats.computed_tokens} computed tokens){rate}"
    )


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "model"


def default_out(header: PlanHeader, spec: ModelSpec, shard: tuple[int, int] | None) -> Path:
    name = f"{header.plan_hash[:12]}-{_safe(spec.name)}"
    if shard is not None:
        name += f"-shard{shard[0]}of{shard[1]}"
    return Path("results") / name


def run_plan(plan_path: str, opts: RunOptions, backend_factory: BackendFactory | None = None) -> Path:
    """Run every Instance of ``plan_path`` (or of one shard "I/N") and return the results directory
    (``lmeval.executor.execute`` says what ``opts`` mean). ``backend_factory`` replaces the backend the
    model config names (tests use it to count or wrap engine calls)."""
    plan_path = str(plan_path)
    shard_t = parse_shard(opts.shard)
    if opts.part_size < 1:
        raise ExecuteError(f"--part-size {opts.part_size}: must be at least 1")

    header, instances = load_instances(plan_path, shard_t)
    rm = resolve_run_model(plan_path, header, opts.overrides, instances)
    spec, ref, model_dir = rm.spec, rm.ref, rm.model_dir
    vocab = vocab_size(model_dir) if model_dir is not None and rm.entry.needs_weights else None
    if vocab is not None:
        check_token_ids(instances, vocab, plan_path)  # a forged id never reaches the engine
    refusal = plan_refusal(spec, header, instances, plan_path)
    if refusal:
        raise ExecuteError(refusal)
    if rm.entry.http:
        from lmeval.executor.backends import destination_notice

        notice = destination_notice(spec.engine, spec.plan_base_url)
        if notice:  # the host is the plan's text: escaped like any other
            print(term_safe(notice, one_line=True), file=sys.stderr)
    ident = model_identity(spec, model_dir, rm.tok_hash, ref)
    out_dir = Path(opts.out) if opts.out else default_out(header, spec, shard_t)
    answers = StoreUse(opts.store, spec, ident, model_dir, need_key=bool(opts.reuse))
    store = ResultsDir(out_dir)
    try:
        table = reuse_table(opts.reuse, ident, answers.model_key, spec) if opts.reuse else None
        store.lock()  # before the directory is read: one writer, and the done set it reads stays true
        run = _Run(plan_path, header, instances, spec, model_dir, ident, shard_t, opts)
        return run.into(store, table, backend_factory or _load_backend, answers)
    finally:
        answers.close()
        store.close()


class _Run:
    """One ``run_plan`` call once its inputs are checked: what it writes into the locked results directory."""

    def __init__(
        self,
        plan_path: str,
        header: PlanHeader,
        instances: list[InstanceRecord],
        spec: ModelSpec,
        model_dir: Path | None,
        ident: dict[str, Any],
        shard: tuple[int, int] | None,
        opts: RunOptions,
    ) -> None:
        self.plan_path = plan_path
        self.header = header
        self.instances = instances
        self.spec = spec
        self.model_dir = model_dir
        self.ident = ident
        self.shard = f"{shard[0]}/{shard[1]}" if shard else None
        self.opts = opts
        self.stats = RunStats(planned=len(instances))

    def into(self, store: ResultsDir, table: Any, factory: BackendFactory, answers: StoreUse) -> Path:
        out_dir, opts, stats = store.path, self.opts, self.stats
        existing = store.existing_manifest()
        if existing is not None:
            check_resume(existing, self.header, self.shard, self.ident, out_dir)
        try:
            done = store.done_ids(plan_keys(self.instances), self.plan_path) if existing is not None else set()
        except PlanError as e:
            raise ExecuteError(f"{e}; cannot resume into {out_dir}") from None
        faults.pause("done-ids")

        todo = [i for i in self.instances if i.instance_id not in done]
        stats.resumed = len(self.instances) - len(todo)
        stored = answers.lookup(todo)  # read only: written as rows once the directory is open
        if self.spec.max_model_len is not None:  # before anything is written or loaded
            report = preflight(todo, self.spec.max_model_len, self.spec.max_gen_toks, self.plan_path)
            stats.truncated = report.truncated
            if report.line():
                print(report.line(), file=sys.stderr)
        manifest = self.manifest(existing)
        manifest.store = answers.manifest_info()
        if existing is not None and not todo and existing.finished:
            return out_dir

        session = None
        if opts.pool is not None and todo:
            from lmeval.executor.pool import PoolSession

            session = PoolSession(opts.pool, self.spec, out_dir, self.header.plan_hash)
        try:
            store.open()
        except BaseException:
            if session is not None:
                session.close()
            raise
        quiet = engine_output(out_dir / ENGINE_LOG, opts.verbose)
        terminal = quiet.__enter__()
        bar = Progress(opts.progress, total=len(self.instances), done=len(done), stream=terminal)
        backend: Backend | None = None
        try:
            store.write_manifest(manifest)
            writer = PartWriter(store, opts.part_size, bar)
            if stored:
                todo = self.from_store(stored, todo, writer, bar)
            if table is not None and todo:
                todo = self.reuse(table, todo, writer, bar)
            if todo and session is not None:
                session.run(plan_path=self.plan_path, plan_hash=self.header.plan_hash, ident=self.ident,
                            instances=self.instances, todo=todo, out_dir=out_dir, bar=bar, stats=stats,
                            manifest=manifest)  # fmt: skip
                answers.store_dir_rows(out_dir, todo)
            elif todo:
                backend = self.load(factory, todo, manifest, bar)
                sink = StoringSink(writer, answers, todo)
                try:
                    JobLoop(backend, self.spec, self.plan_path, sink, stats).run(todo, bar.phase)
                except ExecuteError:  # a request failed for good, or an answer was refused (RequestFailed)
                    sink.flush()  # the requests that finished stay: a rerun resumes after them
                    raise
            writer.flush()
            stats.store_writes = answers.store.written if answers.store is not None else 0
            manifest.finished = now()
            manifest.stats = stats.as_dict()
            store.write_manifest(manifest)
        finally:
            bar.close()
            try:
                if backend is not None and opts.close_backend:
                    backend.close()
                if session is not None:
                    session.close()
            finally:
                quiet.__exit__(None, None, None)
        self.summary(time.monotonic() - bar.started, out_dir, manifest.estimate)
        return out_dir

    def summary(self, elapsed: float, out_dir: Path, estimate: dict[str, Any]) -> None:
        """The run's one summary line (stderr): what was computed, taken from the store, reused and resumed, and
        the token estimate beside what was computed."""
        stats = self.stats
        print(
            f"executed {stats.executed} instances ({stats.requests} requests), from the store {stats.stored}, "
            f"reused {stats.reused}, "
            f"resumed {stats.resumed} of {stats.planned} in {elapsed:.1f}s (model load {stats.load_ms / 1000:.1f}s, "
            f"scoring {stats.scoring_ms / 1000:.1f}s, generation {stats.generation_ms / 1000:.1f}s)"
            f"{efficiency_note(stats)}{estimate_note(estimate, stats.computed_tokens)} -> {out_dir}",
            file=sys.stderr,
        )

    def manifest(self, existing: RunManifest | None) -> RunManifest:
        """This run's manifest, unfinished; a resumed run keeps the first run's start and engine args."""
        return RunManifest(
            plan_hash=self.header.plan_hash,
            plan_path=str(Path(self.plan_path).resolve()),
            model=self.ident,
            backend=self.spec.backend,
            engine_args=(without_secrets(existing.engine_args) if existing is not None else self.spec.engine_args()),
            versions=versions(self.spec.backend),
            shard=self.shard,
            n_instances=len(self.instances),
            started=existing.started if existing is not None and existing.started else now(),
            finished=None,
            stats=(existing.stats if existing is not None else {}),
            hardware=hardware.describe(),
            numerics=self.numerics(existing),
        )

    def numerics(self, existing: RunManifest | None) -> Numerics:
        """The kernel paths of earlier runs into this directory (their rows stay) and this run's cutting; the
        part size is None once runs with different part sizes wrote parts. A pool run sets its workers and
        chunk size, and every engine adds its kernel path when it starts."""
        part_size: int | None = self.opts.part_size
        if existing is not None and existing.numerics.part_size != part_size:
            part_size = None
        paths = list(existing.numerics.kernel_paths) if existing is not None else []
        return Numerics(kernel_paths=paths, part_size=part_size)

    def from_store(
        self, stored: dict[str, dict[str, Any]], todo: list[InstanceRecord], writer: PartWriter, bar: Progress
    ) -> list[InstanceRecord]:
        """Write the rows the result store answers (``source`` = ``stored``); the Instances still to run."""
        bar.phase("result store")
        for inst in todo:
            if inst.instance_id in stored:
                writer.add([plan_row(inst, stored[inst.instance_id], "stored")], 0)
        writer.flush()
        self.stats.stored = sum(1 for i in todo if i.instance_id in stored)
        return [i for i in todo if i.instance_id not in stored]

    def reuse(self, table: Any, todo: list[InstanceRecord], writer: PartWriter, bar: Progress) -> list[InstanceRecord]:
        """Copy the rows ``table`` answers; the Instances still to run."""
        bar.phase("reuse")
        reused_ids: set[str] = set()
        for inst, row in reuse_rows(table, todo, self.spec.seed):
            writer.add([row], 0)
            reused_ids.add(inst.instance_id)
        writer.flush()
        self.stats.reused = len(reused_ids)
        return [i for i in todo if i.instance_id not in reused_ids]

    def load(
        self, factory: BackendFactory, todo: list[InstanceRecord], manifest: RunManifest, bar: Progress
    ) -> Backend:
        """Start the backend; the manifest learns its engine arguments, the GPUs it sees, its platform and the
        estimate of ``todo`` on it."""
        bar.phase("loading model")
        if any(i.request_type == "generate_until" and is_sampled(i.generation_kwargs) for i in todo):
            self.spec = replace(self.spec, seeded_sampling=True)
        t = time.monotonic()
        backend = start_backend(self.spec, self.model_dir, factory)
        self.stats.load_ms = ms_since(t)
        manifest.engine_args = without_secrets(backend.engine_args())
        manifest.hardware = hardware.describe()  # now with the GPUs the backend's torch sees
        manifest.numerics.add(hardware.kernel_path())  # the kernels the engine just loaded
        platform = getattr(backend, "platform", None)
        if platform is not None:
            manifest.platform = platform.as_dict()
        manifest.estimate = run_estimate(self.header, todo, backend)  # beside what it computes (executor/estimate.py)
        return backend


def _load_backend(spec: ModelSpec, model_dir: Path | None) -> Backend:
    from lmeval.executor.backends import load_backend

    return load_backend(spec, model_dir)


__all__ = ["run_plan"]
