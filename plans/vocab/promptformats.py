"""Prompt formats in task names (issue #38): ``arc_easy@mcf`` is task ``arc_easy`` compiled in format
``mcf``. The compiler builds such tasks (compiler/formats); ``lmeval diff`` pairs a task with the same task in
another format and names the format as the cause. The names and the separator are this one rule.

A format may carry a variant (sensitivity sweeps): a label style and a few-shot seed, joined by ``+`` in a
fixed order, ``arc_easy@mcf+parens+seed1``. The default variant (OLMES' ``letters``, the run's few-shot seed)
has no suffix, so ``arc_easy@mcf`` in a sweep is the very task ``+task=arc_easy@mcf`` gives. ``cf`` has no
labels. Names stay safe in file names (letters, digits, ``_ @ + .``).

Every format is one ``PromptFormat`` record in one registry (``prompt_format(name)``): what both stages know of
it (its vocabulary, generation or log-likelihood, the metric and filter it is compared on). How it renders a
task is its adapter in compiler/formats (``register_format`` there adds both); no module tests a format's name
elsewhere (tests/compiler/formats/test_format_lookup.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from lmeval.common import quoted
from lmeval.plans.vocab.backends import GENERATION_ONLY_BACKENDS  # noqa: F401 (deprecated here: plans/vocab/backends.py)

OLMES = "olmes"  # OLMES' formats (compiler/formats/olmes.py): variants by label style and few-shot seed
LM_EVAL_05 = "lm-eval-0.5"  # lm-eval 0.5's (issue #55; compiler/formats/lm_eval_05.py), its ``format.vocabulary``


@dataclass(frozen=True)
class PromptFormat:
    """A prompt format as both stages know it; how it renders a task is its adapter's (compiler/formats)."""

    name: str
    vocabulary: str  # OLMES or LM_EVAL_05: the names are distinct, so NAME@mcqa and NAME@mcf never mean one another
    generation: bool  # its tasks generate (generate_until) rather than score each choice's log-likelihood
    metric: str  # the metric its tasks are compared on (a group of them aggregates it)
    filter: str = "none"  # the filter pipeline that metric reads (gen: the label extracted from the generation)
    labelled: bool = True  # its choices carry labels, so a label style varies it (OLMES' cloze has none)
    # the ``METRIC,FILTER`` keys a member of a NAME@best / NAME@sweep group is judged by when its results carry
    # no format record (hand-made results), the first one present; empty: ``acc,none``
    judged_by: tuple[str, ...] = ()
    fallback: bool = False  # the format a backend without log-probabilities takes (GENERATION_ONLY_BACKENDS)

    @property
    def key(self) -> str:
        """``METRIC,FILTER`` of the compared metric."""
        return f"{self.metric},{self.filter}"


_NAME = re.compile(r"[a-z][a-z0-9_]*")
_FORMATS: dict[str, PromptFormat] = {}


def register_prompt_format(f: PromptFormat) -> PromptFormat:
    """Add ``f`` to the one lookup (compiler/formats' ``register_format`` calls this with its adapter)."""
    if not _NAME.fullmatch(f.name) or f.name in (BEST, SWEEP) or f.name.startswith(SEED_PREFIX):
        raise ValueError(f"{quoted(f.name)} cannot name a prompt format (lowercase letters, digits and _)")
    if f.vocabulary not in (OLMES, LM_EVAL_05):
        raise ValueError(f"prompt format {quoted(f.name)}: unknown vocabulary {quoted(f.vocabulary)}")
    have = _FORMATS.get(f.name)
    if have is not None and have != f:
        raise ValueError(f"prompt format {quoted(f.name)} is already registered otherwise")
    _FORMATS[f.name] = f
    return f


def unregister_prompt_format(name: str) -> None:
    """Take ``name`` out of the lookup (a test's toy format); the shipped formats stay."""
    if name in SHIPPED:
        raise ValueError(f"{quoted(name)} is a shipped prompt format")
    _FORMATS.pop(name, None)


