"""``lmeval trajectories RESULTS``: per-step and per-trajectory scores of recorded conversations
(``+task=trajectory``; scorer/trajectories.py)."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "trajectories",
        help="per-step and per-trajectory log-likelihoods of a run of recorded conversations (+task=trajectory)",
    )
    p.add_argument("results", help="the run's results directory")
    p.add_argument("--steps", action="store_true", help="also print every step's score")
    p.add_argument("--json", action="store_true", help="print {steps, trajectories} as JSON instead of a table")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from lmeval.scorer import step_scores, trajectory_scores

    steps = step_scores(args.results)
    trajs = trajectory_scores(steps)
    out = sys.stdout
    if args.json:
        data = {"steps": [asdict(s) for s in steps], "trajectories": [t.to_dict() for t in trajs]}
        out.write(json.dumps(data, indent=1) + "\n")
        return 0
    out.write(f"{'task':<16} {'trajectory':<24} {'steps':>5} {'loglik':>12} {'tokens':>7} {'per token':>10} greedy\n")
    for t in trajs:
        out.write(
            f"{t.task:<16} {t.trajectory[:24]:<24} {t.steps:>5} {t.loglikelihood:>12.4f} {t.n_tokens:>7} "
            f"{t.loglikelihood_per_token:>10.4f} {t.greedy:.3f}\n"
        )
    if args.steps:
        out.write(f"\n{'trajectory':<24} {'step':>4} {'doc':>5} {'loglik':>12} {'tokens':>7} greedy\n")
        for s in steps:
            out.write(
                f"{s.trajectory[:24]:<24} {s.step:>4} {s.doc_id:>5} {s.loglikelihood:>12.4f} {s.n_tokens:>7} "
                f"{'yes' if s.is_greedy else 'no'}\n"
            )
    return 0
