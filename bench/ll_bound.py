"""The per-request bound against lm-eval, measured on this CPU: lmeval (vLLM, float32) vs ``lm_eval --model hf``.

    .venv/bin/python bench/ll_bound.py [--limit 120] [--subjects 6] [--mmlu-limit 30] [--lmeval-batch-size 8]
        [--avx2] [--cached-lmeval] [--min-requests 2000] [--out bench/results/ll-bound-KIND.md]

Tasks: arc_easy, arc_challenge, winogrande and boolq 0-shot (the first ``--limit`` documents each), MMLU 5-shot
(the first ``--subjects`` of ``tests/e2e/lmeval_ref.MMLU_SUBJECTS``, the first ``--mmlu-limit`` test documents
each): more than 2,000 loglikelihood requests at the defaults. lm-eval 0.4.13 runs its own YAMLs pointed at the
local JSONL files (``tests/e2e/lmeval_ref``, fresh: ``HFLM(pretrained=DIR, dtype=float32, device=cpu,
batch_size=N)``); ours runs ``lmeval run ... model.backend=vllm model.dtype=float32`` on the same converted
SmolLM2-135M-Instruct folder (what ``model=smollm2`` runs), two runs (0-shot tasks, MMLU). ``--avx2`` runs ours
with AVX2 kernels forced (``tests/kernelpath``); ``--cached-lmeval`` reuses lm-eval's output of an earlier run
with the same sizes (``tests/e2e/lmeval_ref``'s cache, keyed by the model, data and settings).

Prints the CPU (model name and vector flags), the load, and per task and overall the number of requests, the
largest absolute and relative |Δ log-likelihood| and the largest ratio of |Δ| to the stated bound
(``tests/bounds.py``: ``VS_LM_EVAL``), with the worst request; flips and metric differences. Writes the
report to ``bench/results/ll-bound-<kind>.md`` (kind: the CPU's widest vector flag, ``-avx2`` added when
forced). Exit 1 when a request lies outside the bound divided by its margin (``bounds.MARGIN``), a metric
differs without a near-tie flip explaining it, or fewer than ``--min-requests`` requests were compared.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from machine_info import cpu_flags, cpu_model  # noqa: E402  (bench/ is sys.path[0])

from tests.bounds import MARGIN, SCORES, VS_LM_EVAL  # noqa: E402
from tests.e2e import compare as cmp  # noqa: E402
from tests.e2e import lmeval_ref  # noqa: E402
from tests.e2e.ours import AVX2_ENV, run_cli  # noqa: E402

ZERO_SHOT = ("arc_easy", "arc_challenge", "winogrande", "boolq")


@dataclass
class Worst:
    """The largest differences over a set of requests (``ours``, ``ref``: lm-eval's)."""

    n: int = 0
    abs_diff: float = 0.0
    rel_diff: float = 0.0
    ratio: float = 0.0  # |diff| / VS_LM_EVAL.bound(ref)
    at: tuple[str, float, float] = ("", 0.0, 0.0)  # task, ours, ref of the largest ratio

    def add(self, task: str, pairs: list[tuple[float, float]]) -> None:
        for a, b in pairs:
            d = abs(a - b)
            self.n += 1
            self.abs_diff = max(self.abs_diff, d)
            self.rel_diff = max(self.rel_diff, d / max(abs(b), 1e-12))
            r = d / VS_LM_EVAL.bound(b)
            if r > self.ratio:
                self.ratio, self.at = r, (task, a, b)

    def line(self, label: str) -> str:
        task, a, b = self.at
        return (
            f"| {label} | {self.n} | {self.abs_diff:.3g} | {self.rel_diff:.3g} | {self.ratio:.3f} | "
            f"{task}: ours {a:.6f}, lm-eval {b:.6f} |"
        )


def kind(flags: str) -> str:
    """The widest vector flag of this CPU (what picks the kernels): amx, avx512_bf16, avx512f or avx2."""
    have = flags.split()
    for k in ("amx_tile", "avx512_bf16", "avx512f", "avx2"):
        if k in have:
            return k.removesuffix("_tile")
    return "other"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="smollm2", help="smollm2 (the preset's converted folder) or a folder")
    ap.add_argument("--limit", type=int, default=120, help="documents of each 0-shot task")
    ap.add_argument("--subjects", type=int, default=6)
    ap.add_argument("--mmlu-limit", type=int, default=30)
    ap.add_argument("--lmeval-batch-size", type=int, default=8)
    ap.add_argument("--avx2", action="store_true", help="ours with AVX2 kernels forced (tests/kernelpath)")
    ap.add_argument("--cached-lmeval", action="store_true", help="reuse lm-eval's cached output of these sizes")
    ap.add_argument("--min-requests", type=int, default=2000)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    if a.model == "smollm2":
        from tests.e2e.realmodel import smollm2_dir

        model = str(smollm2_dir())
    else:
        model = a.model
    flags = cpu_flags()
    label = kind(flags) + ("-avx2" if a.avx2 else "")
    load0 = os.getloadavg()
    print(f"CPU: {cpu_model()}; flags: {flags}; {os.cpu_count()} cores; load {load0[0]:.1f}", flush=True)
    subjects = [f"mmlu_{s}" for s in lmeval_ref.MMLU_SUBJECTS[: a.subjects]]
    tasks = {t: {"limit": a.limit, "num_fewshot": 0} for t in ZERO_SHOT}
    tasks.update({s: {"limit": a.mmlu_limit, "num_fewshot": 5} for s in subjects})

    t = time.monotonic()
    spec = lmeval_ref.make_spec(tasks, batch_size=a.lmeval_batch_size, model=model)
    ref = lmeval_ref.reference(spec, fresh=not a.cached_lmeval)
    ref_wall = float(ref.get("seconds") or 0.0) if ref["cached"] else time.monotonic() - t
    cached = " (cached: the wall of the run that made it)" if ref["cached"] else ""
    print(f"lm-eval hf (batch size {a.lmeval_batch_size}): {ref_wall:.0f}s wall{cached}", flush=True)

    data = str(lmeval_ref.data_dir())
    common = [f"run.data_dir={data}", f"model.path={model}", "model.backend=vllm", "model.dtype=float32"]
    sides = [
        ("zero-shot", [f"+task=[{','.join(ZERO_SHOT)}]", f"run.limit={a.limit}", "run.num_fewshot=0"]),
        ("mmlu", [f"run.tasks=[{','.join(subjects)}]", f"run.limit={a.mmlu_limit}", "run.num_fewshot=5"]),
    ]
    parts, ours_wall = [], 0.0
    with tempfile.TemporaryDirectory(prefix="lmeval-ll-bound-") as tmp:
        for name, args in sides:
            out = Path(tmp) / name
            run = run_cli(
                [*args, *common], "vllm", out / "results", out / "plan.msgpack", env_extra=AVX2_ENV if a.avx2 else None
            )
            ours_wall += run.seconds
            print(f"ours vllm {name}: {run.seconds:.0f}s wall", flush=True)
            parts.append(cmp.compare(run.out, ref, plan=run.plan))
        comp = cmp.merge(parts)
    load1 = os.getloadavg()

    overall, by_task = Worst(), {}
    for task, rep in sorted(comp.tasks.items()):
        w = by_task.setdefault("mmlu 5-shot" if task.startswith("mmlu_") else task, Worst())
        w.add(task, rep.ll_pairs)
        overall.add(task, rep.ll_pairs)
    flips = [f for rep in comp.tasks.values() for f in rep.flips]
    flipped = {(f.task, f.metric) for f in flips}
    differ = [r for r in comp.rows if r.ours is None or r.ref is None or not SCORES.close(r.ours, r.ref)]
    unexplained = [r for r in differ if (r.task, r.key.split(",")[0].removesuffix("_stderr")) not in flipped]
    prompts = sum(len(rep.prompt_mismatches) for rep in comp.tasks.values())

    lines = [
        "# The per-request bound against lm-eval, measured (bench/ll_bound.py)",
        "",
        f"CPU: `{cpu_model()}`; vector flags: `{flags}`; {os.cpu_count()} cores; our kernels: "
        f"{'AVX2 forced (tests/kernelpath)' if a.avx2 else 'native'}. Load average at start "
        f"{load0[0]:.1f} / {load0[1]:.1f} / {load0[2]:.1f}, at end {load1[0]:.1f} / {load1[1]:.1f} / {load1[2]:.1f}.",
        "",
        f"lmeval (vLLM, float32) vs `lm_eval --model hf` 0.4.13 (float32, batch size {a.lmeval_batch_size}) on "
        f"`{Path(model).name}`; 0-shot tasks {a.limit} documents each, MMLU 5-shot {len(subjects)} subjects x "
        f"{a.mmlu_limit} documents. Walls: lm-eval {ref_wall:.0f} s, ours {ours_wall:.0f} s.",
        "",
        f"Stated bound (`tests/bounds.py` VS_LM_EVAL): max({VS_LM_EVAL.atol:g}, {VS_LM_EVAL.rtol:g}·|ll|); the "
        f"bound keeps a {MARGIN:g}x margin when the largest |Δ| / bound is at most {1 / MARGIN:.2f}.",
        "",
        "| task | requests | largest abs diff | largest relative | largest diff / bound | that request |",
        "|---|---:|---:|---:|---:|---|",
        *[w.line(k) for k, w in by_task.items()],
        overall.line("**all**"),
        "",
        f"Prompts differing: {prompts}. Metrics outside 1e-9: {len(differ)} "
        f"({len(unexplained)} not explained by a near-tie flip). Flips: {len(flips)}"
        + "".join(
            f"\n- {f.task} doc {f.doc_id} {f.metric}: gaps {f.ours_gap:.3g} / {f.ref_gap:.3g}, "
            f"tie bound {f.bound:.3g} ({'tie' if f.tie else 'NOT a tie'})"
            for f in flips
        ),  # fmt: skip
        "",
        "Command: `.venv/bin/python bench/ll_bound.py " + " ".join(sys.argv[1:]) + "`",
        "",
    ]
    report = "\n".join(lines)
    print(report)
    out = Path(a.out or REPO / "bench" / "results" / f"ll-bound-{label}.md")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(report)
    ok = overall.ratio <= 1 / MARGIN and not unexplained and not prompts and all(f.tie for f in flips)
    if overall.n < a.min_requests:
        print(f"only {overall.n} requests compared (at least {a.min_requests} asked)")
        ok = False
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
