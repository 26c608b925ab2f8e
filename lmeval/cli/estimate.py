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
    from lmeval.executor import Rates, TokenEstimate


def stored_ids(
    plan_path: str, header: PlanHeader, firsts: Sequence[InstanceRecord], overrides: Sequence[str], store: str | None
) -> tuple[set[str], str | None]:
    """The instance ids of ``firsts`` (one Instance per distinct request) whose answers the result store ``store``
    (``run.store``; None: the default) holds for the model ``overrides`` pick (the store's ``answered_ids``), and
    a note when the store could not be asked (the model cannot be resolved without overrides, say): then none."""
    from lmeval import executor

    if store == "off":
        return set(), None
    try:
        return executor.answered_ids(plan_path, header, firsts, overrides, store), None
    except UserError as e:
        return set(), f"stored              not looked up ({e})"


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
    stored: set[str],
) -> tuple[TokenEstimate, Rates | None, list[str]]:
    """The estimate of ``instances`` on the model ``overrides`` pick (``stored``: the instance ids the result store
    answers), its rates (given, calibrated on that model when ``calibrate``, or none) and the lines that say how."""
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
    est = executor.estimate_tokens(header, instances, lambda firsts: stored, block)
    if rates is None:
        notes.append("time                --tokens-per-s N, or --estimate model=NAME to time a calibration slice")
    return est, rates, notes


def print_estimate(
    plan_path: str,
    reader: PlanReader,
    args: argparse.Namespace,
    overrides: Sequence[str],
    calibrate: bool,
    store: str | None = None,
) -> int:
    """Print the estimate of the plan ``reader`` reads (``args.task``: that task's Instances only) on the model
    ``overrides`` pick (a calibration slice on it when ``calibrate``), with the answers the result store ``store``
    holds for it."""
    from lmeval import executor

    header = reader.header
    task = getattr(args, "task", None)
    records = reader.records(task=task) if task else reader
    instances = [r for r in records if isinstance(r, InstanceRecord)]  # a full pass: verifies the plan
    firsts: dict[str, InstanceRecord] = {}
    for i in instances:
        firsts.setdefault(executor.request_key(i), i)
    stored, note = stored_ids(plan_path, header, list(firsts.values()), overrides, store)
    est, rates, notes = estimate_plan(plan_path, header, instances, args, overrides, calibrate, stored)
    notes += [note] if note else []
    out = sys.stdout
    out.write(f"estimate of {plan_path} ({header.plan_hash[:12]}, model {header.model.name})\n")
    for line in [*executor.estimate_lines(est, rates), *notes]:
        out.write(line + "\n")
    pin, pout = getattr(args, "price_in", None), getattr(args, "price_out", None)
    if pin is not None or pout is not None:
        out.write(executor.price_line(header, instances, stored, pin, pout) + "\n")
    return 0
