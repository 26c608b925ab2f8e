"""Scorer: results Parquet + plan -> lm-eval-compatible metrics, stderr and group aggregates (polars).

Its face: ``score``/``score_run`` (and ``ScoreError``, its one error), ``check_user_code`` (the consent to run a task's
code), the paired statistics other tools build on (``paired_test``, ``mde``, ``Z_ALPHA``, ``plan_power``;
``lmeval.diff.runs`` compares two scored runs with them), ``leaf_tasks``, ``judge_grades`` with MT-Bench's FastChat
summaries (``single_summary``, ``pairwise_summary``, ``SUMMARY_FILTER``) and two judges' agreement (``cohen_kappa``,
``krippendorff_alpha``), the trajectory scores; the metric and
aggregation registries (``register_metric``, ``register_aggregation``: a new metric or aggregation is one
registration). Its wings, each behind its own face: ``filters``, ``metrics``, ``groups``, ``statistics``, ``regex``,
``usercode``, ``sandbox``; beside them, the score path (``score``, ``taskscore``, ``samplescore`` and what they read)
and the scores of particular tasks (judge grades, tool calls, trajectories, reasoning)."""

from lmeval.scorer.agreement import cohen_kappa as cohen_kappa
from lmeval.scorer.agreement import krippendorff_alpha as krippendorff_alpha
from lmeval.scorer.errors import ScoreError as ScoreError
from lmeval.scorer.groups import leaf_tasks as leaf_tasks
from lmeval.scorer.judgegrades import judge_grades as judge_grades
from lmeval.scorer.metrics import AGGREGATION_REGISTRY as AGGREGATION_REGISTRY
from lmeval.scorer.metrics import METRICS as METRICS
from lmeval.scorer.metrics import Aggregation as Aggregation
from lmeval.scorer.metrics import ChoiceArrays as ChoiceArrays
from lmeval.scorer.metrics import ChoiceDoc as ChoiceDoc
from lmeval.scorer.metrics import Metric as Metric
from lmeval.scorer.metrics import metric_of_key as metric_of_key
from lmeval.scorer.metrics import metrics_for as metrics_for
from lmeval.scorer.metrics import register_aggregation as register_aggregation
from lmeval.scorer.metrics import register_metric as register_metric
from lmeval.scorer.metrics import unregister_aggregation as unregister_aggregation
from lmeval.scorer.metrics import unregister_metric as unregister_metric
from lmeval.scorer.mtbench import SUMMARY_FILTER as SUMMARY_FILTER
from lmeval.scorer.mtbench import pairwise_summary as pairwise_summary
from lmeval.scorer.mtbench import single_summary as single_summary
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
