"""The scoring vocabulary: which metrics, aggregations and filters the scorer implements, and their options.

The compiler checks every task's ``metric_list``, ``filter_list`` and every group's
``aggregate_metric_list`` against this before a plan is written (a misspelt metric or a regex that does not
compile is a compile error, not a failure after the GPU has run); the scorer implements exactly these
(``tests/scorer/test_vocabulary.py`` holds its registries equal to this module). Custom code stays allowed:
a ``!function`` metric or aggregation, a ``custom`` filter step (``filter_fn: !function ...``), and any
metric name a task's own ``process_results`` returns; that code is checked and run by the scorer, with the
user's consent.

Functions here take the plan's data form of a config (a ``!function`` reference is a map with a
``__function__`` key) and return problems as ``(field, message)`` pairs; the caller words the error.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from lmeval.plans.usercode import is_ref, ref_attr
from lmeval.plans.vocab.promptformats import best_aggregate, spread_aggregate
from lmeval.plans.vocab.regexes import compile_regex

# option kinds: how an option's value is checked
BOOL, INT, POS_INT, INTS, NUMBER, STR, REGEX, REGEXES, MAPPING, FUNCTION, ANY = (
    "bool", "int", "pos_int", "ints", "number", "str", "regex", "regexes", "mapping", "function", "any",
)  # fmt: skip


@dataclass(frozen=True)
class MetricSpec:
    aggregation: str  # default aggregation
    higher_is_better: bool  # default direction
    output_types: tuple[str, ...]  # task output types it applies to
    # options the implementation takes as keyword arguments (option -> kind); for these, an unknown option is
    # an error (lm-eval's call fails with a TypeError). Every other metric ignores the options it is given,
    # as lm-eval does (its YAMLs carry e.g. ignore_case on acc and f1), and so are they not checked.
    options: dict[str, str] = field(default_factory=dict)
    options_for: tuple[str, ...] = ()  # the output types whose implementation reads ``options``


# output_types: the task output types whose results carry the metric (lm-eval 0.4.13's process_results; a
# metric listed for any other output type would silently give no value, or fail at score)
_MC = ("multiple_choice",)
_GEN = ("generate_until",)
METRIC_SPECS: dict[str, MetricSpec] = {
    "acc": MetricSpec("mean", True, ("loglikelihood", "multiple_choice")),
    "acc_norm": MetricSpec("mean", True, _MC),
    "acc_mutual_info": MetricSpec("mean", True, _MC),
    "acc_per_token": MetricSpec("mean", True, _MC),  # OLMES: log-likelihood per continuation token
    "acc_pmi": MetricSpec("mean", True, _MC),  # OLMES: PMI against the unconditional context "Answer:"
    "acc_bytes": MetricSpec("mean", True, _MC),
    "exact_match": MetricSpec(
        "mean",
        True,
        ("generate_until", "multiple_choice"),  # multiple_choice: the gold continuation is greedy (no options)
        {"regexes_to_ignore": REGEXES, "ignore_case": BOOL, "ignore_punctuation": BOOL, "ignore_numbers": BOOL},
        _GEN,
    ),
    "perplexity": MetricSpec("perplexity", False, ("loglikelihood",)),
    "likelihood": MetricSpec("mean", True, _MC),
    "word_perplexity": MetricSpec("weighted_perplexity", False, ("loglikelihood_rolling",)),
    "byte_perplexity": MetricSpec("weighted_perplexity", False, ("loglikelihood_rolling",)),
    "bits_per_byte": MetricSpec("bits_per_byte", False, ("loglikelihood_rolling",)),
    "mcc": MetricSpec("matthews_corrcoef", True, _MC),
    "f1": MetricSpec("f1", True, _MC),  # lm-eval's f1 aggregation is sklearn's binary f1 (it ignores "average")
    "bleu": MetricSpec("bleu", True, _GEN),
    "chrf": MetricSpec("chrf", True, _GEN),
    "chrf++": MetricSpec("chrf++", True, _GEN),
    "ter": MetricSpec("ter", False, _GEN),
    "brier_score": MetricSpec("brier_score", False, _MC),
    "bypass": MetricSpec("bypass", True, _GEN),
    "rouge": MetricSpec("mean", True, _GEN),  # keys rouge1, rouge2, rougeL, rougeLsum
    "pass_at_k": MetricSpec("mean", True, _GEN, {"k": INTS, "timeout": NUMBER}, _GEN),  # keys pass@k (scorer.sandbox)
    "jsonl_spec": MetricSpec("mean", True, _GEN),  # JSONL task specs (scorer.metrics.spec_scoring)
    "tool_call": MetricSpec("mean", True, _GEN),  # keys tool_call, tool_call_unparsed (scorer.toolmatch)
}
BUILT_IN_METRICS = frozenset(METRIC_SPECS)  # lm-eval's and lmeval's own; plans/vocab/extend.py adds others
METRIC_ALIASES: dict[str, str] = {"pass@k": "pass_at_k"}
# metrics whose per-doc value is a dict of several keys: a group can aggregate any of those keys
MULTI_KEY_METRICS = ("rouge", "pass_at_k", "jsonl_spec", "tool_call")
# keys of a metric_list entry that are not options of the metric
METRIC_KEYS = ("metric", "aggregation", "higher_is_better", "hf_evaluate")

# Multiple-choice metrics that score each choice against an unconditional context as well: the plan holds, after
# a document's k conditional requests, k more for each such metric the task lists (in this order), the choice's
# continuation after that context. acc_mutual_info is lm-eval's (an empty context); acc_pmi is OLMES' PMI
# normalisation, log P(choice | prompt) - log P(choice | "Answer:").
PMI_CONTEXT = "Answer:"
UNCONDITIONAL_CONTEXTS: dict[str, str] = {"acc_mutual_info": "", "acc_pmi": PMI_CONTEXT}


def unconditional_metrics(names: Iterable[str]) -> list[str]:
    """The metrics of ``names`` that need unconditional requests, in the order of their blocks in the plan."""
    listed = set(names)
    return [m for m in UNCONDITIONAL_CONTEXTS if m in listed]


DEFAULT_METRICS: dict[str, list[str]] = {
    "loglikelihood": ["perplexity", "acc"],
    "loglikelihood_rolling": ["word_perplexity", "byte_perplexity", "bits_per_byte"],
    "multiple_choice": ["acc", "acc_norm"],
    "generate_until": ["exact_match"],
}

AGGREGATIONS: tuple[str, ...] = (
    "mean", "median", "nanmean", "perplexity", "weighted_perplexity", "bits_per_byte", "f1", "matthews_corrcoef",
    "bleu", "chrf", "chrf++", "ter", "brier_score", "bypass",
)  # fmt: skip
ADDED_AGGREGATIONS: list[str] = []  # names the scorer registered in this process (plans/vocab/extend.py)


def aggregation_names() -> tuple[str, ...]:
    """The aggregation names a task may use: lm-eval's and any the scorer registered in this process."""
    return AGGREGATIONS + tuple(ADDED_AGGREGATIONS)