def prompt_format(name: str | None) -> PromptFormat | None:
    """The format named ``name`` (no variant suffix), or None."""
    return None if name is None else _FORMATS.get(name)


def format_names(vocabulary: str | None = None) -> tuple[str, ...]:
    """Every registered format's name (of ``vocabulary`` when given), in registration order."""
    return tuple(n for n, f in _FORMATS.items() if vocabulary is None or f.vocabulary == vocabulary)


def fallback_format() -> str:
    """The format multiple-choice tasks take on a backend without log-probabilities (``gen``)."""
    return next(n for n, f in _FORMATS.items() if f.fallback)


SEPARATOR = "@"
# ``NAME@best`` (selection only, not ``run.format``): ``NAME@cf`` and ``NAME@mcf`` plus a group ``NAME@best``
# that reports, per task, the better of the two (OLMES' rule; scorer/groups/best.py); both stay in the results
BEST = "best"
BEST_OF = ("cf", "mcf")
# ``NAME@sweep`` (selection only): every variant ``run.sweep`` lists plus a group ``NAME@sweep`` reporting the
# spread of their scores (scorer/groups/spread.py)
SWEEP = "sweep"
SPREAD = "spread"
VARIANT_SEPARATOR = "+"
SEED_PREFIX = "seed"
DEFAULT_LABEL_STYLE = "letters"
_LABELS = re.compile(r"[a-z][a-z_]*")
_SEED = re.compile(rf"{SEED_PREFIX}(0|[1-9][0-9]{{0,19}})")  # at most 20 digits: then checked against 64 bits
MAX_SEED = (1 << 64) - 1  # a variant's seed, as every integer a plan carries (plans/limits.py)

_ACC = ("acc", "none")
for _f in (
    # OLMES (Gu et al., 2024): cloze (each choice's text), multiple-choice letters, and the letter generated
    PromptFormat("cf", OLMES, False, *_ACC, labelled=False, judged_by=("acc_norm,none", "acc,none")),
    PromptFormat("mcf", OLMES, False, *_ACC, judged_by=("acc,none",)),
    PromptFormat("gen", OLMES, True, "exact_match", "letter", judged_by=("exact_match,letter",), fallback=True),
    # lm-eval 0.5.0.dev1's registry (its format_guide.md); a task records the metric its scorer gives first
    PromptFormat("mcqa", LM_EVAL_05, False, *_ACC),
    PromptFormat("cloze", LM_EVAL_05, False, *_ACC, labelled=False),
    PromptFormat("generate", LM_EVAL_05, True, "exact_match"),
    PromptFormat("cot", LM_EVAL_05, True, "exact_match", labelled=False),
):
    register_prompt_format(_f)
SHIPPED = format_names()
PROMPT_FORMATS = format_names(OLMES)  # cf, mcf, gen: the shipped OLMES formats (the lock compiles each)
LM_EVAL_FORMATS = format_names(LM_EVAL_05)  # mcqa, cloze, generate, cot; also accepted by ``run.format``


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
    f = prompt_format(fmt)
    if f is None or f.vocabulary != OLMES:
        raise VariantError(
            f"unknown prompt format {quoted(fmt)}; expected one of {', '.join(format_names(OLMES))} (OLMES) or "
            f"{', '.join(format_names(LM_EVAL_05))} (lm-eval 0.5)"
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
    if labels is not None and not f.labelled:
        raise VariantError(f"{quoted(suffix)}: the cloze format has no labels ({fmt} varies by seed only)")
    return Variant(fmt, labels, seed)


def variant_of(fmt: str, labels: str, seed: int | None, run_seed: int | None) -> Variant:
    """The variant of a sweep's axes: the default style and the run's seed leave no mark in the name."""
    return Variant(
        fmt,
        None if labels == DEFAULT_LABEL_STYLE or not _labelled(fmt) else labels,
        None if seed == run_seed else seed,
    )


def _labelled(fmt: str) -> bool:
    f = prompt_format(fmt)
    return f is not None and f.labelled


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
