"""lmeval against lm-eval 0.4.13 on both backends, task by task, each side a fresh process (issue #36).

    .venv/bin/python bench/vs_lmeval.py [--model smollm2 | --model-path DIR] [--mmlu-subjects 5]
        [--arc-limit 200] [--gsm8k-limit 10] [--max-gen-toks 256] [--backends vllm,hf] [--dry-run]

Tasks (the issue's acceptance sizes by default): MMLU 5-shot on the first N subjects (all their test docs),
arc_easy 0-shot (first K test docs), gsm8k 5-shot (first M test docs, greedy, ``max_gen_toks``). For each task
and backend two processes run one after the other, timed from process start to scores:

  ours:    ``lmeval run <task> model.path=DIR model.backend=B`` (compile, execute, score in one process);
  lm-eval: ``lm_eval run --model vllm|hf`` on its own YAMLs pointed at the same JSONL files, ``--log_samples``.

Printed per task and backend: both walls and their ratio, every metric of both sides (they must be equal),
the largest per-request |Δll| (our results vs lm-eval's logged samples, matched on doc and request index),
and the efficiency figure of our run (``executor/efficiency.py``: distinct token positions / tokens the
engine computed; 1.0 is the limit). Totals per backend: the sum of walls over tasks. Load average at start
and end. ``--dry-run`` compiles our plans, writes lm-eval's YAMLs and prints every command without starting an
engine (what ``bench/gpu.sh --dry-run`` and its test run on a CPU). Writes ``bench/results/vs-lmeval-<model>.md``.

Before the first timed process, one untimed child imports torch, vLLM, transformers and lm-eval (``warm_up``):
the first process after a quiet spell otherwise pays the cold start (their libraries read from disk: the
likely cause of MMLU's 35.9 s in the bench's first row on the tiny model, against 13.2 s for the same
``lmeval run`` measured warm, the same as arc_easy's 14.1 s; engine arguments and scoring time are the same).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from execute import ENV, machine, vllm_shim  # noqa: E402  (bench/ is sys.path[0])

DATA = Path(os.environ.get("LMEVAL_DATA_DIR") or (REPO / ".." / "shared" / "data")).resolve()
MMLU_TEMPLATE = "mmlu/default/_default_template_yaml"


@dataclass
class Task:
    """One task of the bench: our compile overrides and lm-eval's local task names (YAMLs under ``tasks``)."""

    label: str
    overrides: list[str]
    lm_tasks: list[str]


@dataclass
class Side:
    wall: float = 0.0
    metrics: dict[str, float] = field(default_factory=dict)
    lls: dict[tuple[str, int, int], float] = field(default_factory=dict)  # (task, doc, request idx) -> ll
    stats: dict[str, int] = field(default_factory=dict)


def _lm_root() -> Path:
    import lm_eval

    return Path(lm_eval.__file__).parent / "tasks"


def _head(src: Path, n: int | None, dst: Path) -> str:
    """The first ``n`` lines of ``src`` (all: None) as ``dst``; its path."""
    with open(src) as f, open(dst, "w") as g:
        for k, line in enumerate(f):
            if n is not None and k >= n:
                break
            g.write(line)
    return str(dst)


def _local(cfg: dict[str, Any], name: str, files: dict[str, str]) -> dict[str, Any]:
    return {**cfg, "task": name, "dataset_path": "json", "dataset_name": None, "tag": [],
            "dataset_kwargs": {"data_files": files}}  # fmt: skip


