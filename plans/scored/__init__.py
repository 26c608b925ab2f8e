"""What the scorer writes: the scored run (results.json, samples.parquet, repeats.parquet) and its optional fields:
contamination, intervals, honest subsets (design note: plans/scored/SCORED.md)."""

from lmeval.plans.scored.clean import Contamination as Contamination
from lmeval.plans.scored.clean import side_by_side as side_by_side
from lmeval.plans.scored.composites import JUDGED_BY as JUDGED_BY
from lmeval.plans.scored.composites import NA as NA
from lmeval.plans.scored.composites import PARTIAL as PARTIAL
from lmeval.plans.scored.composites import Flag as Flag
from lmeval.plans.scored.composites import judge_graded as judge_graded
from lmeval.plans.scored.files import ITEMS as ITEMS
from lmeval.plans.scored.files import REASONING_COLUMNS as REASONING_COLUMNS
from lmeval.plans.scored.files import RESULTS_JSON as RESULTS_JSON
from lmeval.plans.scored.files import SAMPLES_PARQUET as SAMPLES_PARQUET
from lmeval.plans.scored.files import MissingInstance as MissingInstance
from lmeval.plans.scored.files import ScoredFiles as ScoredFiles
from lmeval.plans.scored.files import ScoredRun as ScoredRun
from lmeval.plans.scored.files import TaskPartial as TaskPartial
from lmeval.plans.scored.files import empty_samples as empty_samples
from lmeval.plans.scored.files import jsonable as jsonable
from lmeval.plans.scored.files import read_scored as read_scored
from lmeval.plans.scored.files import write_results as write_results
from lmeval.plans.scored.files import write_scored as write_scored
from lmeval.plans.scored.intervals import DOCUMENT as DOCUMENT
from lmeval.plans.scored.intervals import FIELD_PREFIX as FIELD_PREFIX
from lmeval.plans.scored.intervals import SUBTASK as SUBTASK
from lmeval.plans.scored.intervals import Intervals as Intervals
from lmeval.plans.scored.intervals import MetricInterval as MetricInterval
from lmeval.plans.scored.repeats import REPEATS_PARQUET as REPEATS_PARQUET
from lmeval.plans.scored.repeats import read_repeats as read_repeats
from lmeval.plans.scored.repeats import write_repeats as write_repeats
from lmeval.plans.scored.subset import SubsetScores as SubsetScores