GROUP_AGGREGATIONS: tuple[str, ...] = ("mean",)  # a written group's; NAME@best and NAME@sweep make their own
GROUP_METRIC_KEYS = ("metric", "aggregation", "weight_by_size", "filter_list")


@dataclass(frozen=True)
class FilterSpec:
    options: dict[str, str] = field(default_factory=dict)  # argument -> kind
    required: tuple[str, ...] = ()


_REGEX_ARGS = {"regex_pattern": REGEX, "group_select": INT, "fallback": STR}
FILTER_SPECS: dict[str, FilterSpec] = {
    "regex": FilterSpec(dict(_REGEX_ARGS)),
    "take_first": FilterSpec(),
    "take_first_k": FilterSpec({"k": POS_INT}, required=("k",)),
    "majority_vote": FilterSpec(),
    "lowercase": FilterSpec(),
    "uppercase": FilterSpec(),
    "remove_whitespace": FilterSpec(),
    "map": FilterSpec({"mapping_dict": MAPPING, "default_value": ANY}),
    "multi_choice_regex": FilterSpec(
        {**_REGEX_ARGS, "ignore_case": BOOL, "ignore_punctuation": BOOL, "regexes_to_ignore": REGEXES}
    ),
    "custom": FilterSpec({"filter_fn": FUNCTION}, required=("filter_fn",)),
}

