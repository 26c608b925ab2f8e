"""The best-of rule (scorer/groups/best.py) on hand-made results: each member's primary metric, the better
one chosen with its stderr, cf on a tie, no best when a member has no score; groups.py dispatches to it."""

from __future__ import annotations

from lmeval.plans import GroupSummary, best_aggregate
from lmeval.scorer.groups import aggregate_groups
from lmeval.scorer.groups import best as group_best

CF = {"acc,none": 0.40, "acc_stderr,none": 0.04, "acc_norm,none": 0.55, "acc_norm_stderr,none": 0.05, "sample_len": 20}
MCF = {"acc,none": 0.50, "acc_stderr,none": 0.03, "sample_len": 20}


def test_cf_is_judged_by_acc_norm_and_wins_when_better() -> None:
    got = group_best.best_of(["x@cf", "x@mcf"], {"x@cf": CF, "x@mcf": MCF})
    assert got == {"best,none": 0.55, "best_stderr,none": 0.05, "best_format": "cf", "best_metric": "acc_norm,none",
                   "sample_len": 20}  # fmt: skip


def test_mcf_wins_when_better_and_cf_falls_back_to_acc() -> None:
    cf = {"acc,none": 0.45, "acc_stderr,none": 0.04}
    got = group_best.best_of(["x@cf", "x@mcf"], {"x@cf": cf, "x@mcf": MCF})
    assert (got["best,none"], got["best_format"], got["best_metric"], got["best_stderr,none"]) == (
        0.50, "mcf", "acc,none", 0.03,
    )  # fmt: skip
    got = group_best.best_of(["x@cf", "x@mcf"], {"x@cf": cf, "x@mcf": {"acc,none": 0.2}})
    assert (got["best_format"], got["best_metric"]) == ("cf", "acc,none")


def test_a_tie_goes_to_the_first_member_cf() -> None:
    got = group_best.best_of(["x@cf", "x@mcf"], {"x@cf": {"acc_norm,none": 0.5}, "x@mcf": {"acc,none": 0.5}})
    assert got["best_format"] == "cf" and got["best_stderr,none"] == "N/A"


def test_no_best_when_a_member_has_no_score() -> None:
    assert group_best.best_of(["x@cf", "x@mcf"], {"x@cf": CF}) == {}
    assert group_best.best_of(["x@cf", "x@mcf"], {"x@cf": CF, "x@mcf": {"exact_match,none": 1.0}}) == {}


def test_groups_take_the_best_over_member_group_aggregates() -> None:
    mean = [{"metric": "acc", "aggregation": "mean", "filter_list": ["none"], "weight_by_size": True}]
    groups = [
        GroupSummary(name="m@cf", subtasks=["a@cf", "b@cf"], aggregate_metric_list=mean),
        GroupSummary(name="m@mcf", subtasks=["a@mcf", "b@mcf"], aggregate_metric_list=mean),
        GroupSummary(name="m@best", subtasks=["m@cf", "m@mcf"], aggregate_metric_list=[best_aggregate()]),
    ]
    tasks = {
        "a@cf": {"acc,none": 0.2, "acc_stderr,none": 0.1, "sample_len": 10},
        "b@cf": {"acc,none": 0.4, "acc_stderr,none": 0.1, "sample_len": 30},
        "a@mcf": {"acc,none": 0.3, "acc_stderr,none": 0.1, "sample_len": 10},
        "b@mcf": {"acc,none": 0.3, "acc_stderr,none": 0.1, "sample_len": 30},
    }
    results, _, subtasks = aggregate_groups(groups, tasks)
    assert results["m@cf"]["acc,none"] == 0.35 and results["m@mcf"]["acc,none"] == 0.3
    best = results["m@best"]
    assert (best["best,none"], best["best_format"], best["best_metric"]) == (0.35, "cf", "acc,none")
    assert best["best_stderr,none"] == results["m@cf"]["acc_stderr,none"] and best["sample_len"] == 40
    assert subtasks["m@best"] == ["m@cf", "m@mcf"]


def test_each_member_is_judged_by_its_format_metric() -> None:
    """``compared`` (each task's ``format.metric``: arc_challenge's cf compares acc_pmi) overrides the default."""
    cf = {**CF, "acc_pmi,none": 0.61, "acc_pmi_stderr,none": 0.06}
    got = group_best.best_of(["x@cf", "x@mcf"], {"x@cf": cf, "x@mcf": MCF}, {"x@cf": "acc_pmi,none"})
    assert (got["best,none"], got["best_metric"], got["best_stderr,none"]) == (0.61, "acc_pmi,none", 0.06)
    got = group_best.best_of(["x@cf", "x@mcf"], {"x@cf": cf, "x@mcf": MCF}, {"x@cf": "acc,none"})
    assert (got["best,none"], got["best_format"]) == (0.50, "mcf")
    assert group_best.best_of(["x@cf", "x@mcf"], {"x@cf": CF, "x@mcf": MCF}, {"x@cf": "acc_pmi,none"}) == {}


def test_a_member_group_is_judged_by_its_leaf_tasks_format_metric() -> None:
    mean = [{"metric": m, "aggregation": "mean", "filter_list": ["none"], "weight_by_size": True}
            for m in ("acc", "acc_norm")]  # fmt: skip
    groups = [
        GroupSummary(name="m@cf", subtasks=["a@cf"], aggregate_metric_list=mean),
        GroupSummary(name="m@mcf", subtasks=["a@mcf"], aggregate_metric_list=mean[:1]),
        GroupSummary(name="m@best", subtasks=["m@cf", "m@mcf"], aggregate_metric_list=[best_aggregate()]),
    ]
    tasks = {
        "a@cf": {"acc,none": 0.2, "acc_stderr,none": 0.1, "acc_norm,none": 0.6, "acc_norm_stderr,none": 0.1,
                 "sample_len": 10},
        "a@mcf": {"acc,none": 0.3, "acc_stderr,none": 0.1, "sample_len": 10},
    }  # fmt: skip
    compared = {"a@cf": "acc,none", "a@mcf": "acc,none"}
    results, _, _ = aggregate_groups(groups, tasks, compared=compared)
    assert (results["m@best"]["best_format"], results["m@best"]["best,none"]) == ("mcf", 0.3)
    results, _, _ = aggregate_groups(groups, tasks, compared={**compared, "a@cf": "acc_norm,none"})
    assert (results["m@best"]["best_format"], results["m@best"]["best_metric"]) == ("cf", "acc_norm,none")
