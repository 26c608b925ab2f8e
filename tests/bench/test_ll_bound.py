"""bench/ll_bound.py's arithmetic: the worst request is measured against the stated bound (tests/bounds.py), and
the CPU kind names the report."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from tests.bounds import MARGIN, SCORES, VS_LM_EVAL

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _bench() -> ModuleType:
    sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location("bench_ll_bound", BENCH / "ll_bound.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def test_worst_request_against_the_bound() -> None:
    w = _bench().Worst()
    w.add("arc_easy", [(-20.0001, -20.0), (-1.5, -1.5)])
    # a 1000-nat rolling sum: the relative part of the bound applies
    w.add("mmlu_anatomy", [(-1000.01, -1000.0)])
    assert w.n == 3
    assert SCORES.close(w.abs_diff, 0.01) and SCORES.close(w.rel_diff, 1e-5)
    assert w.ratio == abs(-1000.01 + 1000.0) / VS_LM_EVAL.bound(-1000.0) and w.at[0] == "mmlu_anatomy"
    assert w.ratio <= 1 / MARGIN  # 0.01 against 0.025: within the bound with its margin
    w.add("boolq", [(-2.0, -2.0 - 0.6 * VS_LM_EVAL.atol)])
    assert w.ratio > 1 / MARGIN and w.at[0] == "boolq"  # past half the bound: the bench fails


def test_cpu_kind() -> None:
    kind = _bench().kind
    assert kind("avx2 fma avx512f avx512_vnni avx512_bf16") == "avx512_bf16"
    assert kind("avx2 fma avx512f") == "avx512f"
    assert kind("avx2 fma") == "avx2"
    assert kind("avx2 avx512f avx512_bf16 amx_tile") == "amx"