Problem = tuple[str, str]  # (field, message)


def _hint(name: str, options: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(options), n=3, cutoff=0.6)
    return f" (did you mean {', '.join(close)}?)" if close else ""


def _check_options(
    given: dict[str, Any], options: dict[str, str], where: str, what: str, listing: str, context: str = ""
) -> list[tuple[str, str]]:
    """(field, problem) for each of ``given`` that is not in ``options`` ("unknown WHAT[ in CONTEXT]; LISTING:
    ...") or not a value of its kind (the problem[, then `` (CONTEXT)``])."""
    out: list[tuple[str, str]] = []
    known = ", ".join(sorted(options)) or "none"
    for key, value in given.items():
        kind = options.get(key)
        if kind is None:
            out.append(
                (
                    f"{where}.{key}",
                    f"unknown {what}{_hint(key, options)}{' in ' + context if context else ''}; {listing}: {known}",
                )
            )
            continue
        err = check_value(kind, value)
        if err is not None:
            out.append((f"{where}.{key}", f"{err} ({context})" if context else err))
    return out


def check_value(kind: str, v: Any) -> str | None:
    """None when ``v`` is a valid value of an option of ``kind``, else what is wrong."""
    if kind == ANY:
        return None
    if kind == BOOL:  # lm-eval tests truthiness (its own YAMLs rely on it): refuse only strings that read false
        if isinstance(v, str) and v.strip().lower() in ("", "false", "no", "off", "0", "n", "f", "none", "null"):
            return f"must be true or false, got the string {v!r} (a non-empty string counts as true)"
        return None
    if kind in (INT, POS_INT):
        if not isinstance(v, int) or isinstance(v, bool) or (kind == POS_INT and v < 1):
            return f"must be {'a positive' if kind == POS_INT else 'an'} integer, got {v!r}"
        return None
    if kind == INTS:
        vals = v if isinstance(v, list) else [v]
        if not vals or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 1 for x in vals):
            return f"must be a positive integer or a list of them, got {v!r}"
        return None
    if kind == NUMBER:
        ok = isinstance(v, int | float) and not isinstance(v, bool) and v > 0
        return None if ok else f"must be a positive number, got {v!r}"
    if kind == STR:
        return None if isinstance(v, str) else f"must be a string, got {v!r}"
    if kind == MAPPING:
        return None if isinstance(v, dict) else f"must be a mapping, got {v!r}"
    if kind == FUNCTION:
        return None if is_ref(v) else f"must be a '!function module.fn' reference, got {v!r}"
    if kind == REGEX:
        if not isinstance(v, str):
            return f"must be a regular expression (a string), got {v!r}"
        err = compile_regex(v)
        return None if err is None else f"invalid regular expression {v!r}: {err}"
    if kind == REGEXES:
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            return f"must be a list of regular expressions, got {v!r}"
        for x in v:
            err = compile_regex(x)
            if err is not None:
                return f"invalid regular expression {x!r}: {err}"
        return None
    raise ValueError(f"unknown option kind {kind!r}")


