"""``open_run``: the one way into a results directory. Its manifest (``plans.results.read_manifest_fields``, the
one manifest reader: typed, size-bounded), its scored-run files when asked for (``plans.scored.read_scored``),
the plan file it names (``plans.results.plan_named``, the one rule) and its result rows, read only when asked
for (``rows``, ``parts``: Parquet is not touched by opening).

Checked on the way in: a manifest that is missing or malformed, a results.json scored from another plan than the
manifest's, each a one-line ``PlanError`` naming the file (and field). The report, the exports, the scorer, the
judge (compile and judge-score) and ``execute --reuse`` open runs here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lmeval.plans.errors import PlanError
from lmeval.plans.results import (
    RunManifest,
    part_files,
    plan_named,
    read_manifest_fields,
    read_results,
    require_plan,
)
from lmeval.plans.scored import RESULTS_JSON, ScoredFiles, read_scored

if TYPE_CHECKING:
    import polars as pl


@dataclass(frozen=True)
class OpenRun:
    """One results directory, opened: what ``open_run`` read, and its rows on demand."""

    where: str
    """The directory as given (error messages name it so)."""
    manifest: RunManifest
    """manifest.json, typed."""
    fields: dict[str, Any]
    """manifest.json as the file holds it: every field, those of later versions too (for displays)."""
    scored: ScoredFiles | None
    """results.json and (when asked for) samples.parquet; None when not asked for."""
    plan_path: str
    """The plan file the run names (``--plan``, else results.json's when read, else the manifest's), relative
    names tried beside the run; "" when none is named. Not checked to exist (``plan_file`` does)."""

    @property
    def path(self) -> Path:
        return Path(self.where)

    @property
    def plan_hash(self) -> str:
        """The plan the results came from (results.json's when read, else the manifest's; they agree)."""
        return (self.scored.results.plan_hash if self.scored is not None else "") or self.manifest.plan_hash

    def plan_file(self) -> str:
        """``plan_path`` when it is a file; ``PlanError`` when no plan is named or it is not there."""
        return require_plan(self.where, self.plan_path)

    def parts(self) -> list[Path]:
        """The result part files, in order (not read)."""
        return part_files(self.where)

    def rows(self) -> pl.DataFrame:
        """Every result row (``plans.results.read_results``: checksums verified, sorted, no duplicate ids)."""
        return read_results(self.where)


def open_run(
    results_dir: str | os.PathLike[str],
    *,
    plan: str | None = None,
    scored: bool = True,
    samples: bool = True,
) -> OpenRun:
    """Open ``results_dir``: its manifest, its scored-run files when ``scored`` (samples.parquet too when
    ``samples``) and the plan it names (``plan``: another path to it, as given with ``--plan``). ``PlanError``, one
    line naming the file, for a missing or malformed manifest or scored file, or a results.json scored from
    another plan than the manifest's."""
    where = os.fspath(results_dir)
    manifest, fields = read_manifest_fields(where)
    files = read_scored(where, samples=samples) if scored else None
    if files is not None:
        mh, rh = manifest.plan_hash, files.results.plan_hash
        if mh and rh and mh != rh:
            raise PlanError(
                f"{Path(where) / RESULTS_JSON}: scored from plan {rh[:12]} but the manifest says {mh[:12]}; "
                f"rescore with `lmeval score {where}`"
            )
    name = (files.results.plan_path if files is not None else "") or manifest.plan_path
    return OpenRun(where, manifest, fields, files, plan_named(where, name, plan))
