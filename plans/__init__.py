"""The contract between lmeval's stages: the plan format, canonical encoding, hashing and the results schema.

Every stage imports this package and nothing else of lmeval's; see FORMAT.md for the design note.
"""

from lmeval.plans.canonical import canonical_bytes, content_hash, sha256_hex
from lmeval.plans.errors import PlanError, UserError, reraised_as
from lmeval.plans.integrity import same_task_records, verify_plans
from lmeval.plans.io import PlanReader, peek_header, read_header, read_plan, write_plan
from lmeval.plans.limits import MAX_MANIFEST_BYTES, InputError, loads_json, open_regular
from lmeval.plans.reasoning import parse_reasoning, split_response
from lmeval.plans.records import (
    FORMAT,
    VERSION,
    DocRecord,
    GroupSummary,
    InstanceRecord,
    ModelInfo,
    Plan,
    PlanHeader,
    TaskSummary,
    instance_id_for,
)
from lmeval.plans.results import MANIFEST, read_results
from lmeval.plans.resultsdir import PlanTask, read_manifest_bounded, read_plan_by_task, resolve_plan
from lmeval.plans.scored import RESULTS_JSON, ScoredRun, read_scored
from lmeval.plans.scoredclean import side_by_side
from lmeval.plans.verified import show_check_cost

__all__ = [
    "read_manifest_bounded",
    "read_plan_by_task",
    "resolve_plan",
    "DocRecord",
    "FORMAT",
    "GroupSummary",
    "InputError",
    "InstanceRecord",
    "MANIFEST",
    "MAX_MANIFEST_BYTES",
    "ModelInfo",
    "Plan",
    "PlanError",
    "PlanHeader",
    "PlanTask",
    "PlanReader",
    "RESULTS_JSON",
    "ScoredRun",
    "TaskSummary",
    "UserError",
    "VERSION",
    "canonical_bytes",
    "content_hash",
    "instance_id_for",
    "loads_json",
    "open_regular",
    "parse_reasoning",
    "peek_header",
    "read_header",
    "read_plan",
    "read_results",
    "read_scored",
    "reraised_as",
    "same_task_records",
    "sha256_hex",
    "show_check_cost",
    "side_by_side",
    "split_response",
    "verify_plans",
    "write_plan",
]
