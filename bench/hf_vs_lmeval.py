"""The ``hf`` backend against ``lm_eval --model hf``: total wall time from process start to scores, same model.

    .venv/bin/python bench/hf_vs_lmeval.py [--model smollm2] [--subjects 3] [--mmlu-limit 30]
        [--arc-limit 200] [--gsm-limit 10] [--max-gen-toks 256] [--lmeval-batch-size 8] [--batch-size auto]

Tasks (as #36's acceptance): MMLU 5-shot (the first ``--subjects`` of ``lmeval_ref.MMLU_SUBJECTS``, the first
``--mmlu-limit`` test docs each), arc_easy 0-shot (``--arc-limit`` docs), gsm8k 5-shot greedy (``--gsm-limit``
docs, ``max_gen_toks`` ``--max-gen-toks``). lm-eval 0.4.13 runs in one child process (``tests/e2e/lmeval_ref``,
fresh, never its cache: ``HFLM(pretrained=DIR, dtype=float32, device=cpu, batch_size=N)``, its own YAMLs pointed
at the local JSONL files). Ours: one ``lmeval run ... model.backend=hf`` child per task (a limit is global to a
run), so ours pays three process starts and plan compilations to lm-eval's one. Both sides run on the same
converted model folder, one after the other (lm-eval first).

Prints each side's wall and CPU seconds, the speed-up, every aggregate metric of both sides, and per task the
largest per-request |Δ log-likelihood|, flipped docs and differing generations (``tests/e2e/compare``); exit 1
when a metric differs by more than 1e-9 (tests/bounds.py SCORES) without a near-tie flip explaining it (a gap
within what the per-request bound allows, tests/e2e/compare.Flip.tie).
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.bounds import SCORES  # noqa: E402
from tests.e2e import compare as cmp  # noqa: E402
from tests.e2e import lmeval_ref  # noqa: E402
from tests.e2e.ours import OurRun, run_cli  # noqa: E402


def children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="smollm2", help="smollm2 (the preset's converted folder) or a folder")
    ap.add_argument("--subjects", type=int, default=3)
    ap.add_argument("--mmlu-limit", type=int, default=30)
    ap.add_argument("--arc-limit", type=int, default=200)
    ap.add_argument("--gsm-limit", type=int, default=10)
    ap.add_argument("--max-gen-toks", type=int, default=256)
    ap.add_argument("--lmeval-batch-size", type=int, default=8)
    ap.add_argument("--batch-size", default="auto", help="ours: model.batch_size (default auto)")
    ap.add_argument(
        "--cached-lmeval",
        action="store_true",
        help="reuse lm-eval's cached output (its wall time: the cached run's own, from inside its process)",
    )
    ap.add_argument("--skip", default="", help="comma-separated: mmlu, arc_easy, gsm8k")
    a = ap.parse_args()
    if a.model == "smollm2":
        from tests.e2e.realmodel import smollm2_dir

        model = str(smollm2_dir())
    else:
        model = a.model
    skip = set(filter(None, a.skip.split(",")))
    subjects = [f"mmlu_{s}" for s in lmeval_ref.MMLU_SUBJECTS[: a.subjects]] if "mmlu" not in skip else []
    tasks: dict[str, dict[str, int]] = {s: {"limit": a.mmlu_limit, "num_fewshot": 5} for s in subjects}
    if "arc_easy" not in skip:
        tasks["arc_easy"] = {"limit": a.arc_limit, "num_fewshot": 0}
    if "gsm8k" not in skip:
        tasks["gsm8k"] = {"limit": a.gsm_limit, "num_fewshot": 5}
    load0 = os.getloadavg()[0]

    spec = lmeval_ref.make_spec(tasks, {"max_gen_toks": a.max_gen_toks}, batch_size=a.lmeval_batch_size, model=model)
    t, cpu = time.monotonic(), children_cpu()
    ref = lmeval_ref.reference(spec, fresh=not a.cached_lmeval)
    ref_wall, ref_cpu = time.monotonic() - t, children_cpu() - cpu
    if ref["cached"]:
        ref_wall, ref_cpu = float(ref["seconds"]), float("nan")
    print(f"lm-eval hf: {ref_wall:.1f}s wall, {ref_cpu:.1f}s CPU", flush=True)

    data = str(lmeval_ref.data_dir())
    runs: list[tuple[str, list[str], OurRun]] = []
    with tempfile.TemporaryDirectory(prefix="lmeval-hf-bench-") as tmp:
        parts = []
        sides = []
        if subjects:
            sides.append(
                ("mmlu", [f"run.tasks=[{','.join(subjects)}]", f"run.limit={a.mmlu_limit}", "run.num_fewshot=5"])
            )
        if "arc_easy" in tasks:
            sides.append(("arc_easy", ["+task=arc_easy", f"run.limit={a.arc_limit}", "run.num_fewshot=0"]))
        if "gsm8k" in tasks:
            sides.append(
                (
                    "gsm8k",
                    [
                        "+task=gsm8k",
                        f"run.limit={a.gsm_limit}",
                        "run.num_fewshot=5",
                        f"run.gen_kwargs={{max_gen_toks:{a.max_gen_toks}}}",
                    ],
                )
            )
        for name, args in sides:
            full = [*args, f"run.data_dir={data}", f"model.path={model}", "model.backend=hf"]
            if a.batch_size != "auto":
                full.append(f"model.batch_size={a.batch_size}")
            out = Path(tmp) / name
            run = run_cli(full, "hf", out / "results", out / "plan.msgpack")
            runs.append((name, full, run))
            print(f"ours hf {name}: {run.seconds:.1f}s wall, {run.cpu_seconds:.1f}s CPU", flush=True)
            parts.append(cmp.compare(run.out, ref, plan=run.plan))
        comp = cmp.merge(parts)
    ours_wall = sum(r.seconds for _, _, r in runs)
    ours_cpu = sum(r.cpu_seconds for _, _, r in runs)
    print(f"load average at start {load0:.1f}, at end {os.getloadavg()[0]:.1f}")
    print(f"total wall: lm-eval {ref_wall:.1f}s, ours {ours_wall:.1f}s: {ref_wall / ours_wall:.2f}x")
    print(f"total CPU:  lm-eval {ref_cpu:.1f}s, ours {ours_cpu:.1f}s: {ref_cpu / max(ours_cpu, 1e-9):.2f}x")

    rows = cmp.table({"hf": comp})
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for cells in rows:
        print("  ".join(x.ljust(w) for x, w in zip(cells, widths, strict=True)))
    ok = cmp.flips_explained(comp)
    flipped = {(f.task, f.metric) for t in comp.tasks.values() for f in t.flips}
    for agg in comp.rows:
        if agg.diff > SCORES.atol and (agg.task, agg.key.split(",")[0].removesuffix("_stderr")) not in flipped:
            ok = False
            print(f"DIFFERS: {agg.task} {agg.key}: ours {agg.ours} lm-eval {agg.ref}")
    for t, rep in comp.tasks.items():
        prompts = "equal" if not rep.prompt_mismatches else rep.prompt_mismatches[:2]
        line = f"- {t} ({rep.n_docs} docs): prompts {prompts}"
        line += f"; largest per-request |Δll| {rep.max_abs_ll_diff:.3g}; flips {len(rep.flips)}"
        if t == "gsm8k":
            line += (
                f"; generations differing {len(rep.generation_mismatches)} (+{len(rep.special_token_docs)} by "
                f"special tokens only), lm-eval batch run-on docs {len(rep.quirk_docs)}"
            )
        print(line)
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
