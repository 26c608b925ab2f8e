"""``open_chain``: the one way into a chained run (plans/plan/chain.py) for the commands that read one (``lmeval show
ROOT``, ``lmeval diff ROOT_A ROOT_B``). Its ``chain.json`` is read, and each stage's plan verified to belong to
this chain before anything is shown (#64): the stages are turns 1, 2, ... in order; each plan file is the plan its
stage records (``plan_hash``); stage 1's plan has no chain section and stage k+1's names stage k's plan hash and
results hash as its parent (the plan's own record, in its hash); a stage's results folder, where there is one,
holds results of its plan and, once the stage is complete, the answers its ``results_hash`` names. A chain.json
whose stage names another chain's plan fails one of these: a one-line ``PlanError`` naming the chain file, the
stage and the field."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from lmeval.plans.errors import PlanError
from lmeval.plans.plan import (
    CHAIN_FILE,
    Chain,
    Stage,
    chain_answered,
    chain_link,
    read_chain,
    read_header,
    read_plan,
    results_hash,
    stage_plan,
    stage_results,
)
from lmeval.plans.results import MANIFEST, read_manifest, read_results


def _answers_hash(plan: Path, results: Path) -> str | None:
    """``results_hash`` of the answers the results folder ``results`` holds for the stage plan ``plan`` (read
    whole, its hash verified), or None while one is missing."""
    whole = read_plan(plan)
    instances = chain_answered(whole.header.tasks, whole.instances)
    rows = dict(read_results(results).select("instance_id", "response").rows())
    if any(rows.get(i.instance_id) is None for i in instances):
        return None
    return results_hash((i.task, i.doc_id, i.idx, rows[i.instance_id]) for i in instances)


@dataclass(frozen=True)
class OpenChain:
    """A chained run, opened and checked: its record and each stage's plan file, in order."""

    root: Path
    chain: Chain
    plans: list[Path]


def open_chain(root: str | os.PathLike[str]) -> OpenChain:
    """The chain in folder ``root`` with each stage's plan verified to be this chain's (see the module)."""
    chain = read_chain(root)
    where = Path(root) / CHAIN_FILE
    plans: list[Path] = []
    prev: Stage | None = None
    for k, s in enumerate(chain.stages, 1):

        def bad(field: str, why: str, turn: int = s.turn) -> PlanError:
            return PlanError(f"{where}: stage {turn}: {field}: {why}")

        if s.turn != k:
            raise bad("turn", f"is {s.turn} at position {k}; the stages of a chain are turns 1, 2, ... in order")
        path = stage_plan(root, s)
        try:
            header = read_header(path)
            link = chain_link(header.config)
        except PlanError as e:
            raise bad("plan", str(e)) from None
        if header.plan_hash != s.plan_hash:
            raise bad("plan_hash", f"{s.plan_hash[:12]!r}, but its plan {path} is plan {header.plan_hash[:12]}")
        turn = link.turn if link is not None else 1
        if turn != k:
            raise bad("plan", f"{path} is turn {turn} of a chain, not turn {k}")
        if link is not None and prev is not None:
            if link.parent_plan_hash != prev.plan_hash:
                raise bad("plan", f"{path} continues plan {link.parent_plan_hash[:12]}, not stage {k - 1}'s plan "
                                  f"{prev.plan_hash[:12]} (a plan of another chain)")  # fmt: skip
            if link.parent_results_hash != prev.results_hash:
                got, want = (prev.results_hash or "none")[:12], link.parent_results_hash[:12]
                why = f"{got}, but stage {k}'s plan {path} continues results {want} (answers of another run)"
                raise bad("results_hash", why, k - 1)
        results = stage_results(root, s)
        if (results / MANIFEST).exists():
            try:
                ran = read_manifest(results).plan_hash
                held = _answers_hash(path, results) if ran == s.plan_hash and s.results_hash is not None else None
            except PlanError as e:
                raise bad("results", str(e)) from None
            if ran != s.plan_hash:
                raise bad("results", f"{results} holds results of plan {ran[:12]}, not of the stage's plan "
                                     f"{s.plan_hash[:12]}")  # fmt: skip
            if s.results_hash is not None and held != s.results_hash:
                raise bad("results_hash", f"{s.results_hash[:12]!r}, but {results} holds answers "
                                          f"{(held or 'incomplete')[:12]}")  # fmt: skip
        plans.append(path)
        prev = s
    return OpenChain(Path(root), chain, plans)