def check_metric_list(output_type: str, metric_list: Any, process_results: bool) -> list[Problem]:
    """Problems of a task's ``metric_list`` (None: the output type's defaults). ``process_results``: the task
    computes its own per-doc values, so metric names are the keys it returns (any name)."""
    if metric_list is None:
        return []
    if not isinstance(metric_list, list):
        return [("metric_list", f"must be a list of mappings, got {metric_list!r}")]
    out: list[Problem] = []
    for i, mc in enumerate(metric_list):
        where = f"metric_list[{i}]"
        if not isinstance(mc, dict) or "metric" not in mc:
            out.append((where, "must be a mapping with a 'metric' key"))
            continue
        raw = mc["metric"]
        builtin: MetricSpec | None = None
        if is_ref(raw):
            name = ref_attr(raw)
        elif isinstance(raw, str) and raw:
            name = raw
            builtin = METRIC_SPECS.get(METRIC_ALIASES.get(raw, raw))
            if builtin is None and not process_results:
                known = [m for m, d in METRIC_SPECS.items() if output_type in d.output_types]
                out.append(
                    (
                        f"{where}.metric",
                        f"unknown metric {raw!r}{_hint(raw, METRIC_SPECS)}; {output_type} tasks can use "
                        f"{', '.join(known)}, a '!function' metric, or metrics their process_results returns",
                    )
                )
                continue
            if builtin is not None and not process_results and output_type not in builtin.output_types:
                out.append(
                    (
                        f"{where}.metric",
                        f"metric {raw!r} does not apply to {output_type} tasks (only to "
                        f"{', '.join(builtin.output_types)})",
                    )
                )
                continue
        else:
            out.append((f"{where}.metric", f"must be a metric name or a '!function', got {raw!r}"))
            continue
        if builtin is not None and not process_results and output_type in builtin.options_for:
            given = {k: v for k, v in mc.items() if k not in METRIC_KEYS}
            out += _check_options(given, builtin.options, where, f"option of metric {name!r}", "its options")
        if "aggregation" in mc:
            agg = mc["aggregation"]
            if isinstance(agg, str):
                known_aggs = aggregation_names()
                if agg not in known_aggs:
                    aggs = ", ".join(known_aggs)
                    msg = f"unknown aggregation {agg!r}{_hint(agg, known_aggs)}; known: {aggs} or a '!function'"
                    out.append((f"{where}.aggregation", msg))
            elif not is_ref(agg):
                out.append((f"{where}.aggregation", f"must be an aggregation name or a '!function', got {agg!r}"))
        elif builtin is None:
            out.append((f"{where}.aggregation", f"metric {name!r} needs an aggregation (none is known for it)"))
        if "higher_is_better" in mc and not isinstance(mc["higher_is_better"], bool):
            out.append((f"{where}.higher_is_better", f"must be true or false, got {mc['higher_is_better']!r}"))
        if "hf_evaluate" in mc and not isinstance(mc["hf_evaluate"], bool):
            out.append((f"{where}.hf_evaluate", f"must be true or false, got {mc['hf_evaluate']!r}"))
    return out


def check_filter_list(filter_list: Any) -> list[Problem]:
    """Problems of a task's ``filter_list`` (None: lm-eval's single take_first pipeline)."""
    if filter_list is None:
        return []
    if not isinstance(filter_list, list):
        return [("filter_list", f"must be a list of mappings, got {filter_list!r}")]
    out: list[Problem] = []
    names: set[str] = set()
    for i, fc in enumerate(filter_list):
        where = f"filter_list[{i}]"
        if not isinstance(fc, dict):
            out.append((where, f"must be a mapping with 'name' and 'filter', got {fc!r}"))
            continue
        name, steps = fc.get("name"), fc.get("filter")
        if not isinstance(name, str) or not name:
            out.append((f"{where}.name", f"must be a non-empty string, got {name!r}"))
            continue
        if name in names:
            out.append((f"{where}.name", f"filter {name!r} is defined twice"))
        names.add(name)
        extra = sorted(set(fc) - {"name", "filter"})
        if extra:
            out.append((f"{where}.{extra[0]}", f"unknown key of filter {name!r} (a filter has 'name' and 'filter')"))
        if not isinstance(steps, list) or not steps:
            out.append((f"{where}.filter", f"filter {name!r} needs a non-empty list of steps, got {steps!r}"))
            continue
        for j, st in enumerate(steps):
            sw = f"{where}.filter[{j}]"
            fn = st.get("function") if isinstance(st, dict) else None
            if is_ref(fn):  # lm-eval's filter classes: the scorer runs user filters as ``custom`` steps
                out.append(
                    (
                        f"{sw}.function",
                        f"filter {name!r}: a '!function' filter class is not supported; "
                        f"use function: custom with filter_fn: '!function module.fn' "
                        f"(fn(resps, docs) -> filtered resps)",
                    )
                )
                continue
            if not isinstance(fn, str) or fn not in FILTER_SPECS:
                hint = _hint(fn, FILTER_SPECS) if isinstance(fn, str) else ""
                out.append(
                    (
                        f"{sw}.function",
                        f"unknown filter function {fn!r}{hint} in filter {name!r}; known: {', '.join(FILTER_SPECS)}",
                    )
                )
                continue
            spec = FILTER_SPECS[fn]
            assert isinstance(st, dict)
            args = {k: v for k, v in st.items() if k != "function"}
            what = f"argument of filter function {fn!r}"
            out += _check_options(args, spec.options, sw, what, "its arguments", f"filter {name!r}")
            for arg in spec.required:
                if arg not in st:
                    out.append((f"{sw}.{arg}", f"filter function {fn!r} needs {arg!r} (filter {name!r})"))
    return out


