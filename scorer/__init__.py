"""Scorer: results Parquet + plan -> lm-eval-compatible metrics, stderr and group aggregates (polars).

Its face: ``score``/``score_run`` (and ``ScoreError``, its one error), ``check_user_code`` (the consent to run a
task's code), the paired statistics other tools build on (``paired_test``, ``mde``, ``Z_ALPHA``, ``plan_power``;
``lmeval.diff.runs`` compares two scored runs with them), ``leaf_tasks``, ``judge_grades`` and the trajectory
scores. Its wings, each behind its own face: ``filters``, ``metrics``, ``groups``, ``statistics``, ``regex``,
``usercode``, ``sandbox``; beside them, the score path (``score``, ``taskscore``, ``samplescore`` and what they
read) and the scores of particular tasks (judge grades, tool calls, trajectories, reasoning)."""

from lmeval.scorer.errors import ScoreError as ScoreError
from lmeval.scorer.groups import leaf_tasks as leaf_tasks
from lmeval.scorer.judgegrades import judge_grades as judge_grades
from lmeval.scorer.score import ScoreOutcome as ScoreOutcome
from lmeval.scorer.score import score as score
from lmeval.scorer.score import score_run as score_run
from lmeval.scorer.statistics import Z_ALPHA as Z_ALPHA
from lmeval.scorer.statistics import mde as mde
from lmeval.scorer.statistics import paired_test as paired_test
from lmeval.scorer.statistics import plan_power as plan_power
from lmeval.scorer.trajectories import step_scores as step_scores
from lmeval.scorer.trajectories import trajectory_scores as trajectory_scores
from lmeval.scorer.usercode import check_user_code as check_user_code
