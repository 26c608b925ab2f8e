"""End to end: lmeval compile -> execute (hf backend) -> score vs ``lm_eval`` with ``--model hf`` on the tiny model.

    cd /work/main && .venv/bin/python tests/scorer/e2e_vs_lmeval.py [--limit-arc 20] [--limit-gsm 3]

Both sides evaluate arc_easy (0-shot) and gsm8k (5-shot, strict-match and flexible-extract) on the project's
tiny model (``lmeval.common.tinymodel.ensure_tiny_model``) on CPU; the script prints every aggregate side by side and
exits 1 if any differs by more than ``--tol`` (default 1e-6: both sides run the same HF weights, but batch
composition can move log-likelihoods by ~1e-5, which can flip a near-tie; see docs/lm-eval-parity.md). It
takes a few minutes (two model loads, gsm8k generation).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))


def lmeval_side(out: Path, limits: dict[str, int]) -> dict[str, Any]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    data = os.environ.get("LMEVAL_DATA_DIR", str((REPO / ".." / "shared" / "data").resolve()))
    exe = str(REPO / ".venv" / "bin" / "lmeval")
    results: dict[str, Any] = {}
    for task, limit in limits.items():
        plan = out / f"{task}.msgpack"
        rdir = out / f"{task}-results"
        subprocess.run(
            [
                exe,
                "compile",
                f"+task={task}",
                "model=tiny",
                f"run.data_dir={data}",
                f"run.limit={limit}",
                "--out",
                str(plan),
            ],
            check=True,
            env=env,
        )
        subprocess.run(
            [exe, "execute", str(plan), "model.backend=hf", "--out", str(rdir), "--no-progress"], check=True, env=env
        )
        subprocess.run([exe, "score", str(rdir), "--quiet"], check=True, env=env)
        res = json.loads((rdir / "results.json").read_text())
        results.update(res["results"])
    return results


def lm_eval_side(limits: dict[str, int]) -> dict[str, Any]:
    from tests.scorer import make_golden
    from tests.support import offline_env

    for k, v in offline_env(tempfile.mkdtemp(prefix="lmeval-e2e-hf-")).items():
        os.environ.setdefault(k, v)
    make_golden.patch_datasets()
    cwd = os.getcwd()
    os.chdir(tempfile.mkdtemp(prefix="lmeval-e2e-"))
    try:
        data = make_golden.run("tiny", limits)
    finally:
        os.chdir(cwd)
    return dict(data["lm_eval_results"]["results"])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit-arc", type=int, default=20)
    ap.add_argument("--limit-gsm", type=int, default=3)
    ap.add_argument("--tol", type=float, default=1e-6)
    args = ap.parse_args()
    limits = {"arc_easy": args.limit_arc, "gsm8k": args.limit_gsm}
    with tempfile.TemporaryDirectory(prefix="lmeval-e2e-") as tmp:
        ours = lmeval_side(Path(tmp), limits)
    theirs = lm_eval_side(limits)
    bad = 0
    print(f"{'task':10} {'metric':32} {'lmeval':>12} {'lm_eval':>12}")
    for task in limits:
        for key, v in sorted(theirs[task].items()):
            if "," not in key:
                continue
            o = ours.get(task, {}).get(key)
            same = isinstance(v, (int, float)) and isinstance(o, (int, float)) and abs(o - v) <= args.tol
            same = same or o == v
            bad += not same
            print(f"{task:10} {key:32} {o!s:>12.12} {v!s:>12.12} {'' if same else '  <-- differs'}")
    print("all aggregates equal" if not bad else f"{bad} aggregates differ")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
