"""One engine of a Ray pool (``EngineWorker``, a Ray actor): loads the model once, then runs chunk after chunk
through the executor's one job loop (executor/jobloop.py) and returns each chunk's rows as Parquet bytes,
with what it loaded (tokenizer and config hashes, library versions) so the driver can refuse a node whose
model or code differs. Nothing here imports Ray at module level; nothing here writes to the results
directory (the driver, executor/pool/, is its only writer).
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from lmeval.executor import faults
from lmeval.executor.errors import first_line
from lmeval.executor.hardware import kernel_path, versions
from lmeval.executor.jobloop import JobLoop, RunStats, ms_since
from lmeval.executor.modelconf import ModelSpec
from lmeval.executor.pool.chunkstore import rows_to_parquet
from lmeval.plans import InstanceRecord, UserError


class ChunkRows:
    """A worker's sink (``jobloop.Sink``): the rows of one chunk, kept until the chunk is done."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self.tokens = 0

    def add(self, rows: Sequence[dict[str, Any]], tokens: int) -> None:
        self.rows.extend(rows)
        self.tokens += tokens
        faults.point("worker-rows")

    def flush(self) -> None:
        pass


def parallel_size(spec: ModelSpec) -> int:
    """The GPUs one engine of ``spec`` spans: tensor x pipeline parallel size."""
    return int(spec.engine.get("tensor_parallel_size") or 1) * int(spec.engine.get("pipeline_parallel_size") or 1)


def _content_identity(model_dir: Path | None) -> dict[str, Any]:
    from lmeval.common import config_hash, tokenizer_hash

    return {"tokenizer_hash": tokenizer_hash(model_dir), "config_hash": config_hash(model_dir)}


class EngineWorker:
    """One engine that runs chunks (a Ray actor). It resolves the model on its own node and reports what it
    loaded with every answer, so the driver can refuse a node whose model differs. A failure to start is
    kept and reported with the first chunk (start failures are not worth retrying)."""

    def __init__(self, spec: ModelSpec, plan_path: str, env: dict[str, str]) -> None:
        for k in (faults.FAULT, faults.ONCE):  # a local Ray instance's workers inherit the driver's environment
            os.environ.pop(k, None)
        os.environ.update(env)
        self.spec = spec
        self.plan_path = plan_path
        self.host = socket.gethostname()
        self.start_error: str | None = None
        self.backend: Any = None
        self.ident: dict[str, Any] = {}
        self.versions: dict[str, str] = {}
        self.kernel_path: dict[str, Any] = {}
        self.load_ms = 0
        try:
            import ray

            self.node = ray.get_runtime_context().get_node_id()
        except Exception:
            self.node = self.host
        try:
            self._start()
        except UserError as e:
            self.start_error = str(e)
        except Exception as e:
            self.start_error = f"{type(e).__name__}: {first_line(e)}"

    def _start(self) -> None:
        from lmeval.executor.backends import backend_entry, start_backend
        from lmeval.executor.modelconf import resolve_model_dir

        spec = self.spec
        parallel = backend_entry(spec).parallel and parallel_size(spec) > 1
        if parallel and "distributed_executor_backend" not in spec.engine:
            # inside an actor, vLLM would otherwise plan its own Ray placement for the GPUs this actor holds
            self.spec = spec = replace(spec, engine={**spec.engine, "distributed_executor_backend": "mp"})
        self.versions = versions(spec.backend)
        model_dir = resolve_model_dir(spec)
        self.ident = _content_identity(model_dir)
        t = time.monotonic()
        self.backend = start_backend(spec, model_dir)
        self.load_ms = ms_since(t)
        self.kernel_path = asdict(kernel_path())  # the kernels this engine loaded, for the manifest

    def ping(self) -> bool:
        return True

    def run_chunk(self, index: int, instances: list[InstanceRecord]) -> dict[str, Any]:
        """The rows of one chunk as Parquet bytes, with stats; ``{"error": ...}`` for bad input (not retried)."""
        instance_where = {"node": self.node, "host": self.host, "pid": os.getpid()}
        if self.start_error is not None:
            return {"error": f"worker on {self.host} could not start its engine: {self.start_error}", **instance_where}
        faults.point(f"chunk-{index}")
        stats = RunStats()
        sink = ChunkRows()
        t = time.monotonic()
        try:
            JobLoop(self.backend, self.spec, self.plan_path, sink, stats).run(instances)
        except UserError as e:
            return {"error": str(e), **instance_where}
        busy = ms_since(t)
        return {
            "parquet": rows_to_parquet(sink.rows),
            "rows": len(sink.rows),
            "tokens": sink.tokens,
            "stats": stats.as_dict(),
            "busy_ms": busy,
            "ident": self.ident,
            "versions": self.versions,
            "engine_args": self.backend.engine_args(),
            "load_ms": self.load_ms,
            "kernel_path": self.kernel_path,
            **instance_where,
        }
