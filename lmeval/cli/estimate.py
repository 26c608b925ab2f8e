"""``lmeval show PLAN --estimate`` and ``lmeval run --dry-run``: the bill before the run (executor/estimate.py),
timed at a given rate or on a calibration slice of the plan (executor/calibrate.py), priced with ``show --cost``'s
prices (executor/cost.py)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from lmeval.plans import InstanceRecord, PlanHeader, PlanReader, UserError

if TYPE_CHECKING:
    from lmeval.executor import Rates, StoredLookup, TokenEstimate


def stored_lookup(plan_path: str, header: PlanHeader, overrides: Sequence[str]) -> StoredLookup:
    """THE seam to the result store (#63 items 1-3): the lookup of the answers already stored for the model a run
    of ``plan_path`` with ``overrides`` would use (the store's ``stored_request_ids`` under that run's model key),
    given one Instance per distinct request, answering their instance ids. Until the store is there, nothing is
    stored."""
    from lmeval.executor import no_store

    return no_store


def check_estimate_args(args: argparse.Namespace) -> None:
    if args.tokens_per_s is not None and not args.tokens_per_s > 0:
        raise UserError(f"--tokens-per-s {args.tokens_per_s}: must be a positive number")
    if args.slice_docs < 1:
        raise UserError(f"--slice-docs {args.slice_docs}: must be at least 1")


def estimate_plan(
    plan_path: str,
    header: PlanHeader,
    instances: Sequence[InstanceRecord],
    args: argparse.Namespace,
    overrides: Sequence[str],
    calibrate: bool,
) -> tuple[TokenEstimate, Rates | None, list[str]]:
    """The estimate of ``instances`` on the model ``overrides`` pick, its rates (given, calibrated on that model
    when ``calibrate``, or none) and the lines that say how."""
    from lmeval import executor

    check_estimate_args(args)
    notes: list[str] = []
    rates: Rates | None = None
    block = executor.block_size_of(header, executor.on_gpu())
    if args.tokens_per_s is not None:
        rates = executor.Rates(args.tokens_per_s, None, "given")
    elif calibrate:
        sliced, block = executor.run_slice(plan_path, list(overrides), args.slice_docs)
        try:
            rates = executor.rates_of(sliced)
        except ValueError as e:
            raise UserError(f"{plan_path}: {e}") from None
        notes.append(
            f"calibration         {sliced.docs} documents, {sliced.estimate.to_compute} tokens to compute (the "
            f"engine counted {sliced.computed_tokens}) in {(sliced.scoring_ms + sliced.generation_ms) / 1000:.1f}s "
            f"(engine start {sliced.load_s:.1f}s, not in the time above)"
        )
    stored = stored_lookup(plan_path, header, overrides)
    est = executor.estimate_tokens(header, instances, stored, block)
    if rates is None:
        notes.append("time                --tokens-per-s N, or --estimate model=NAME to time a calibration slice")
    return est, rates, notes


def print_estimate(
    plan_path: str, reader: PlanReader, args: argparse.Namespace, overrides: Sequence[str], calibrate: bool
) -> int:
    """Print the estimate of the plan ``reader`` reads (``args.task``: that task's Instances only) on the model
    ``overrides`` pick (a calibration slice on it when ``calibrate``)."""
    from lmeval import executor

    header = reader.header
    task = getattr(args, "task", None)
    records = reader.records(task=task) if task else reader
    instances = [r for r in records if isinstance(r, InstanceRecord)]  # a full pass: verifies the plan
    est, rates, notes = estimate_plan(plan_path, header, instances, args, overrides, calibrate)
    out = sys.stdout
    out.write(f"estimate of {plan_path} ({header.plan_hash[:12]}, model {header.model.name})\n")
    for line in [*executor.estimate_lines(est, rates), *notes]:
        out.write(line + "\n")
    pin, pout = getattr(args, "price_in", None), getattr(args, "price_out", None)
    if pin is not None or pout is not None:
        firsts: dict[str, InstanceRecord] = {}
        for i in instances:
            firsts.setdefault(executor.request_key(i), i)
        stored = stored_lookup(plan_path, header, overrides)(list(firsts.values()))
        out.write(executor.price_line(header, instances, stored, pin, pout) + "\n")
    return 0
