"""The scorer implements exactly the contract's scoring vocabulary (plans/vocab/scoring.py), which the compiler
checks tasks against: metric, aggregation and filter registries are equal, and what each output type's
scoring actually computes is what the contract says applies to it."""

from __future__ import annotations

import inspect

import pytest

from lmeval.plans.vocab import scoring
from lmeval.scorer import filters, metrics
from lmeval.scorer.errors import ScoreError
from lmeval.scorer.metrics import aggregations as aggregate
from lmeval.scorer.metrics import doc_metrics


def test_the_scorer_resolves_every_metric_of_the_contract_with_its_defaults() -> None:
    """The scorer has no metric table of its own: each metric the compiler accepts resolves here, with the
    contract's aggregation and direction, and its aliases too; a name outside the contract is refused."""
    for name, m in scoring.METRIC_SPECS.items():
        assert m.aggregation in scoring.AGGREGATIONS
        tm = metrics.resolve_metrics("t", m.output_types[0], [{"metric": name}], {}, None)
        assert [s.builtin for s in tm.metrics] == [name]
        assert (tm.aggregation[name], tm.higher_is_better[name]) == (m.aggregation, m.higher_is_better), name
    for alias, name in scoring.METRIC_ALIASES.items():
        assert metrics.resolve_metrics("t", "generate_until", [{"metric": alias}], {}, None).metrics[0].builtin == name
    for ot, names in scoring.DEFAULT_METRICS.items():
        assert metrics.resolve_metrics("t", ot, [], {}, None).names() == names
    with pytest.raises(ScoreError, match="unknown metric 'accuracy'"):
        metrics.resolve_metrics("t", "multiple_choice", [{"metric": "accuracy"}], {}, None)


def test_aggregation_and_filter_registries_equal_the_contract() -> None:
    # the contract lists the aggregations (one list); the scorer's registry has exactly those built-ins
    assert tuple(aggregate.AGGREGATION_REGISTRY) == scoring.AGGREGATIONS
    assert aggregate.aggregate("mean", [1.0, 0.0]) == 0.5
    with pytest.raises(KeyError):
        aggregate.aggregate("no_such_aggregation", [1.0])
    assert tuple(filters.FILTERS) == tuple(scoring.FILTER_SPECS)


def test_metric_options_are_the_implementations_keyword_arguments() -> None:
    em = inspect.signature(metrics.exact_match_np).parameters
    assert set(scoring.METRIC_SPECS["exact_match"].options) == set(em) - {"predictions", "references"}
    pk = inspect.signature(metrics.run_pass_at_k).parameters
    assert set(scoring.METRIC_SPECS["pass_at_k"].options) == set(pk) - {"predictions", "references"}
    assert {n for n, m in scoring.METRIC_SPECS.items() if m.options} == {"exact_match", "pass_at_k"}


def _tm(names: list[str]) -> metrics.TaskMetrics:
    return metrics.TaskMetrics([metrics.MetricEntry(n, n) for n in names], {}, {})


def test_each_output_type_computes_exactly_the_metrics_that_apply_to_it() -> None:
    def applies(ot: str) -> set[str]:
        return {n for n, m in scoring.METRIC_SPECS.items() if ot in m.output_types}

    everything = list(scoring.METRIC_SPECS)
    choices = ["a", "bb"]
    # the choices, then one unconditional block per metric that needs one (acc_mutual_info, acc_pmi)
    results = [(-1.0, False), (-0.5, True)] * 3
    mc = doc_metrics.mc_doc(_tm(everything), 1, choices, results, False, n_tokens=[1, 2] * 3)
    assert set(mc) == applies("multiple_choice")
    assert set(doc_metrics.loglikelihood_doc(_tm(everything), [(-1.0, True)])) == applies("loglikelihood")
    assert set(doc_metrics.rolling_doc(_tm(everything), "some text", [-3.0])) == applies("loglikelihood_rolling")
    gen = applies("generate_until")
    for name in everything:
        if name in ("pass_at_k", "jsonl_spec", "tool_call"):  # run programs / need a spec or tools: own tests
            assert name in gen
            continue
        if name in gen:
            doc_metrics._call_gen_metric(name, None, "4", "4", {}, {})
        else:
            with pytest.raises(ScoreError, match="does not apply to generate_until"):
                doc_metrics._call_gen_metric(name, None, "4", "4", {}, {})


def test_every_filter_runs_with_the_arguments_the_contract_allows() -> None:
    docs = [{"choices": ["x", "y"]}]
    args = {
        "regex": {"regex_pattern": r"(\d+)", "group_select": 0, "fallback": "?"},
        "take_first_k": {"k": 1},
        "map": {"mapping_dict": {"4": "four"}, "default_value": "other"},
        "multi_choice_regex": {
            "regex_pattern": r"\((A|B)\)",
            "group_select": 0,
            "fallback": "?",
            "ignore_case": True,
            "ignore_punctuation": False,
            "regexes_to_ignore": [","],
        },
    }
    for name, spec in scoring.FILTER_SPECS.items():
        if name == "custom":
            assert spec.required == ("filter_fn",)
            continue
        kw = args.get(name, {})
        assert set(kw) == set(spec.options), name
        pipe = filters.Pipeline("f", [{"function": name, **kw}])
        filters.apply_pipeline(pipe, [["4 (A)"]], lambda: docs, "t", None)
