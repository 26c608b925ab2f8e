"""What the executor writes: the run manifest, the result rows in checksummed Parquet parts, and the rule every row
obeys (the rows answer the plan's Instances)."""

from lmeval.plans.results.manifest import ANSWER_SOURCES as ANSWER_SOURCES
from lmeval.plans.results.manifest import MANIFEST as MANIFEST
from lmeval.plans.results.manifest import PART as PART
from lmeval.plans.results.manifest import RESULT_COLUMNS as RESULT_COLUMNS
from lmeval.plans.results.manifest import VECTOR_FLAGS as VECTOR_FLAGS
from lmeval.plans.results.manifest import KernelPath as KernelPath
from lmeval.plans.results.manifest import Numerics as Numerics
from lmeval.plans.results.manifest import RunManifest as RunManifest
from lmeval.plans.results.manifest import part_files as part_files
from lmeval.plans.results.manifest import plan_named as plan_named
from lmeval.plans.results.manifest import plan_of as plan_of
from lmeval.plans.results.manifest import polars_schema as polars_schema
from lmeval.plans.results.manifest import read_manifest as read_manifest
from lmeval.plans.results.manifest import read_manifest_fields as read_manifest_fields
from lmeval.plans.results.manifest import read_parts as read_parts
from lmeval.plans.results.manifest import read_results as read_results
from lmeval.plans.results.manifest import require_plan as require_plan
from lmeval.plans.results.manifest import write_manifest as write_manifest
from lmeval.plans.results.parquetfile import read_bounded as read_bounded
from lmeval.plans.results.parquetfile import read_parquet as read_parquet
from lmeval.plans.results.partsum import checksummed as checksummed
from lmeval.plans.results.partsum import part_sha256 as part_sha256
from lmeval.plans.results.rowcheck import KEY_COLUMNS as KEY_COLUMNS
from lmeval.plans.results.rowcheck import check_rows as check_rows
from lmeval.plans.results.rowcheck import plan_keys as plan_keys
from lmeval.plans.results.rowcheck import read_row_keys as read_row_keys
from lmeval.plans.results.rowcheck import shard_keys as shard_keys
