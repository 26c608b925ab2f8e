"""OLMES' prompt formats as adapter objects (issue #52): ``cf`` (cloze), ``mcf`` (lettered multiple choice) and
``gen`` (the letter generated), each an ``OlmesFormat`` registered by name (``registry``). What tells them apart
is data, not their names: whether the choices carry labels, whether the task generates (the contract,
``plans.PromptFormat``), and the few pieces of the prompt a variant of a format may change (the answer prefix,
the delimiter before each answer, the stop sequences of a generation). ``apply.formatted`` does what every
format shares (the task's name, its record, its label style) and asks the adapter for the rest.

- ``cf``: a task written as cloze keeps its own prompts (lm-eval parity of the requests) and is scored with
  every cloze normalisation (``CF_METRICS``); a task written with letters (mmlu) gets OLMES' cloze prompt.
- ``mcf``: OLMES' lettered prompt, scored on the label (``acc``).
- ``gen``: the MCF prompt, a greedy generation, the label extracted by ``GEN_LETTER_REGEX``, exact match.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from lmeval.compiler.formats.adapters import Adapter
from lmeval.compiler.formats.registry import format_adapter, register_format
from lmeval.compiler.formats.templates import (
    ANSWER_PREFIX,
    GEN_LETTER_REGEX,
    GEN_MAX_TOKENS,
    GEN_NUMBER_REGEX,
    GEN_UNTIL,
    LabelStyle,
    cf_choices,
    cf_text,
    gold,
    mcf_choices,
    mcf_text,
)
from lmeval.plans import PromptFormat, Variant, prompt_format

# every cloze normalisation (OLMES: none, per character, per token, PMI against "Answer:"; plans/vocab/scoring.py)
CF_METRICS = ("acc", "acc_norm", "acc_per_token", "acc_pmi")
_FEWSHOT_FIELDS = ("doc_to_text", "doc_to_choice", "doc_to_target", "gen_prefix")
_WRITTEN_AS_CLOZE = "cf"  # ``Adapter.written`` of a task whose own prompts are cloze


@dataclass(frozen=True)
class OlmesFormat:
    """One OLMES-style format: its contract and the parts of the prompt it sets."""

    contract: PromptFormat
    keeps_cloze: bool = False  # a task written as cloze keeps its own prompts (OLMES' cf on lm-eval's tasks)
    answer_prefix: str = ANSWER_PREFIX  # the prompt's last words, before the answer
    target_delimiter: str = " "  # between the prompt and each answer (lm-eval's target_delimiter)
    until: tuple[str, ...] = tuple(GEN_UNTIL)  # a generation's stop sequences
    max_tokens: int = GEN_MAX_TOKENS  # a generation's length

    def __post_init__(self) -> None:
        if self.contract.generation and not self.contract.labelled:
            raise ValueError(f"format {self.contract.name!r}: a generated answer is a label (labelled=True)")

    def compared(self, ad: Adapter) -> str:
        """The ``METRIC,FILTER`` a task in this format is compared on (OLMES): the task's cloze normalisation for
        a cloze format, else the contract's metric."""
        return f"{ad.cf_metric},{self.contract.filter}" if not self.contract.labelled else self.contract.key

    def render(self, cfg: dict[str, Any], out: dict[str, Any], ad: Adapter, style: LabelStyle) -> None:
        """Set ``out``'s (a copy of ``cfg``, already named and recorded) prompts, metrics and filters."""
        c = self.contract
        if self.keeps_cloze and ad.written == _WRITTEN_AS_CLOZE:
            out["metric_list"] = cloze_metrics(cfg, ad.partial)
            return
        fewshot = out.get("fewshot_config")
        if isinstance(fewshot, dict):
            out["fewshot_config"] = {k: v for k, v in fewshot.items() if k not in _FEWSHOT_FIELDS}
        out.pop("gen_prefix", None)
        out["target_delimiter"] = self.target_delimiter
        out["doc_to_target"] = gold(ad.gold)
        if not c.labelled:
            out["doc_to_text"] = cf_text(ad.prefix, ad.question, self.answer_prefix)
            out["doc_to_choice"] = cf_choices(ad.choices)
            out["metric_list"] = cloze_metrics(cfg, partial=False)
            return
        out["doc_to_text"] = mcf_text(ad.prefix, ad.question, ad.choices, style, self.answer_prefix)
        out["doc_to_choice"] = mcf_choices(ad.choices, style)
        metrics = [{"metric": c.metric, "aggregation": "mean", "higher_is_better": True}]
        if not c.generation:
            out["metric_list"] = metrics
            return
        out["output_type"] = "generate_until"
        out["generation_kwargs"] = {"until": list(self.until), "max_gen_toks": self.max_tokens, "do_sample": False}
        out["metric_list"] = metrics
        regex = GEN_NUMBER_REGEX if style.numbers else GEN_LETTER_REGEX
        out["filter_list"] = [
            {
                "name": c.filter,
                "filter": [
                    {"function": "regex", "regex_pattern": regex, "group_select": 0},
                    {"function": "take_first"},
                ],
            }
        ]

    def group_aggregates(self, aggregate: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """A group's ``aggregate_metric_list`` once its members are in this format: its ``acc`` becomes the
        format's metric; a cloze format adds every cloze normalisation the members report, aggregated alike."""
        c = self.contract
        agg = [{**a, "metric": c.metric, "filter_list": [c.filter]} if a["metric"] == "acc" else a for a in aggregate]
        if not c.labelled:
            have = {a["metric"] for a in agg}
            agg += [{**a, "metric": m} for a in agg if a["metric"] == "acc" for m in CF_METRICS if m not in have]
        return agg


def cloze_metrics(cfg: dict[str, Any], partial: bool) -> list[dict[str, Any]]:
    """The task's own metrics, then every cloze normalisation it does not list yet (no PMI for a task scored
    by partial contexts, one per choice: its unconditional continuation would be the same for every choice)."""
    own = [m for m in cfg.get("metric_list") or [] if isinstance(m, dict)]
    names = {m.get("metric") for m in own}
    wanted = [m for m in CF_METRICS if not (partial and m == "acc_pmi")]
    extra = [{"metric": m, "aggregation": "mean", "higher_is_better": True} for m in wanted if m not in names]
    return copy.deepcopy(own) + extra


def olmes_format(name: str | None) -> OlmesFormat | None:
    """The OLMES-style adapter named ``name``, or None (unknown, or lm-eval 0.5's)."""
    adapter = format_adapter(name)
    return adapter if isinstance(adapter, OlmesFormat) else None


def default_variant(name: str | None) -> Variant | None:
    """``run.format``'s variant when it names an OLMES-style format (its default labels, the run's seed)."""
    return Variant(name) if name is not None and olmes_format(name) is not None else None


def _shipped(name: str) -> PromptFormat:
    contract = prompt_format(name)
    assert contract is not None, name
    return contract


for _adapter in (
    OlmesFormat(_shipped("cf"), keeps_cloze=True),
    OlmesFormat(_shipped("mcf")),
    OlmesFormat(_shipped("gen")),
):
    register_format(_adapter)
