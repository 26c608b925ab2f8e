"""Parity with lm-evaluation-harness 0.4.13: our Instances equal its ``build_all_requests`` Instances.

CI subset: ``limit`` docs per task, both routes (our conf/task configs; lm-eval's YAMLs via
run.include_path), one lm-eval subprocess for every reference (cached under $LMEVAL_CACHE/parity).
The full set (all docs) is ``bench/parity_all.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.parity.compare import (
    ROUTES,
    Outcome,
    ci_cases,
    compare,
    first_difference_at,
    ours_via_cli,
    overrides_for,
    run_cases,
)
from tests.parity.lmeval_reference import RefResult, default_data_dir, lmeval_version

pytestmark = pytest.mark.lmeval_parity

CI_LIMIT = 40


@pytest.fixture(scope="session")
def tiny_model_path() -> str:
    from lmeval.common.tinymodel import ensure_tiny_model

    return str(ensure_tiny_model())


@pytest.fixture(scope="session")
def ci_run(tiny_model_path: str) -> tuple[dict[tuple[str, str], Outcome], dict[str, RefResult]]:
    outcomes, refs = run_cases(ci_cases(tiny_model_path, CI_LIMIT), ROUTES)
    # the reference itself must be real: lm-eval built requests for every case
    for r in refs:
        assert r.instances, f"lm-eval built no requests for {r.spec.label()}"
    return {(o.case, o.route): o for o in outcomes}, {r.spec.label(): r for r in refs}


def _ids(model: str | None = None) -> list[tuple[str, str]]:
    return [(c.name, r) for c in ci_cases(model, CI_LIMIT) for r in c.routes]


@pytest.mark.parametrize(("case", "route"), _ids(), ids=[f"{c}[{r}]" for c, r in _ids()])
def test_instances_equal_lmeval(ci_run: tuple[dict, dict], case: str, route: str) -> None:
    o = ci_run[0][(case, route)]
    assert o.error is None, f"{case} [{route}]: compile failed: {o.error}"
    msg = ""
    if o.first is not None:
        d = o.first
        msg = d.describe()
        if isinstance(d.ours, str) and isinstance(d.lmeval, str):
            msg += "\n" + first_difference_at(d.ours, d.lmeval)
    assert (o.mismatched, o.missing, o.extra) == (0, 0, 0), (
        f"{case} [{route}]: {o.mismatched} differ, {o.missing} missing, {o.extra} extra of {o.n_ref}\n{msg}"
    )
    assert o.matched == o.n_ref > 0


def test_cli_show_jsonl_equals_lmeval(ci_run: tuple[dict, dict], tiny_model_path: str, tmp_path: Path) -> None:
    """The documented route: `lmeval compile` then `lmeval show --jsonl` (two processes), compared with lm-eval."""
    [case] = [c for c in ci_cases(tiny_model_path, CI_LIMIT) if c.ref.task == "gsm8k_cot_llama"]
    ref = ci_run[1][case.name]
    ours = ours_via_cli(overrides_for(case, "conf", default_data_dir()), tmp_path)
    o = compare(ours, ref.instances, case.name, "conf/cli")
    assert o.ok, o.first.describe() if o.first else o


def test_comparison_catches_a_one_byte_change(ci_run: tuple[dict, dict]) -> None:
    """The comparison is not vacuous: one changed byte in a context is reported with its location."""
    ref = ci_run[1][f"arc_challenge/25shot/limit{CI_LIMIT}"]
    tampered = json.loads(json.dumps(ref.instances))
    tampered[5]["arguments"][0] = tampered[5]["arguments"][0].replace("\n\n", "\n \n", 1)
    o = compare(tampered, ref.instances, "arc_challenge", "tampered")
    assert (o.matched, o.mismatched) == (len(ref.instances) - 1, 1)
    assert o.first is not None and o.first.field == "context"
    assert (o.first.task, o.first.doc_id, o.first.idx) == (
        ref.instances[5]["task"],
        ref.instances[5]["doc_id"],
        ref.instances[5]["idx"],
    )
    gone = compare(tampered[:-1], ref.instances, "arc_challenge", "short")
    assert gone.missing == 1


def test_reference_is_real_lmeval_0_4_13(ci_run: tuple[dict, dict]) -> None:
    """The reference came from the pinned lm-eval 0.4.13 (the version parity is claimed for), reading the local
    data files."""
    assert lmeval_version() == "0.4.13"
    for r in ci_run[1].values():
        assert r.data_files, f"{r.spec.label()}: lm-eval read no local data files"
        assert all(p.startswith(str(default_data_dir().resolve())) for p in r.data_files)


CATALOG_TASKS = ("arc_easy", "gsm8k", "winogrande", "piqa", "boolq")


@pytest.fixture(scope="session")
def catalog_refs() -> dict[str, RefResult]:
    from tests.parity.lmeval_reference import RefSpec, reference_instances

    refs = reference_instances([RefSpec(t, limit=CI_LIMIT) for t in CATALOG_TASKS], default_data_dir())
    return {r.spec.task: r for r in refs}


@pytest.mark.parametrize(
    "names",
    [
        # as a user types them: conf/task's configs win where both define the name
        list(CATALOG_TASKS),
        # lm-eval's own YAMLs from its installed catalog (boolq's reads SuperGLUE's `label`, which this
        # google/boolq-schema data lacks: see parity_cases)
        [f"lm_eval:{t}" for t in CATALOG_TASKS if t != "boolq"],
    ],
    ids=["by-name", "lm_eval-catalog"],
)
def test_task_names_compile_byte_identical_to_lmeval(
    catalog_refs: dict[str, RefResult], names: list[str], tmp_path: Path
) -> None:
    """`lmeval compile 'run.tasks=[arc_easy,gsm8k,winogrande,piqa,boolq]'` equals lm-eval's requests."""
    from tests.parity.compare import ours_via_compiler

    ov = [f"run.tasks=[{','.join(names)}]", f"run.data_dir={default_data_dir()}", f"run.limit={CI_LIMIT}"]
    ours = ours_via_compiler(ov, tmp_path)
    for name in names:
        task = name.removeprefix("lm_eval:")
        ref = catalog_refs[task]
        o = compare([d for d in ours if d["task"] == task], ref.instances, task, name)
        assert o.ok and o.matched == len(ref.instances) > 0, (o, o.first.describe() if o.first else "")


def test_catalog_route_reads_lmeval_yaml() -> None:
    """The lm_eval: route really compiles lm-eval's installed YAML, not conf/task's copy."""
    from lmeval.compiler.config import compose
    from lmeval.compiler.runconfig import run_config
    from lmeval.compiler.tasks.select import select_tasks

    cfg = compose(["run.tasks=[lm_eval:piqa,arc_easy]", f"run.data_dir={default_data_dir()}"])
    sel = select_tasks(cfg, run_config(cfg["run"]))
    src = {s.name: s.source for s in sel.tasks}
    assert src["piqa"] is not None and "/lm_eval/tasks/piqa/" in src["piqa"]
    assert src["arc_easy"] is not None and src["arc_easy"].endswith("conf/task/arc_easy.yaml")
