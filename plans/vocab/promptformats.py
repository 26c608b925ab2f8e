"""Prompt formats in task names (issue #38): ``arc_easy@mcf`` is task ``arc_easy`` compiled in format
``mcf``. The compiler builds such tasks (compiler/formats); ``lmeval diff`` pairs a task with the same task in
another format and names the format as the cause. The names and the separator are this one rule.

A format may carry a variant (sensitivity sweeps): a label style and a few-shot seed, joined by ``+`` in a
fixed order, ``arc_easy@mcf+parens+seed1``. The default variant (OLMES' ``letters``, the run's few-shot seed)
has no suffix, so ``arc_easy@mcf`` in a sweep is the very task ``+task=arc_easy@mcf`` gives. ``cf`` has no
labels. Names stay safe in file names (letters, digits, ``_ @ + .``)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from lmeval.common import quoted

PROMPT_FORMATS = ("cf", "mcf", "gen")  # cloze, multiple-choice letters, generated letter (OLMES CF, MCF; generation)
SEPARATOR = "@"
# lm-eval 0.5's format names (issue #55; compiler/formats/lm_eval_05.py): a second vocabulary beside OLMES',
# distinct names, so ``NAME@mcqa`` and ``NAME@mcf`` never mean one another; also accepted by ``run.format``
LM_EVAL_FORMATS = ("mcqa", "cloze", "generate", "cot")
# ``NAME@best`` (selection only, not ``run.format``): ``NAME@cf`` and ``NAME@mcf`` plus a group ``NAME@best``
# that reports, per task, the better of the two (OLMES' rule; scorer/group_best.py); both stay in the results
BEST = "best"
BEST_OF = ("cf", "mcf")
# ``NAME@sweep`` (selection only): every variant ``run.sweep`` lists plus a group ``NAME@sweep`` reporting the
# spread of their scores (scorer/group_spread.py)
SWEEP = "sweep"
SPREAD = "spread"
# backends that return no log-probabilities of given text (a chat endpoint): a plan compiled for one takes
# multiple-choice tasks by generation (``NAME@gen``) unless run.format says otherwise; the executor refuses
# log-likelihood requests there
GENERATION_ONLY_BACKENDS = ("openai-chat",)
VARIANT_SEPARATOR = "+"
SEED_PREFIX = "seed"
DEFAULT_LABEL_STYLE = "letters"
_LABELS = re.compile(r"[a-z][a-z_]*")
_SEED = re.compile(rf"{SEED_PREFIX}(0|[1-9][0-9]{{0,19}})")  # at most 20 digits: then checked against 64 bits
MAX_SEED = (1 << 64) - 1  # a variant's seed, as every integer a plan carries (plans/limits.py)


@dataclass(frozen=True)
class Variant:
    """A format and its variant: ``labels`` None is the default style, ``seed`` None the run's few-shot seed."""

    fmt: str
    labels: str | None = None
    seed: int | None = None

    def suffix(self) -> str:
        parts = [self.fmt]
        if self.labels is not None:
            parts.append(self.labels)
        if self.seed is not None:
            parts.append(f"{SEED_PREFIX}{self.seed}")
        return VARIANT_SEPARATOR.join(parts)


class VariantError(ValueError):
    """A format suffix that is not ``FMT[+LABELS][+seedN]`` in its canonical spelling."""


def parse_variant(suffix: str) -> Variant:
    """``mcf+parens+seed1`` -> Variant("mcf", "parens", 1); the spelling must be canonical (the one
    ``Variant.suffix`` writes), so one variant has one name."""
    fmt, *rest = suffix.split(VARIANT_SEPARATOR)
    if fmt not in PROMPT_FORMATS:
        raise VariantError(
            f"unknown prompt format {quoted(fmt)}; expected one of {', '.join(PROMPT_FORMATS)} (OLMES) or "
            f"{', '.join(LM_EVAL_FORMATS)} (lm-eval 0.5)"
        )
    labels: str | None = None
    seed: int | None = None
    for i, part in enumerate(rest):
        m = _SEED.fullmatch(part)
        if m is not None and i == len(rest) - 1:
            seed = int(m.group(1))
            if seed > MAX_SEED:
                raise VariantError(f"{quoted(suffix)}: the seed is above 2**64 - 1 (a plan holds 64-bit integers)")
        elif i == 0 and _LABELS.fullmatch(part) and not part.startswith(SEED_PREFIX):
            labels = part
        else:
            raise VariantError(f"{quoted(suffix)}: a variant is FORMAT[+LABELS][+seedN] (e.g. mcf+parens+seed1)")
    if labels == DEFAULT_LABEL_STYLE:
        raise VariantError(f"{quoted(suffix)}: {DEFAULT_LABEL_STYLE} is the default label style; leave it out")
    if labels is not None and fmt == "cf":
        raise VariantError(f"{quoted(suffix)}: the cloze format has no labels (cf varies by seed only)")
    return Variant(fmt, labels, seed)


def variant_of(fmt: str, labels: str, seed: int | None, run_seed: int | None) -> Variant:
    """The variant of a sweep's axes: the default style and the run's seed leave no mark in the name."""
    return Variant(
        fmt,
        None if labels == DEFAULT_LABEL_STYLE or fmt == "cf" else labels,
        None if seed == run_seed else seed,
    )


def best_aggregate() -> dict[str, object]:
    """The ``aggregate_metric_list`` entry of a ``NAME@best`` group (its result keys: ``best,none``, ...)."""
    return {"metric": BEST, "aggregation": BEST, "filter_list": ["none"]}


def spread_aggregate() -> dict[str, object]:
    """The ``aggregate_metric_list`` entry of a ``NAME@sweep`` group (its keys: ``spread_min,none``, ...)."""
    return {"metric": SPREAD, "aggregation": SPREAD, "filter_list": ["none"]}


def split_name(name: str) -> tuple[str, str | None]:
    """``arc_easy@mcf`` -> ("arc_easy", "mcf"), ``arc_easy@mcf+parens`` -> ("arc_easy", "mcf+parens"); a name
    without the separator has no format."""
    if SEPARATOR not in name:
        return name, None
    base, _, fmt = name.rpartition(SEPARATOR)
    return base, fmt


def format_of(name: str) -> str | None:
    """The prompt format of a task name without its variant (``arc_easy@mcf+parens`` -> ``mcf``)."""
    suffix = split_name(name)[1]
    return None if suffix is None else suffix.split(VARIANT_SEPARATOR)[0]


def format_name(base: str, fmt: str) -> str:
    return f"{base}{SEPARATOR}{fmt}"
