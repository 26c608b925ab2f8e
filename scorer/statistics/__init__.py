"""Statistics over scored documents: clustered standard errors and 95% intervals (``clustered``), the paired
tests and minimum detectable effects two runs are compared with (``power``), and the estimator of a subsampled
run with its finite-population interval (``subsample``)."""

from lmeval.scorer.statistics.clustered import TaskSample as TaskSample
from lmeval.scorer.statistics.clustered import intervals as intervals
from lmeval.scorer.statistics.clustered import task_sample as task_sample
from lmeval.scorer.statistics.power import Z_ALPHA as Z_ALPHA
from lmeval.scorer.statistics.power import mde as mde
from lmeval.scorer.statistics.power import paired_test as paired_test
from lmeval.scorer.statistics.power import plan_power as plan_power
from lmeval.scorer.statistics.subsample import console_lines as console_lines
from lmeval.scorer.statistics.subsample import drawn_of as drawn_of
from lmeval.scorer.statistics.subsample import task_subset as task_subset
