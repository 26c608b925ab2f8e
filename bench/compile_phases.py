"""Where a cold compile's time goes, phase by phase (CPU and wall seconds), one task at a time in this process.

The compile pipeline's own steps run one after another here (tokenizing is not overlapped with encoding as in
``compiler.encode.plan_records``), so each phase is measured alone; the total is what a serial cold ``lmeval compile
--no-cache -j 1`` spends, less the overlap. The cyclic garbage collector is off, as in a compile.

    .venv/bin/python bench/compile_phases.py [--data-dir DIR] [OVERRIDES...]
    (default: run.tasks=[mmlu] run.num_fewshot=5)
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
T = TypeVar("T")


def main(argv: list[str] | None = None) -> int:
    t_start, c_start = time.perf_counter(), time.process_time()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("overrides", nargs="*", default=["run.tasks=[mmlu]", "run.num_fewshot=5"])
    args = ap.parse_args(argv)
    gc.disable()  # as compile_located runs a compile (common/gcpause.py); with the collector on, tokenizing doubles
    wall: dict[str, float] = defaultdict(float)
    cpu: dict[str, float] = defaultdict(float)

    @contextmanager
    def phase(name: str) -> Iterator[None]:
        t0, c0 = time.perf_counter(), time.process_time()
        yield
        wall[name] += time.perf_counter() - t0
        cpu[name] += time.process_time() - c0

    def timed(name: str, fn: Callable[[], T]) -> T:
        with phase(name):
            return fn()

    with phase("imports (compiler, Hydra, tokenizers)"):
        from lmeval.compiler.build.builder import TaskBuilder
        from lmeval.compiler.build.seeds import has_python, seeded_globals
        from lmeval.compiler.config import compose
        from lmeval.compiler.encode import plan_records as tr
        from lmeval.compiler.encode.header import plan_header, task_summary
        from lmeval.compiler.encode.modelinfo import load_model_info as model_identity
        from lmeval.compiler.runconfig import run_config
        from lmeval.compiler.scorecheck import check_groups, check_task
        from lmeval.compiler.tasks.select import select_tasks
        from lmeval.plans.plan import IdsPacker, split_locations
        from lmeval.plans.plan.sealparts import EncodedTask, encode_frames, seal_tasks, write_tasks

    ov = [*args.overrides, f"run.data_dir={args.data_dir.resolve()}"]
    with phase("Hydra composition"):
        cfg = compose(ov)
        portable, _ = split_locations(cfg)
        run = run_config(cfg.get("run") or {})
    tok, model, chat = timed("tokenizer loading", lambda: model_identity(cfg.get("model"), run.apply_chat_template))
    with phase("task selection and scoring checks"):
        sel = select_tasks(cfg, run)
        for spec in sel.tasks:
            check_task(spec)
        check_groups(sel.groups, sel.tasks)
    opts = run.options()
    encoded, summaries = [], []
    for spec in sel.tasks:
        with seeded_globals(opts.python_seed, opts.numpy_seed, with_numpy=has_python(spec.raw)):
            builder = TaskBuilder(spec, opts, chat)
            docs = timed("data loading (JSONL, checks)", builder.eval_docs)
            builder.eval_docs = lambda d=docs: d  # type: ignore[method-assign]
            bt = timed("rendering (few-shot, templates)", builder.build)
        n = len(bt.docs)
        with phase("tokenizing"):
            ids = tr._token_ids(bt, tok, 0, n) if tok is not None else {}
        with phase("hashing docs (fingerprint)"):
            fp, doc_bytes = tr._fingerprint(bt)
        with phase("encoding doc records"):
            docs_r, doc_blobs = tr._doc_records(bt, doc_bytes)
        with phase("encoding instances + request hashes"):
            _, blobs = tr._instance_records(bt, docs_r, doc_blobs, ids, 0, n, IdsPacker())
        with phase("task summary (config, code hashes)"):
            summary = task_summary(bt, opts, fp)
        lengths = [len(b) for b in blobs]
        data = b"".join(blobs)
        with phase("zstd compression"):
            frames = encode_frames(data, lengths)
        encoded.append(EncodedTask(spec.name, data, lengths, summary.n_docs, summary.n_instances, frames))
        summaries.append(summary)
    with phase("sealing (task and plan hashes)"):
        header = plan_header(portable, model, sel, summaries, [])
        sealed = seal_tasks(header, encoded)
    with tempfile.TemporaryDirectory() as tmp:
        timed("writing the plan", lambda: write_tasks(Path(tmp) / "p.msgpack", sealed, encoded))
    total_w, total_c = time.perf_counter() - t_start, time.process_time() - c_start
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"{sealed.n_docs} docs, {sealed.n_instances} instances, plan_hash {sealed.plan_hash[:12]}; load {load}")
    print("| phase | CPU s | wall s |\n|---|---:|---:|")
    for name in cpu:
        print(f"| {name} | {cpu[name]:.2f} | {wall[name]:.2f} |")
    print(f"| **total (this process, after interpreter start)** | {total_c:.2f} | {total_w:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
