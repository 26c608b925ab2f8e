"""The engine's speed on this machine, measured on a calibration slice of the plan itself (#63's estimate).

``run_slice`` starts the backend the plan's model config names (as ``execute`` does), runs one document
untimed (the engine's first requests pay for its warm-up), then a slice of whole documents spread over the plan
through the job loop (executor/jobloop.py; nothing is written), and reads the rates off what the backend
counted: ``rates_of`` turns the slice's computed tokens and times into tokens/s. The slice's answers are thrown
away; ``execute`` runs them again.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lmeval.executor.backends import start_backend
from lmeval.executor.estimate import Rates, TokenEstimate, engine_block_size, estimate_tokens
from lmeval.executor.instances import load_instances
from lmeval.executor.jobloop import JobLoop, RunStats
from lmeval.executor.quiet import engine_output
from lmeval.executor.runmodel import resolve_run_model
from lmeval.plans import InstanceRecord

DEFAULT_SLICE_DOCS = 4


@dataclass
class SliceRun:
    """What the timed slice computed: its token estimate, the tokens the backend counted, its generated tokens
    (first samples) and the milliseconds of each kind."""

    docs: int
    estimate: TokenEstimate
    computed_tokens: int
    generated_tokens: int
    scoring_ms: int
    generation_ms: int
    load_s: float = 0.0


class _Discard:
    """A sink that keeps only the count of generated tokens of generation rows."""

    def __init__(self) -> None:
        self.generated = 0

    def add(self, rows: Sequence[dict[str, Any]], tokens: int) -> None:
        for r in rows[:1]:  # one job's rows share one answer
            if r["request_type"] == "generate_until":
                self.generated += int(r.get("n_continuation_tokens") or 0)

    def flush(self) -> None:
        pass


def rates_of(run: SliceRun) -> Rates:
    """Tokens/s from a slice: scoring tokens over scoring time is the prefill rate; generation's time less its
    prompts at that rate, over the tokens generated, the decode rate. A slice with no scoring reads one rate off
    generation (every computed token at it)."""
    est = run.estimate
    score_s, gen_s = run.scoring_ms / 1000, run.generation_ms / 1000
    gen_computed = max(run.computed_tokens - est.scoring_tokens, 0)
    if est.scoring_tokens and score_s > 0:
        prefill = est.scoring_tokens / score_s
    elif gen_s > 0 and gen_computed:
        return Rates(gen_computed / gen_s, None, f"calibration slice of {run.docs} documents")
    else:
        raise ValueError("the calibration slice computed nothing; give --tokens-per-s")
    decode = None
    if run.generated_tokens and gen_s > 0:
        left = gen_s - est.gen_prompt_tokens / prefill
        decode = run.generated_tokens / left if left > 0 else None
    return Rates(prefill, decode, f"calibration slice of {run.docs} documents")


def pick_slice(instances: Sequence[InstanceRecord], docs: int) -> list[list[InstanceRecord]]:
    """``docs + 1`` whole documents spread evenly over the plan (the first is the warm-up)."""
    by_doc: dict[tuple[str, int], list[InstanceRecord]] = {}
    for inst in instances:
        by_doc.setdefault((inst.task, inst.doc_id), []).append(inst)
    keys = list(by_doc)
    n = min(docs + 1, len(keys))
    step = len(keys) / n if n else 1
    return [by_doc[keys[int(k * step)]] for k in range(n)]


def run_slice(
    plan_path: str, overrides: Sequence[str], docs: int = DEFAULT_SLICE_DOCS, log_dir: Path | None = None
) -> tuple[SliceRun, int]:
    """Run the calibration slice of ``plan_path`` on its backend; the slice and the engine's block size."""
    header, instances = load_instances(plan_path, None)
    rm = resolve_run_model(plan_path, header, overrides, instances)
    chosen = pick_slice(instances, docs)
    log = (log_dir or Path(os.environ.get("TMPDIR", "/tmp"))) / "lmeval-calibration.log"
    with engine_output(log, False):
        t = time.monotonic()
        backend = start_backend(rm.spec, rm.model_dir, _load)
        load_s = time.monotonic() - t
        try:
            block = engine_block_size(backend, header)
            if chosen:
                JobLoop(backend, rm.spec, plan_path, _Discard(), RunStats()).run(chosen[0])  # warm-up
            timed = [i for doc in chosen[1:] for i in doc]
            sink, stats = _Discard(), RunStats()
            JobLoop(backend, rm.spec, plan_path, sink, stats).run(timed)
        finally:
            backend.close()
    est = estimate_tokens(header, timed, block_size=block)
    run = SliceRun(len(chosen) - 1, est, stats.computed_tokens, sink.generated, stats.scoring_ms,
                   stats.generation_ms, load_s)  # fmt: skip
    return run, block


def _load(spec: Any, model_dir: Path | None) -> Any:
    from lmeval.executor.backends import load_backend

    return load_backend(spec, model_dir)