def build_tasks(a: argparse.Namespace, scratch: Path) -> tuple[list[Task], Path]:
    """Our tasks and lm-eval's local YAMLs for them (``scratch/tasks``)."""
    import yaml

    root, out, data = _lm_root(), scratch / "tasks", scratch / "data"
    out.mkdir()
    data.mkdir()
    common = [f"run.data_dir={DATA}"]
    tasks: list[Task] = []
    if a.mmlu_subjects:
        subjects = sorted(p.name for p in (DATA / "mmlu").iterdir() if (p / "test.jsonl").is_file())
        chosen = subjects[: a.mmlu_subjects]
        template = yaml.safe_load((root / MMLU_TEMPLATE).read_text())
        names = []
        for s in chosen:
            cfg = {**template, **yaml.safe_load((root / f"mmlu/default/mmlu_{s}.yaml").read_text())}
            cfg.pop("include", None)
            files = {k: str(DATA / "mmlu" / s / f"{k}.jsonl") for k in ("test", "dev", "validation")}
            cfg = _local(cfg, f"mmlu_{s}_local", files)
            cfg["num_fewshot"] = 5
            (out / f"mmlu_{s}_local.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
            names.append(f"mmlu_{s}_local")
        ours = [f"run.tasks=[{','.join(f'mmlu_{s}' for s in chosen)}]", "run.num_fewshot=5"]
        tasks.append(Task(f"mmlu 5-shot ({len(chosen)} subjects)", ours + common, names))
    if a.arc_limit:
        cfg = yaml.safe_load((root / "arc/arc_easy.yaml").read_text())
        files = {k: str(DATA / f"arc_easy/{k}.jsonl") for k in ("train", "validation")}
        files["test"] = _head(DATA / "arc_easy/test.jsonl", a.arc_limit, data / "arc_easy_test.jsonl")
        (out / "arc_easy_local.yaml").write_text(yaml.safe_dump(_local(cfg, "arc_easy_local", files)))
        tasks.append(Task(f"arc_easy 0-shot ({a.arc_limit} docs)",
                          ["+task=arc_easy", f"run.limit={a.arc_limit}", *common], ["arc_easy_local"]))  # fmt: skip
    if a.gsm8k_limit:
        cfg = yaml.safe_load((root / "gsm8k/gsm8k.yaml").read_text())
        cfg["generation_kwargs"] = {**cfg.get("generation_kwargs", {}), "max_gen_toks": a.max_gen_toks}
        files = {"train": str(DATA / "gsm8k/train.jsonl")}
        files["test"] = _head(DATA / "gsm8k/test.jsonl", a.gsm8k_limit, data / "gsm8k_test.jsonl")
        (out / "gsm8k_local.yaml").write_text(yaml.safe_dump(_local(cfg, "gsm8k_local", files)))
        ours = ["+task=gsm8k", f"run.limit={a.gsm8k_limit}", f"run.gen_kwargs={{max_gen_toks:{a.max_gen_toks}}}"]
        tasks.append(Task(f"gsm8k 5-shot ({a.gsm8k_limit} docs, {a.max_gen_toks} tokens)", ours + common,
                          ["gsm8k_local"]))  # fmt: skip
    return tasks, out


def on_gpu() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except ImportError:
        return False


def lm_eval_command(backend: str, model: str, task: Task, tasks_dir: Path, out: Path, bs: str) -> list[str]:
    if backend == "vllm":
        margs = f"pretrained={model},seed=0,enable_prefix_caching=True"
        margs += (",dtype=auto,gpu_memory_utilization=0.8" if on_gpu() else
                  f",dtype=float32,enforce_eager=True,kv_cache_memory_bytes={1 << 30},block_size=32")  # fmt: skip
        batch = "auto"
    else:
        margs, batch = f"pretrained={model},dtype={'auto' if on_gpu() else 'float32'}", bs
    return [sys.executable, "-m", "lm_eval", "run", "--model", backend, "--model_args", margs,
            "--tasks", ",".join(task.lm_tasks), "--include_path", str(tasks_dir), "--batch_size", batch,
            "--log_samples", "--output_path", str(out)]  # fmt: skip


def ours_command(backend: str, model: str, task: Task, out: Path) -> list[str]:
    flags = ["--no-progress", "--out", str(out), "--plan-out", f"{out}.msgpack"]
    return [sys.executable, "-m", "lmeval", "run", *task.overrides, f"model.path={model}", f"model.backend={backend}",
            *flags]  # fmt: skip


WARM_UP = "import torch, transformers, vllm, lm_eval.evaluator"


def warm_up(env: dict[str, str]) -> float:
    """Import what both sides import, untimed, so the first timed process does not pay the cold page cache."""
    t = time.monotonic()
    subprocess.run([sys.executable, "-c", WARM_UP], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - t


def timed(cmd: list[str], env: dict[str, str], log: Path) -> float:
    t = time.monotonic()
    with open(log, "w") as f:
        p = subprocess.run(cmd, cwd=log.parent, env=env, stdout=f, stderr=subprocess.STDOUT)
    wall = time.monotonic() - t
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:5])} ... failed ({p.returncode}); see {log}:\n{log.read_text()[-3000:]}")
    return wall


