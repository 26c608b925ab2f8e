"""Plugin metrics and aggregations that would give silently wrong results, or a traceback (#64's probe list).

Registering: a name results cannot carry unambiguously (results.json's keys are ``"metric,filter"`` and
``"metric_stderr,filter"``), a name or key another metric produces, or an aggregation no one registered, is
refused at once (``RegistrationError``, a ValueError; a UserError, one line from a command) and nothing is
registered. Scoring (a real ``lmeval score`` process with the plugin imported first): a per-document dict naming
another metric's key (``exact_match``), a metric that raises, an integer no float holds, an aggregation that
raises or is gone: one line naming the metric, exit 2, no traceback, and the results directory (scored before,
by a good plugin) left byte for byte as it was."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lmeval.plans import METRIC_SPECS, RegistrationError, aggregation_names
from lmeval.scorer import (
    AGGREGATION_REGISTRY,
    METRICS,
    Aggregation,
    Metric,
    register_aggregation,
    register_metric,
    unregister_metric,
)
from tests.hostile.plugins import assert_one_line, lmeval_with, snapshot, write_plugin


def _gen(gold: Any, result: Any, opts: dict[str, Any], doc: dict[str, Any]) -> float:
    return 1.0


def _metric(name: Any, **fields: Any) -> Metric:
    return Metric(name, fields.pop("aggregation", "mean"), True, ("generate_until",), generate=_gen, **fields)


@pytest.mark.parametrize(
    ("metric", "message"),
    [
        (_metric(""), "name '' is empty"),
        (_metric("acc,none"), "holds a comma"),
        (_metric("exact_match_stderr"), "holds '_stderr'"),
        (_metric("x_stderr"), "holds '_stderr'"),
        (_metric("two words"), "whitespace"),
        (_metric("line\nbreak"), "whitespace or a control character"),
        (_metric(7), "is a int, not a string"),
        (_metric("plug", extra_keys=(("plug,x", "mean", True),)), "extra key 'plug,x' holds a comma"),
        (_metric("plug", extra_keys=(("plug_stderr", "mean", True),)), "extra key 'plug_stderr' holds '_stderr'"),
        (_metric("plug", extra_keys=(("exact_match", "mean", True),)), "'exact_match' is a result key of metric"),
        (_metric("pass@1"), "'pass@1' is a result key of metric 'pass_at_k'"),
        (_metric("plug", key_prefix="exact"), "key_prefix 'exact' covers 'exact_match'"),
        (_metric("plug", key_prefix=""), "key_prefix '' is empty"),
        (_metric("plug", aggregation="nosuchagg"), "unknown aggregation 'nosuchagg'"),
        (_metric("plug", extra_keys=(("plug_n", "nosuchagg", True),)), "unknown aggregation 'nosuchagg'"),
    ],
    ids=lambda v: repr(v.name if isinstance(v, Metric) else v)[:40],
)
def test_a_metric_results_cannot_carry_is_refused_at_registration(metric: Metric, message: str) -> None:
    before = (dict(METRICS), dict(METRIC_SPECS))
    with pytest.raises(RegistrationError, match="^metric ") as e:
        register_metric(metric)
    assert message in str(e.value) and "\n" not in str(e.value), str(e.value)
    assert isinstance(e.value, ValueError)
    assert (dict(METRICS), dict(METRIC_SPECS)) == before  # nothing registered


@pytest.mark.parametrize("name", ["", "two words", "tab\there", 3])
def test_an_aggregation_a_task_cannot_name_is_refused(name: Any) -> None:
    before = (dict(AGGREGATION_REGISTRY), aggregation_names())
    with pytest.raises(RegistrationError, match="^aggregation name "):
        register_aggregation(Aggregation(name, lambda items: 0.0))
    assert (dict(AGGREGATION_REGISTRY), aggregation_names()) == before


def test_a_good_name_still_registers() -> None:
    """The rule refuses what is ambiguous, not what is merely new: a plain name and its declared keys."""
    m = register_metric(_metric("plug_ok", extra_keys=(("plug_ok_n", "mean", False),)))
    try:
        assert METRICS["plug_ok"] is m and "plug_ok" in METRIC_SPECS
    finally:
        unregister_metric("plug_ok")


# ------------------------------------------------------------------ a real lmeval score, the plugin imported first

PLUGIN = """
from lmeval.scorer import Aggregation, Metric, register_aggregation, register_metric, unregister_aggregation

MODE = {mode!r}


def gen(gold, result, opts, doc):
    if MODE == "dict_names_builtin":
        return {{"plug": 1.0, "exact_match": 0.123}}
    if MODE == "raises":
        raise RuntimeError("the plugin exploded")
    if MODE == "huge_int":
        return 10**400
    return 1.0


def trimmed(items):
    if MODE == "aggregation_raises":
        raise ZeroDivisionError("nothing left to average")
    return sum(items) / len(items)


register_aggregation(Aggregation("plug_trim", trimmed))
register_metric(Metric("plug", "plug_trim", True, ("generate_until",), generate=gen))
if MODE == "aggregation_gone":
    unregister_aggregation("plug_trim")
"""


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """arith with exact_match and the plugin's ``plug``: compiled, executed (fake) and scored with the good
    plugin, in processes of their own: (folder, results)."""
    root = tmp_path_factory.mktemp("plugin-metrics")
    write_plugin(root / "plugins", "plug_good", PLUGIN.format(mode="good"))
    plan, results = root / "plan.msgpack", root / "results"
    for argv in (
        ["compile", "+task=arith", "run.limit=4", "task.arith.metric_list=[{metric:exact_match},{metric:plug}]",
         "--out", str(plan)],
        ["execute", str(plan), "model.backend=fake", "--out", str(results), "--no-progress"],
        ["score", str(results), "--quiet"],
    ):  # fmt: skip
        p = lmeval_with(root / "plugins", "plug_good", *argv, cwd=root)
        assert p.returncode == 0, p.stderr[-3000:]
    res = json.loads((results / "results.json").read_text())["results"]["arith"]
    assert res["plug,strict-match"] == 1.0 and res["exact_match,strict-match"] in (0.0, 0.25, 0.5, 0.75, 1.0)
    yield root, results


@pytest.mark.parametrize(
    ("mode", "needles"),
    [
        ("dict_names_builtin", ("task arith doc 0", "metric 'plug' returned key 'exact_match', not one of its own")),
        ("raises", ("task arith doc 0", "metric 'plug' failed", "RuntimeError: the plugin exploded")),
        ("huge_int", ("task arith doc 0", "metric 'plug' returned an integer too large for a float")),
        ("aggregation_raises", ("aggregation 'plug_trim' failed", "ZeroDivisionError: nothing left to average")),
        ("aggregation_gone", ("task arith", "metric 'plug'", "aggregation 'plug_trim' is not registered")),
    ],
)
def test_a_plugin_metric_that_misbehaves_is_one_line(
    scored: tuple[Path, Path], mode: str, needles: tuple[str, ...]
) -> None:
    root, results = scored
    before = snapshot(results)
    write_plugin(root / "plugins", f"plug_{mode}", PLUGIN.format(mode=mode))
    p = lmeval_with(root / "plugins", f"plug_{mode}", "score", str(results), "--quiet", cwd=root)
    assert_one_line(p, "score", *needles)
    assert snapshot(results) == before  # the results scored before are untouched
