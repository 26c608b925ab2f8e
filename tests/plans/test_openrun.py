"""plans.openrun: ``open_run``, the one way into a results directory (manifest, scored files, plan file, rows on
demand), on a real scored run and on broken copies of it: each refusal one line naming the file (and field)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lmeval.plans import PlanError, open_run, read_header, read_manifest
from lmeval.plans.results import MANIFEST, part_files, read_results
from lmeval.plans.scored import RESULTS_JSON
from lmeval.scorer.score import score_run
from tests.scorer.golden_io import build, load_golden


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    _, rdir = build(load_golden("fake"), tmp_path_factory.mktemp("openrun"))
    score_run(str(rdir), bootstrap_iters=10)
    return rdir


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".score-index-*", ".lock"))
    return dst


def _edit(path: Path, change: Callable[[dict[str, Any]], object]) -> None:
    doc = json.loads(path.read_text(encoding="utf-8"))
    change(doc)
    path.write_text(json.dumps(doc), encoding="utf-8")


def test_a_scored_run_opens_with_every_part(scored: Path) -> None:
    run = open_run(scored)
    on_disk = json.loads((scored / MANIFEST).read_text(encoding="utf-8"))
    assert run.manifest == read_manifest(scored) and run.fields == on_disk
    assert run.scored is not None and run.scored.results.plan_hash == run.manifest.plan_hash == run.plan_hash
    assert run.scored.samples.height > 0
    assert read_header(run.plan_file()).plan_hash == run.plan_hash
    assert run.parts() == part_files(scored) and run.rows().equals(read_results(scored))
    bare = open_run(scored, scored=False)
    assert bare.scored is None and bare.plan_path == on_disk["plan_path"]


def test_rows_are_read_only_when_asked_for(scored: Path, tmp_path: Path) -> None:
    d = _copy(scored, tmp_path / "run")
    (part,) = part_files(d)
    part.write_bytes(b"not parquet")
    run = open_run(d)  # opening reads no Parquet part
    assert run.scored is not None
    with pytest.raises(PlanError, match=str(part.name)):
        run.rows()


def test_the_plan_named_relative_to_the_run_is_found_beside_it(scored: Path, tmp_path: Path) -> None:
    d = _copy(scored, tmp_path / "run")
    shutil.copy(scored.parent / "plan.msgpack", d / "moved.msgpack")
    for name in (MANIFEST, RESULTS_JSON):
        _edit(d / name, lambda doc: doc.update(plan_path="moved.msgpack"))
    run = open_run(d)
    assert run.plan_path == os.fspath(d / "moved.msgpack") and run.plan_file() == run.plan_path
    assert open_run(d, plan="elsewhere.msgpack").plan_path == "elsewhere.msgpack"  # --plan: as given
    with pytest.raises(PlanError, match=r"plan elsewhere\.msgpack not found; pass --plan PLAN"):
        open_run(d, plan="elsewhere.msgpack").plan_file()
    _edit(d / MANIFEST, lambda doc: doc.update(plan_path=""))
    with pytest.raises(PlanError, match="manifest names no plan; pass --plan PLAN"):
        open_run(d, scored=False).plan_file()


def test_results_scored_from_another_plan_are_refused(scored: Path, tmp_path: Path) -> None:
    d = _copy(scored, tmp_path / "run")
    _edit(d / RESULTS_JSON, lambda doc: doc.update(plan_hash="ab" * 32))
    with pytest.raises(PlanError, match=r"results\.json: scored from plan abababababab but the manifest says"):
        open_run(d)
    assert open_run(d, scored=False).plan_hash != "ab" * 32  # rescoring does not read it


@pytest.mark.parametrize(
    ("manifest", "says"),
    [
        (None, "not a results directory (no manifest.json)"),
        ("[1]", "malformed manifest: expected a JSON object, got array"),
        ('{"plan_hash": "ab", "plan_path": "", "model": [], "backend": "x"}', "field 'model' has the wrong type"),
        ('{"plan_hash": "ab", "plan_path": ""}', "field 'model' is missing"),
    ],
)
def test_a_bad_manifest_is_one_line_naming_it(tmp_path: Path, manifest: str | None, says: str) -> None:
    if manifest is not None:
        (tmp_path / MANIFEST).write_text(manifest, encoding="utf-8")
    with pytest.raises(PlanError) as e:
        open_run(tmp_path)
    assert says in str(e.value) and str(tmp_path) in str(e.value) and "\n" not in str(e.value)


def test_later_manifest_fields_are_kept_for_displays(scored: Path, tmp_path: Path) -> None:
    d = _copy(scored, tmp_path / "run")
    _edit(d / MANIFEST, lambda doc: doc.update(from_a_later_version={"x": 1}))
    run = open_run(d)
    assert run.fields["from_a_later_version"] == {"x": 1} and run.manifest == read_manifest(scored)
