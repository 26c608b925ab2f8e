"""Two chained runs (plans/plan/chain.py: folders with ``chain.json``) compared stage by stage: each stage's plans
diffed as any two plans (``diff_plans``), and the first stage whose prompts differ named with its turn, task and
document. A stage's prompts hold every earlier answer, so once one stage differs, later ones usually do too: the
first is the one that says why."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from lmeval.diff.compare import diff_plans
from lmeval.diff.model import DiffReport
from lmeval.diff.render import render_text
from lmeval.plans import InstanceRecord, PlanReader, open_chain, plan_turn, read_header


@dataclass
class StageDiff:
    stage: int  # 1-based position in the chain
    turn: int
    status: str  # identical | differ | prompts (prompts differ) | old-only | new-only
    report: DiffReport | None = None


@dataclass
class ChainDiff:
    old: str
    new: str
    stages: list[StageDiff] = field(default_factory=list)
    first: dict[str, Any] | None = None  # {stage, turn, task, doc_id}: where prompts first differ

    @property
    def identical(self) -> bool:
        return all(s.status == "identical" for s in self.stages)

    def summary(self) -> str:
        if self.identical:
            return f"identical chains: {len(self.stages)} stages"
        if self.first is None:
            odd = next(s for s in self.stages if s.status != "identical")
            return f"chains differ from stage {odd.stage} (turn {odd.turn}): {odd.status}; no prompt differs"
        f = self.first
        return f"prompts first differ at stage {f['stage']} (turn {f['turn']}): task {f['task']}, doc {f['doc_id']}"

    def to_json(self) -> str:
        return json.dumps(
            {
                "old": self.old,
                "new": self.new,
                "identical": self.identical,
                "first": self.first,
                "summary": self.summary(),
                "stages": [
                    {
                        "stage": s.stage,
                        "turn": s.turn,
                        "status": s.status,
                        "report": s.report.to_dict() if s.report else None,
                    }
                    for s in self.stages
                ],
            },
            indent=2,
            ensure_ascii=False,
            default=str,
        )


def diff_chains(
    old: str | os.PathLike[str],
    new: str | os.PathLike[str],
    show: int = 5,
    task: str | None = None,
    verify: bool = True,
) -> ChainDiff:
    """Compare two chained runs stage by stage (stages paired by position), each stage's plan first checked to
    be its chain's (``plans.open_chain``)."""
    ca, cb = open_chain(old), open_chain(new)
    a, b = ca.chain, cb.chain
    out = ChainDiff(str(old), str(new))
    for k in range(max(len(a.stages), len(b.stages))):
        sa = a.stages[k] if k < len(a.stages) else None
        sb = b.stages[k] if k < len(b.stages) else None
        if sa is None or sb is None:
            s = sa or sb
            assert s is not None
            out.stages.append(StageDiff(k + 1, s.turn, "old-only" if sb is None else "new-only"))
            continue
        pa, pb = ca.plans[k], cb.plans[k]
        turn = plan_turn(read_header(pb).config)
        report = diff_plans(pa, pb, show=show, task=task, verify=verify)
        first = None if report.identical else first_context_change(pa, pb, task)
        status = "identical" if report.identical else ("prompts" if first else "differ")
        out.stages.append(StageDiff(k + 1, turn, status, report))
        if first is not None and out.first is None:
            out.first = {"stage": k + 1, "turn": turn, "task": first[0], "doc_id": first[1]}
    return out


def first_context_change(
    old: str | os.PathLike[str], new: str | os.PathLike[str], task: str | None = None
) -> tuple[str, int] | None:
    """The first (task, doc_id), in the new plan's order, whose prompt (an Instance's context) differs from the
    old plan's, or that only one plan asks; None when every prompt is the same (generation settings, token ids or
    scoring may still differ: those are no prompt change)."""
    from fnmatch import fnmatchcase

    def wanted(name: str) -> bool:
        return task is None or fnmatchcase(name, task)

    with PlanReader(old) as r:
        before = {(i.task, i.doc_id, i.idx): i.context for i in _instances(r) if wanted(i.task)}
    seen: set[tuple[str, int, int]] = set()
    with PlanReader(new) as r:
        for i in _instances(r):
            key = (i.task, i.doc_id, i.idx)
            if not wanted(i.task):
                continue
            seen.add(key)
            if before.get(key) != i.context:
                return i.task, i.doc_id
    gone = [k for k in before if k not in seen]
    return (gone[0][0], gone[0][1]) if gone else None


def _instances(reader: PlanReader) -> Iterator[InstanceRecord]:
    for rec in reader:
        if isinstance(rec, InstanceRecord):
            yield rec


def render_chain(d: ChainDiff) -> str:
    """Each stage's status, then the full diff of the first stage whose prompts differ."""
    lines = [f"old: {d.old}", f"new: {d.new}", ""]
    for s in d.stages:
        r = s.report
        hashes = f" (plan {r.old_plan_hash[:12]} → {r.new_plan_hash[:12]})" if r is not None else ""
        what = {
            "identical": "identical",
            "prompts": "prompts differ",
            "differ": "plans differ, prompts equal",
            "old-only": "only in old",
            "new-only": "only in new",
        }
        lines.append(f"stage {s.stage} (turn {s.turn}): {what[s.status]}{hashes}")
    if d.first is not None:
        first = next(s for s in d.stages if s.stage == d.first["stage"])
        assert first.report is not None
        lines += ["", f"── stage {first.stage} (turn {first.turn}) ──", render_text(first.report)]
    lines += ["", d.summary()]
    return "\n".join(lines)
