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

from lmeval.common import face_names
from lmeval.diff.chains import ChainDiff as ChainDiff
from lmeval.diff.chains import StageDiff as StageDiff
from lmeval.diff.chains import diff_chains as diff_chains
from lmeval.diff.chains import render_chain as render_chain
from lmeval.diff.changes import cause_of_path as cause_of_path
from lmeval.diff.changes import dict_changes as dict_changes
from lmeval.diff.compare import diff_plans as diff_plans
from lmeval.diff.model import CAUSES as CAUSES
from lmeval.diff.model import CauseStat as CauseStat
from lmeval.diff.model import Change as Change
from lmeval.diff.model import DiffReport as DiffReport
from lmeval.diff.model import PromptDiff as PromptDiff
from lmeval.diff.model import TaskDiff as TaskDiff
from lmeval.diff.render import change_line as change_line
from lmeval.diff.render import render_text as render_text
from lmeval.diff.render import short as short
from lmeval.diff.render import short_pair as short_pair
from lmeval.diff.render import visible_inline as visible_inline
from lmeval.diff.render import visible_line as visible_line
from lmeval.diff.render import visible_lines as visible_lines
from lmeval.diff.runs import Comparison as Comparison
from lmeval.diff.runs import MetricDelta as MetricDelta
from lmeval.diff.runs import compare as compare_runs  # noqa: F401 (a renamed export, read by lazyface)
from lmeval.diff.runs import print_comparison as print_comparison

__all__ = face_names(__name__)
