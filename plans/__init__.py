"""The contract between lmeval's stages: the plan format, canonical encoding, hashing and the results schema.

Every stage imports this package and nothing else of lmeval's; see FORMAT.md for the design note.
"""

from lmeval.plans.canonical import canonical_bytes, sha256_hex
from lmeval.plans.errors import PlanError, UserError
from lmeval.plans.io import PlanReader, read_header, read_plan, write_plan
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

__all__ = [
    "FORMAT",
    "VERSION",
    "DocRecord",
    "GroupSummary",
    "InstanceRecord",
    "ModelInfo",
    "Plan",
    "PlanError",
    "UserError",
    "PlanHeader",
    "PlanReader",
    "TaskSummary",
    "canonical_bytes",
    "instance_id_for",
    "read_header",
    "read_plan",
    "sha256_hex",
    "write_plan",
]
