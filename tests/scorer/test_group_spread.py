"""The spread of a sweep's variants (scorer/groups/spread.py) on hand-made results: each member's
``format.metric``, min / max / range / mean / sample std, the variants at the extremes (first of equals),
nothing for a partial run; groups.py dispatches to it, member groups judged by their first task's metric."""

from __future__ import annotations

import math

from lmeval.plans import GroupSummary, spread_aggregate
from lmeval.scorer.groups import aggregate_groups
from lmeval.scorer.groups import spread as group_spread

MEMBERS = ["x@cf", "x@mcf", "x@mcf+parens", "x@gen+seed1"]
RESULTS = {
    "x@cf": {"acc,none": 0.1, "acc_norm,none": 0.40, "acc_pmi,none": 0.9, "sample_len": 20},
    "x@mcf": {"acc,none": 0.55, "sample_len": 20},
    "x@mcf+parens": {"acc,none": 0.25, "sample_len": 20},
    "x@gen+seed1": {"exact_match,letter": 0.55, "exact_match,none": 0.0, "sample_len": 20},
}


def test_spread_over_each_members_metric() -> None:
    got = group_spread.spread_of(MEMBERS, RESULTS)
    values = [0.40, 0.55, 0.25, 0.55]  # cf: acc_norm; mcf: acc; gen: the extracted letter's exact match
    mean = sum(values) / 4
    assert got["spread_min,none"] == 0.25 and got["spread_max,none"] == 0.55
    assert math.isclose(got["spread_range,none"], 0.30) and math.isclose(got["spread_mean,none"], mean)
    assert math.isclose(got["spread_std,none"], math.sqrt(sum((v - mean) ** 2 for v in values) / 3))
    assert (got["spread_n"], got["spread_argmin"], got["spread_argmax"]) == (4, "x@mcf+parens", "x@mcf")
    assert got["sample_len"] == 20


def test_the_format_metric_record_decides() -> None:
    got = group_spread.spread_of(MEMBERS, RESULTS, {"x@cf": "acc_pmi,none"})
    assert (got["spread_max,none"], got["spread_argmax"]) == (0.9, "x@cf")


def test_one_variant_has_no_std_and_a_partial_run_no_spread() -> None:
    one = group_spread.spread_of(["x@mcf"], RESULTS)
    assert one["spread_std,none"] == "N/A" and one["spread_range,none"] == 0.0 and one["spread_n"] == 1
    assert group_spread.spread_of([*MEMBERS, "x@mcf+numbers"], RESULTS) == {}
    assert group_spread.spread_of(["x@cf"], RESULTS, {"x@cf": "acc_per_token,none"}) == {}


def test_groups_dispatch_and_member_groups_use_their_first_tasks_metric() -> None:
    mean = [{"metric": m, "aggregation": "mean", "filter_list": ["none"], "weight_by_size": True}
            for m in ("acc", "acc_norm")]  # fmt: skip
    groups = [
        GroupSummary(name="m@cf", subtasks=["a@cf", "b@cf"], aggregate_metric_list=mean),
        GroupSummary(name="m@mcf", subtasks=["a@mcf", "b@mcf"], aggregate_metric_list=mean[:1]),
        GroupSummary(name="m@sweep", subtasks=["m@cf", "m@mcf"], aggregate_metric_list=[spread_aggregate()]),
    ]
    tasks = {
        "a@cf": {"acc,none": 0.2, "acc_norm,none": 0.5, "sample_len": 10},
        "b@cf": {"acc,none": 0.4, "acc_norm,none": 0.7, "sample_len": 30},
        "a@mcf": {"acc,none": 0.3, "sample_len": 10},
        "b@mcf": {"acc,none": 0.3, "sample_len": 30},
    }
    results, _, _ = aggregate_groups(groups, tasks, compared={"a@cf": "acc,none", "a@mcf": "acc,none"})
    s = results["m@sweep"]
    assert (s["spread_min,none"], s["spread_max,none"], s["spread_argmax"]) == (0.3, 0.35, "m@cf")
    results, _, _ = aggregate_groups(groups, tasks, compared={"a@cf": "acc_norm,none", "a@mcf": "acc,none"})
    assert (results["m@sweep"]["spread_max,none"], results["m@sweep"]["sample_len"]) == (0.65, 40)
