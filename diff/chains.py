"""Two chained runs (plans/chain.py: folders with ``chain.json``) compared stage by stage: each stage's plans
diffed as any two plans (``diff_plans``), and the first stage whose prompts differ named with its turn, task and
document. A stage's prompts hold every earlier answer, so once one stage differs, later ones usually do too: the
first is the one that says why."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from lmeval.diff.compare import diff_plans
from lmeval.diff.model import DiffReport
from lmeval.diff.render import render_text
from lmeval.plans import plan_turn, read_chain, read_header, stage_plan


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
        return (f"prompts first differ at stage {f['stage']} (turn {f['turn']}): task {f['task']}, "
                f"doc {f['doc_id']}")  # fmt: skip

    def to_json(self) -> str:
        return json.dumps({"old": self.old, "new": self.new, "identical": self.identical, "first": self.first,
                           "summary": self.summary(),
                           "stages": [{"stage": s.stage, "turn": s.turn, "status": s.status,
                                       "report": s.report.to_dict() if s.report else None}
                                      for s in self.stages]}, indent=2, ensure_ascii=False, default=str)  # fmt: skip


def diff_chains(
    old: str | os.PathLike[str],
    new: str | os.PathLike[str],
    show: int = 5,
    task: str | None = None,
    verify: bool = True,
) -> ChainDiff:
    """Compare two chained runs stage by stage (stages paired by position)."""
    a, b = read_chain(old), read_chain(new)
    out = ChainDiff(str(old), str(new))
    for k in range(max(len(a.stages), len(b.stages))):
        sa = a.stages[k] if k < len(a.stages) else None
        sb = b.stages[k] if k < len(b.stages) else None
        if sa is None or sb is None:
            s = sa or sb
            assert s is not None
            out.stages.append(StageDiff(k + 1, s.turn, "old-only" if sb is None else "new-only"))
            continue
        pa, pb = stage_plan(old, sa), stage_plan(new, sb)
        turn = plan_turn(read_header(pb).config)
        report = diff_plans(pa, pb, show=max(1, show), task=task, verify=verify)
        status = "identical" if report.identical else ("prompts" if report.prompts_total else "differ")
        out.stages.append(StageDiff(k + 1, turn, status, report))
        if status == "prompts" and out.first is None and report.prompts:
            p = report.prompts[0]
            out.first = {"stage": k + 1, "turn": turn, "task": p.task, "doc_id": p.doc_id}
    return out


def render_chain(d: ChainDiff) -> str:
    """Each stage's status, then the full diff of the first stage whose prompts differ."""
    lines = [f"old: {d.old}", f"new: {d.new}", ""]
    for s in d.stages:
        r = s.report
        hashes = f" (plan {r.old_plan_hash[:12]} → {r.new_plan_hash[:12]})" if r is not None else ""
        what = {
            "identical": "identical",
            "prompts": f"{r.prompts_total if r else 0} prompts differ",
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
