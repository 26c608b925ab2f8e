"""``lmeval diff``'s library: what changed between two plans, prompt by prompt, and why.

    from lmeval.diff import diff_plans, render_text

    report = diff_plans("old.msgpack", "new.msgpack", show=5)  # a DiffReport: plain data, JSON-ready
    print(render_text(report))  # or report.to_json()

Plans are read and their hashes checked through the contract (``lmeval.plans.plan.io.PlanReader``,
``lmeval.plans.plan.integrity``). These names are the package's public face; its modules are: ``compare``
(``diff_plans``), ``runs`` (two scored runs compared: ``compare_runs``), ``tasks`` (one task compared doc by doc),
``chains`` (two chained runs, stage by stage: ``diff_chains``), ``docs`` (a task's documents of both plans joined
by doc_id), ``changes`` (config differences and their causes), ``model`` (the report's types) and ``render`` (text,
whitespace made visible).
"""

from lmeval.diff.chains import ChainDiff, StageDiff, diff_chains, render_chain
from lmeval.diff.changes import cause_of_path, dict_changes
from lmeval.diff.compare import diff_plans
from lmeval.diff.model import CAUSES, CauseStat, Change, DiffReport, PromptDiff, TaskDiff
from lmeval.diff.render import change_line, render_text, short, short_pair, visible_inline, visible_line, visible_lines
from lmeval.diff.runs import Comparison, MetricDelta, print_comparison
from lmeval.diff.runs import compare as compare_runs

__all__ = [
    "CAUSES",
    "ChainDiff",
    "StageDiff",
    "diff_chains",
    "render_chain",
    "CauseStat",
    "Change",
    "Comparison",
    "DiffReport",
    "MetricDelta",
    "PromptDiff",
    "TaskDiff",
    "cause_of_path",
    "change_line",
    "compare_runs",
    "dict_changes",
    "diff_plans",
    "print_comparison",
    "render_text",
    "short",
    "short_pair",
    "visible_inline",
    "visible_line",
    "visible_lines",
]
