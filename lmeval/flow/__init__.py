"""Staged runs outside the CLI (#60 item 2, begun by #62): a judge's grades written back into the run it judged
(``grading``: what ``lmeval judge-score`` runs), two judges' agreement on the same answers (``agreement``:
``lmeval compare JUDGE_A JUDGE_B``), and ``lmeval run``'s judge path (``judged``: a judge-graded task's
judge plans compiled, executed and graded per stage, FastChat's MT-Bench summary written as the task's metrics).
It drives the stages (compiler, executor, scorer) through their faces; no stage imports it."""

from lmeval.flow.agreement import Agreement as Agreement
from lmeval.flow.agreement import is_judge_run as is_judge_run
from lmeval.flow.agreement import judge_agreement as judge_agreement
from lmeval.flow.grading import grade_into as grade_into
from lmeval.flow.judged import JudgeChoice as JudgeChoice
from lmeval.flow.judged import RunStage as RunStage
from lmeval.flow.judged import check_judges as check_judges
from lmeval.flow.judged import graded_tasks as graded_tasks
from lmeval.flow.judged import how_to_grade as how_to_grade
from lmeval.flow.judged import judge_stages as judge_stages
from lmeval.flow.judged import judge_view as judge_view
from lmeval.flow.judged import split_judge as split_judge
