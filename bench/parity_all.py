"""Full parity run: every doc of the acceptance set, our plans vs lm-eval 0.4.13's Instances, both routes.

Set: arc_challenge (0- and 25-shot), arc_easy, gsm8k 5-shot, gsm8k_cot_llama (tiny model's chat template,
multiturn), asdiv, mmlu (5 subjects, 5-shot), winogrande 5-shot, boolq, and arc_easy 3-shot single-turn chat
with a system instruction. Routes: ``conf`` (our conf/task configs) and ``lmeval_yaml`` (lm-eval's own YAMLs
via run.include_path + run.tasks). lm-eval runs once, in one subprocess, for every case not already in the
reference cache ($LMEVAL_CACHE/parity); its first full run takes about 6 minutes on 2 cores.

Prints a table of cases × routes with match/mismatch counts and the first differing Instance of each
failing case, and writes ``bench/results/parity.md``. Exit status 1 when anything differs.

    .venv/bin/python bench/parity_all.py [--limit N] [--only arc_challenge,mmlu] [--routes conf,lmeval_yaml]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.compile import machine  # noqa: E402
from tests.parity.compare import ROUTES, first_diffs, parity_cases, run_cases, table  # noqa: E402
from tests.parity.lmeval_reference import default_data_dir, lmeval_version  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=None, help="docs per task (default: all)")
    ap.add_argument("--only", default="", help="comma-separated case name prefixes")
    ap.add_argument("--routes", default=",".join(ROUTES))
    ap.add_argument("--data-dir", type=Path, default=None)
    ap.add_argument("--no-cache", action="store_true", help="rebuild lm-eval's side even if cached")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "parity.md")
    args = ap.parse_args(argv)

    from lmeval.common.tinymodel import ensure_tiny_model

    cases = parity_cases(args.limit, str(ensure_tiny_model()))
    if args.only:
        prefixes = tuple(args.only.split(","))
        cases = [c for c in cases if c.name.startswith(prefixes)]
    data = (args.data_dir or default_data_dir()).resolve()
    t0 = time.perf_counter()
    outcomes, refs = run_cases(cases, args.routes.split(","), data_dir=data, use_cache=not args.no_cache)
    dt = time.perf_counter() - t0

    n_ok = sum(o.ok for o in outcomes)
    cached = sum(r.cached for r in refs)
    head = (
        f"# Parity with lm-eval {lmeval_version()}: Instances field for field, byte for byte\n\n"
        f"Command: `.venv/bin/python bench/parity_all.py"
        f"{f' --limit {args.limit}' if args.limit else ''}{f' --only {args.only}' if args.only else ''}` "
        f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; data `{data}`; "
        f"{'all docs' if args.limit is None else f'limit {args.limit}'})  \n"
        f"Machine: {machine()}  \n"
        f"Routes: `conf` = our conf/task configs (`+task=NAME`; an mmlu subject as `run.tasks=[mmlu_SUBJECT]`, "
        f"a member of conf/task's mmlu group); `lmeval_yaml` = lm-eval's own task YAMLs "
        f"via `run.include_path=<lm_eval/tasks/DIR> run.tasks=[NAME]`.  \n"
        f"Compared per Instance (keyed by task, doc_id, idx): request_type, context, continuation or "
        f"generation kwargs, repeats.  \n"
        f"Result: {n_ok}/{len(outcomes)} case×route comparisons identical; {dt:.0f} s "
        f"({cached}/{len(refs)} lm-eval references from cache).\n"
    )
    notes = "\n".join(f"- {c.name}: {c.note}" for c in cases if c.note)
    diffs = first_diffs(outcomes)
    text = head + "\n" + table(outcomes) + "\n"
    if notes:
        text += "\nNotes:\n" + notes + "\n"
    if diffs:
        text += "\n## First differing Instance per case\n\n" + diffs + "\n"
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(args.out)
    return 0 if n_ok == len(outcomes) else 1


if __name__ == "__main__":
    raise SystemExit(main())