def produced_metrics(output_type: str, metric_list: Any, process_results: bool) -> set[str] | None:
    """Metric names a task's results carry (None: cannot be known before scoring: process_results, custom
    or multi-key metrics)."""
    if metric_list is None:
        return set(DEFAULT_METRICS.get(output_type, []))
    names: set[str] = set()
    for mc in metric_list if isinstance(metric_list, list) else []:
        raw = mc.get("metric") if isinstance(mc, dict) else None
        if process_results or is_ref(raw) or not isinstance(raw, str):
            return None
        if METRIC_ALIASES.get(raw, raw) in MULTI_KEY_METRICS:
            return None
        names.add(raw)
    return names


def check_group_metric(entry: Any, produced: Iterable[set[str] | None]) -> list[Problem]:
    """Problems of one ``aggregate_metric_list`` entry of a group whose leaf tasks produce ``produced``."""
    if not isinstance(entry, dict) or "metric" not in entry:
        return [("aggregate_metric_list", f"entries need a 'metric' key, got {entry!r}")]
    out: list[Problem] = []
    metric = entry["metric"]
    if not isinstance(metric, str) or not metric:
        return [("aggregate_metric_list.metric", f"must be a metric name, got {metric!r}")]
    if entry in (best_aggregate(), spread_aggregate()):
        return []  # the compiler's NAME@best / NAME@sweep groups (plans/vocab/promptformats.py), over members' scores
    for key in sorted(set(entry) - set(GROUP_METRIC_KEYS)):
        known = ", ".join(GROUP_METRIC_KEYS)
        msg = f"unknown key{_hint(key, GROUP_METRIC_KEYS)} of group metric {metric!r}; known: {known}"
        out.append((f"aggregate_metric_list.{key}", msg))
    agg = entry.get("aggregation", "mean")
    if agg not in GROUP_AGGREGATIONS:
        msg = f"group metric {metric!r}: only {', '.join(GROUP_AGGREGATIONS)} aggregation is supported, got {agg!r}"
        out.append(("aggregate_metric_list.aggregation", msg))
    if "weight_by_size" in entry and not isinstance(entry["weight_by_size"], bool):
        out.append(("aggregate_metric_list.weight_by_size", f"must be true or false, got {entry['weight_by_size']!r}"))
    fl = entry.get("filter_list")
    if fl is not None and not (isinstance(fl, str) or (isinstance(fl, list) and all(isinstance(f, str) for f in fl))):
        out.append(("aggregate_metric_list.filter_list", f"must be a filter name or a list of them, got {fl!r}"))
    sets = list(produced)
    if sets and all(s is not None and metric not in s for s in sets):
        have = sorted(set().union(*(s for s in sets if s is not None)))
        msg = f"no task of the group has metric {metric!r}{_hint(metric, have)}; its tasks have {', '.join(have)}"
        out.append(("aggregate_metric_list.metric", msg))
    return out