def ours_side(out: Path, wall: float) -> Side:
    from lmeval.plans.results.manifest import read_manifest, read_results

    res = json.loads((out / "results.json").read_text())["results"]
    rows = read_results(out).filter(read_results(out)["request_type"].is_in(["loglikelihood"]))
    lls = {(t, int(d), int(i)): float(v) for t, d, i, v in
           rows.select("task", "doc_id", "idx", "loglikelihood").iter_rows()}  # fmt: skip
    return Side(wall, _metrics(res), lls, read_manifest(out).stats)


def lm_side(out: Path, wall: float) -> Side:
    files = sorted(out.rglob("results_*.json"))
    res = json.loads(files[-1].read_text())["results"] if files else {}
    lls: dict[tuple[str, int, int], float] = {}
    for f in out.rglob("samples_*.jsonl"):
        task = f.name.removeprefix("samples_").rsplit("_", 1)[0].removesuffix("_local")
        for line in f.read_text().splitlines():
            s = json.loads(line)
            for i, r in enumerate(s.get("filtered_resps") or []):
                ll = _number(r[0]) if isinstance(r, list) and r else None  # lm-eval logs ["-1.25", "False"]
                if ll is not None:
                    lls[(task, int(s["doc_id"]), i)] = ll
    return Side(wall, _metrics({k.removesuffix("_local"): v for k, v in res.items()}), lls)


def _number(x: Any) -> float | None:
    try:
        return float(x) if not isinstance(x, bool) else None
    except (TypeError, ValueError):
        return None


def _metrics(results: dict[str, Any]) -> dict[str, float]:
    return {f"{t} {k}": float(v) for t, m in results.items() for k, v in m.items()
            if "," in k and "_stderr" not in k and isinstance(v, int | float)}  # fmt: skip


def max_dll(a: Side, b: Side) -> tuple[float, int]:
    keys = a.lls.keys() & b.lls.keys()
    return max((abs(a.lls[k] - b.lls[k]) for k in keys), default=0.0), len(keys)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="smollm2", help="smollm2 (the GGUF converted once) or tiny")
    ap.add_argument("--model-path", default=None, help="a Hugging Face model folder instead of --model")
    ap.add_argument("--mmlu-subjects", type=int, default=5)
    ap.add_argument("--arc-limit", type=int, default=200)
    ap.add_argument("--gsm8k-limit", type=int, default=10)
    ap.add_argument("--max-gen-toks", type=int, default=256)
    ap.add_argument("--backends", default="vllm,hf")
    ap.add_argument("--lm-eval-hf-batch-size", default="8", help="lm-eval --model hf --batch_size (default 8)")
    ap.add_argument("--dry-run", action="store_true", help="compile and print the commands; start no engine")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    model = a.model_path or model_folder(a.model)
    scratch = Path(tempfile.mkdtemp(prefix="lmeval-bench-vs-"))
    env = {**os.environ, **ENV, "PYTHONPATH": str(REPO), "HF_HOME": str(scratch / "hf")}
    lenv = {**env, "PYTHONPATH": f"{vllm_shim(scratch)}{os.pathsep}{REPO}"} if not on_gpu() else env
    m0 = machine()
    print(f"machine: {m0['arch']}, {m0['nproc']} cores, {m0['cpu']}; load average at start {m0['load']}", flush=True)
    try:
        tasks, tasks_dir = build_tasks(a, scratch)
        backends = [b for b in a.backends.split(",") if b]
        table: list[tuple[Task, str, Side, Side]] = []
        if not a.dry_run:
            print(f"warm-up (untimed imports): {warm_up(env):.1f}s", flush=True)
        for t in tasks:
            for b in backends:
                key = f"{t.lm_tasks[0]}-{b}"
                ours_cmd = ours_command(b, model, t, scratch / f"ours-{key}")
                lm_cmd = lm_eval_command(b, model, t, tasks_dir, scratch / f"lm-{key}", a.lm_eval_hf_batch_size)
                if a.dry_run:
                    from lmeval.compiler import compile_to_file

                    plan = compile_to_file([*t.overrides, f"model.path={model}"], out=str(scratch / f"{key}.msgpack"))
                    print(f"{t.label} [{b}]\n  plan {plan}\n  ours:    {' '.join(ours_cmd)}\n"
                          f"  lm-eval: {' '.join(lm_cmd)}", flush=True)  # fmt: skip
                    continue
                ours = ours_side(Path(ours_cmd[-3]), timed(ours_cmd, env, scratch / f"ours-{key}.log"))
                lm = lm_side(scratch / f"lm-{key}", timed(lm_cmd, lenv, scratch / f"lm-{key}.log"))
                table.append((t, b, ours, lm))
                print(line(t, b, ours, lm), flush=True)
        if a.dry_run:
            print(f"dry run: {len(tasks) * len(backends)} task x backend pairs compiled; no engine started")
            return 0
        m1 = machine()
        report = render(table, m0, m1, a, model)
        print(report)
        name = Path(model).name if a.model_path else a.model
        out = Path(a.out or REPO / "bench" / "results" / f"vs-lmeval-{name}.md")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(report)
        return 0 if all(o.metrics == lm.metrics for _, _, o, lm in table) else 1
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def model_folder(name: str) -> str:
    if name == "tiny":
        from lmeval.common.tinymodel import ensure_tiny_model

        return str(ensure_tiny_model())
    from lmeval.common.gguf import convert_gguf, smollm2_gguf

    return str(convert_gguf(smollm2_gguf()))


