"""``lmeval log RESULTS_DIR --to wandb|trackio|mlflow [--project P] [--name N] [--dir DIR]``: a scored run logged
to experiment trackers (``lmeval score ... --log-to`` does the same right after scoring)."""

from __future__ import annotations

import argparse
from typing import Any

# report.trackers.TRACKERS (kept here so --help needs no import; tests check they agree)
TRACKER_NAMES = ("wandb", "trackio", "mlflow")
WHAT = (
    "results table (task, filter, metric, value, stderr), per-task metrics (arc_easy/acc,none), the run's "
    "provenance as config (plan hash, model, lmeval version) and the samples as a table"
)


def add_tracker_args(p: argparse.ArgumentParser, prefix: str) -> None:
    """``--{prefix}project``, ``--{prefix}name`` and ``--{prefix}dir`` (``lmeval log``: no prefix; score: log-)."""
    p.add_argument(
        f"--{prefix}project", default="lmeval", help="W&B/Trackio project, MLflow experiment (default lmeval)"
    )
    p.add_argument(
        f"--{prefix}name", default=None, help="the tracker run's name (default: results folder name + plan hash)"
    )
    p.add_argument(
        f"--{prefix}dir",
        default=None,
        metavar="DIR",
        help="where the offline stores go, DIR/<tracker> (default RESULTS/trackers); WANDB_MODE, TRACKIO_DIR "
        "and MLFLOW_TRACKING_URI, when set, take precedence",
    )


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "log",
        help="log a scored run to experiment trackers (W&B, Trackio, MLflow; offline by default)",
        description=f"Log a scored results directory to experiment trackers through their own libraries: the {WHAT}. "
        "Offline by default: W&B offline mode (`wandb sync` uploads), Trackio's local store, an MLflow file "
        "store, each under RESULTS/trackers/<tracker>. The scored run itself is only read.",
    )
    p.add_argument("results", metavar="RESULTS_DIR", help="a scored results directory (lmeval score)")
    p.add_argument(
        "--to",
        action="append",
        required=True,
        metavar="TRACKER",
        help=f"{'|'.join(TRACKER_NAMES)} (repeatable, or a comma list)",
    )
    add_tracker_args(p, "")
    p.set_defaults(func=run)


def log_to(results: str, values: list[str], project: str, name: str | None, store: str | None) -> None:
    """Log ``results`` to the trackers named in ``values``; print one line per tracker."""
    from lmeval.report import LogTarget, log_run, parse_trackers

    for line in log_run(results, parse_trackers(values), LogTarget(project, name, store)):
        print(line)


def run(args: argparse.Namespace) -> int:
    log_to(args.results, args.to, args.project, args.name, args.dir)
    return 0
