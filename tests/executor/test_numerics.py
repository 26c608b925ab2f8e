"""The manifest records what a run's numbers depend on (``numerics``: kernel paths, workers, chunk and part
size; docs "What repeats exactly"), and the docs state the tolerances the tests compare with."""

from __future__ import annotations

import json
import re
import sys
from dataclasses import asdict
from pathlib import Path

import pytest

from lmeval.executor import execute, merge
from lmeval.executor.hardware import kernel_path
from lmeval.plans.errors import PlanError
from lmeval.plans.results import VECTOR_FLAGS, KernelPath, RunManifest, part_files, read_manifest
from tests.bounds import LOGLIKELIHOOD, SCORES
from tests.executor.conftest import REPO

FAKE = ["model.backend=fake"]


def test_docs_state_the_tolerances_the_tests_use() -> None:
    page = REPO / "docs" / "explanation" / "what-repeats.md"
    section = " ".join(page.read_text(encoding="utf-8").split()).split("## What repeats exactly", 1)[1]
    m = re.search(r"\|Δ loglikelihood\| ≤ max\(([0-9.e-]+), ([0-9.e-]+)·\|ll\|\)", section)
    assert m, "docs' 'What repeats exactly' no longer states the log-likelihood tolerance"
    assert (float(m.group(1)), float(m.group(2))) == (LOGLIKELIHOOD.atol, LOGLIKELIHOOD.rtol)
    assert "agree to 1e-9 (relative above 1" in section and SCORES.atol == SCORES.rtol == 1e-9


def test_tolerance_compares_nested_values_and_fails_outside_it() -> None:
    assert LOGLIKELIHOOD.close(-287.63406562805176, -287.6340579986572)  # the AVX2 pair
    assert not LOGLIKELIHOOD.close(-1.0, -1.0 - 3e-5) and LOGLIKELIHOOD.close(-1.0, -1.0 - 1e-5)
    golden = [2, [0.0004526095788117504, 4.127265123556621e-07, 2.752321683231605e-05]]
    ours = [2, [0.0004526095788117504, 4.1272651235566216e-07, 2.752321683231605e-05]]  # 1 ulp apart
    assert ours != golden and SCORES.same(ours, golden)
    assert not SCORES.same([2, [0.1, 0.2]], [2, [0.1, 0.2 + 1e-6]])
    assert not SCORES.same([2, [0.1]], [2, [0.1, 0.2]]) and not SCORES.same({"a": 1.0}, {"b": 1.0})
    assert not SCORES.same("1.0", 1.0) and SCORES.same(float("nan"), float("nan"))


def test_manifest_records_the_kernel_path_and_the_cutting(mixed_plan: Path, tmp_path: Path) -> None:
    out = execute(str(mixed_plan), out=str(tmp_path / "r"), overrides=FAKE, progress=False, part_size=7)
    n = read_manifest(out).numerics
    assert (n.workers, n.chunk_size, n.part_size) == (1, None, 7)
    assert n.kernel_paths == [kernel_path()]
    flags = set(Path("/proc/cpuinfo").read_text().split("flags", 1)[1].split("\n", 1)[0].split())
    assert n.kernel_paths[0].cpu_flags == [f for f in VECTOR_FLAGS if f in flags]
    assert "avx2" in n.kernel_paths[0].cpu_flags  # every x86 machine this suite runs on
    torch = sys.modules.get("torch")
    want = torch.backends.cpu.get_cpu_capability() if torch is not None else None
    assert n.kernel_paths[0].torch_cpu_capability == want
    assert n.kernel_paths[0].vllm_kernels is None or "vllm" in sys.modules


def test_a_resume_keeps_the_kernel_paths_of_earlier_runs(mixed_plan: Path, tmp_path: Path) -> None:
    """Rows of an earlier run on another machine stay in the directory: so does its kernel path."""
    # no result store: the resumed run computes (and so loads an engine, whose kernel path it records)
    out = execute(str(mixed_plan), out=str(tmp_path / "r"), overrides=FAKE, progress=False, part_size=9, store="off")
    m = json.loads((out / "manifest.json").read_text())
    other = asdict(KernelPath(cpu="Intel Xeon", cpu_flags=["avx2", "avx512f"], torch_cpu_capability="AVX512"))
    m["numerics"]["kernel_paths"] = [other]
    (out / "manifest.json").write_text(json.dumps(m))
    for p in part_files(out)[1:]:
        p.unlink()
    execute(str(mixed_plan), out=str(out), overrides=FAKE, progress=False, part_size=4, store="off")
    n = read_manifest(out).numerics
    assert n.kernel_paths == [KernelPath(**other), kernel_path()]
    assert n.part_size is None  # parts of two sizes


@pytest.mark.parametrize(
    "numerics, field",
    [({"workers": "2"}, "numerics.workers"), ({"kernel_paths": [{"cpu": 3}]}, "numerics.kernel_paths.cpu"),
     ({"kernel_paths": "x"}, "numerics.kernel_paths"), ([], "numerics")],
)  # fmt: skip
def test_a_forged_numerics_record_is_one_line_naming_the_field(
    numerics: object, field: str, mixed_plan: Path, tmp_path: Path
) -> None:
    m = RunManifest(plan_hash="ab" * 32, plan_path=str(mixed_plan), model={"name": "m"}, backend="fake")
    (tmp_path / "manifest.json").write_text(json.dumps({**m.to_dict(), "numerics": numerics}))
    with pytest.raises(PlanError, match=rf"malformed manifest: field '{re.escape(field)}'"):
        read_manifest(tmp_path)


def test_merge_keeps_every_shards_kernel_path(mixed_plan: Path, tmp_path: Path) -> None:
    shards = [
        execute(str(mixed_plan), out=str(tmp_path / f"s{i}"), overrides=FAKE, shard=f"{i}/2", progress=False,
                part_size=size)
        for i, size in enumerate((5, 6))
    ]  # fmt: skip
    m = json.loads((shards[1] / "manifest.json").read_text())
    m["numerics"]["kernel_paths"] = [asdict(KernelPath(cpu="elsewhere", cpu_flags=["avx2"]))]
    (shards[1] / "manifest.json").write_text(json.dumps(m))
    n = read_manifest(merge([str(s) for s in shards], str(tmp_path / "all"))).numerics
    assert n.kernel_paths == [kernel_path(), KernelPath(cpu="elsewhere", cpu_flags=["avx2"])]
    assert (n.workers, n.chunk_size, n.part_size) == (1, None, None)  # two part sizes