def efficiency_of(s: Side) -> str:
    d, c = s.stats.get("distinct_tokens", 0), s.stats.get("computed_tokens", 0)
    return f"{d / c:.2f}" if c else "n/a"


def line(t: Task, b: str, ours: Side, lm: Side) -> str:
    dll, n = max_dll(ours, lm)
    same = "equal" if ours.metrics == lm.metrics else "DIFFER"
    return (f"{t.label} [{b}]: ours {ours.wall:.1f}s, lm-eval {lm.wall:.1f}s, lm-eval/ours {lm.wall / ours.wall:.2f}x; "
            f"metrics {same}; max |dll| {dll:.2e} over {n} requests; efficiency {efficiency_of(ours)}")  # fmt: skip


def render(table: list[tuple[Task, str, Side, Side]], m0: dict[str, str], m1: dict[str, str],
           a: argparse.Namespace, model: str) -> str:  # fmt: skip
    lines = ["# lmeval vs lm-eval 0.4.13, task by task, both backends", "",
             f"Model folder `{Path(model).name}`. Machine: {m0['arch']}, {m0['nproc']} cores, {m0['cpu']}; "
             f"load average at start {m0['load']}, at end {m1['load']}.", "",
             "| task | backend | ours (s) | lm-eval (s) | lm-eval / ours | metrics | max abs dll (requests) | "
             "efficiency (distinct / computed) |", "|---|---|---:|---:|---:|---|---:|---:|"]  # fmt: skip
    for t, b, o, lm in table:
        dll, n = max_dll(o, lm)
        same = "equal" if o.metrics == lm.metrics else "**differ**"
        lines.append(f"| {t.label} | {b} | {o.wall:.1f} | {lm.wall:.1f} | {lm.wall / o.wall:.2f}x | {same} | "
                     f"{dll:.2e} ({n}) | {efficiency_of(o)} |")  # fmt: skip
    lines += ["", "| backend | ours total (s) | lm-eval total (s) | lm-eval / ours |", "|---|---:|---:|---:|"]
    for b in dict.fromkeys(b for _, b, _, _ in table):
        mine = sum(o.wall for _, x, o, _ in table if x == b)
        theirs = sum(lm.wall for _, x, _, lm in table if x == b)
        lines.append(f"| {b} | {mine:.1f} | {theirs:.1f} | {theirs / mine:.2f}x |")
    lines += ["", "Metrics (ours | lm-eval):", ""]
    for t, b, o, lm in table:
        for k in sorted(o.metrics.keys() | lm.metrics.keys()):
            lines.append(f"- {t.label} [{b}] {k}: {o.metrics.get(k)} | {lm.metrics.get(k)}")
    cmd = ["bench/vs_lmeval.py"] + [f"--{k.replace('_', '-')} {v}" for k, v in vars(a).items()
                                    if v not in (None, False) and k not in ("out",)]  # fmt: skip
    lines += ["", f"Command: `.venv/bin/python {' '.join(cmd)}`", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
