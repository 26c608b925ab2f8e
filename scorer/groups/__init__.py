"""Groups: lm-eval's group aggregates over a task tree (``tree``: every group over its leaf tasks, weighted by
sample count, with the pooled-variance stderr) and the groups of a format choice that compare their members
instead (``best``: the better of a task's formats, ``NAME@best``; ``spread``: the spread of a sweep's variants,
``NAME@sweep``), each member scored by its ``format.metric`` (``members``)."""

from lmeval.scorer.groups.tree import aggregate_groups as aggregate_groups
from lmeval.scorer.groups.tree import has_aggregation as has_aggregation
from lmeval.scorer.groups.tree import leaf_tasks as leaf_tasks
from lmeval.scorer.groups.tree import propagate as propagate
