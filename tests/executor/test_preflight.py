"""Pre-flight against the context length (``executor.preflight``), before any engine loads: over-long
log-likelihood requests are left-truncated as lm-eval does and counted in one line; what cannot fit is a
one-line error naming task and doc, exit 2, no traceback, nothing written. Runs on the fake backend."""

from __future__ import annotations

from pathlib import Path

import pytest

from lmeval.executor.errors import ExecuteError
from lmeval.executor.preflight import preflight
from lmeval.plans.plan import InstanceRecord, read_plan
from lmeval.plans.results import read_manifest, read_results
from tests.executor import plantools as pt
from tests.executor.conftest import run_cli


def _too_long(instances: list[InstanceRecord], max_len: int) -> int:
    """lm-eval keeps the last max_len - 1 tokens of context + continuation: count those that lose some."""
    return sum(
        1
        for i in instances
        if i.request_type == "loglikelihood" and len(i.context_ids or [0]) + len(i.continuation_ids or []) > max_len - 1
    )


def test_overlong_contexts_are_truncated_and_counted_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "arc.msgpack"
    pt.build(path, [pt.arc_easy(40)])
    plan = read_plan(path)
    lengths = sorted(len(i.context_ids or []) + len(i.continuation_ids or []) for i in plan.instances
                     if i.request_type == "loglikelihood")  # fmt: skip
    max_len = lengths[len(lengths) // 2]  # about half of them are too long
    want = _too_long(plan.instances, max_len)
    assert 0 < want < len(lengths)
    out = tmp_path / "r"
    r = run_cli("execute", str(path), "model.backend=fake", f"model.max_model_len={max_len}",
                "--out", str(out), "--no-progress")  # fmt: skip
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("pre-flight:")]
    assert lines == [
        f"pre-flight: {want} of {len(lengths)} loglikelihood Instances exceed max_model_len={max_len} "
        f"(longest {lengths[-1]} tokens) and are left-truncated, as lm-eval does"
    ]
    assert "Traceback" not in r.stderr
    assert read_manifest(out).stats["truncated"] == want
    assert read_results(out).height == len(plan.instances)


def test_max_gen_toks_that_cannot_fit_is_a_one_line_error(tmp_path: Path) -> None:
    plan = tmp_path / "gen.msgpack"
    pt.build(plan, [pt.gsm8k(4, max_gen_toks=300)])
    first = next(i for i in read_plan(plan).instances if i.request_type == "generate_until")
    r = run_cli("execute", str(plan), "model.backend=fake", "model.max_model_len=300", "--out", str(tmp_path / "r"))
    assert r.returncode == 2
    assert r.stderr.splitlines() == [
        f"lmeval execute: error: {plan}: task {first.task} doc {first.doc_id}: max_gen_toks=300 does not fit "
        f"max_model_len=300 (no room left for the prompt)"
    ]
    assert not (tmp_path / "r").exists()  # refused before anything was written


def test_a_continuation_longer_than_the_window_is_refused(mixed_plan: Path) -> None:
    plan = read_plan(mixed_plan)
    scoring = [i for i in plan.instances if i.request_type == "loglikelihood"]
    longest = max(scoring, key=lambda i: len(i.continuation_ids or []))
    n = len(longest.continuation_ids or [])
    with pytest.raises(ExecuteError, match=rf"task {longest.task} doc {longest.doc_id}: the continuation is {n} "):
        preflight([longest], n + 1, 256, "p.msgpack")
    assert preflight([longest], n + 2, 256, "p.msgpack").scoring == 1  # one token of context fits
