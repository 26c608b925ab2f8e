"""Prompt formats in task names (issue #38): ``arc_easy@mcf`` is task ``arc_easy`` compiled in format
``mcf``. The compiler builds such tasks (compiler/formats); ``lmeval diff`` pairs a task with the same task in
another format and names the format as the cause. The names and the separator are this one rule."""

from __future__ import annotations

PROMPT_FORMATS = ("cf", "mcf", "gen")  # cloze, multiple-choice letters, generated letter (OLMES CF, MCF; generation)
SEPARATOR = "@"
# ``NAME@best`` (selection only, not ``run.format``): ``NAME@cf`` and ``NAME@mcf`` plus a group ``NAME@best``
# that reports, per task, the better of the two (OLMES' rule; scorer/group_best.py); both stay in the results
BEST = "best"
BEST_OF = ("cf", "mcf")


def best_aggregate() -> dict[str, object]:
    """The ``aggregate_metric_list`` entry of a ``NAME@best`` group (its result keys: ``best,none``, ...)."""
    return {"metric": BEST, "aggregation": BEST, "filter_list": ["none"]}


def split_name(name: str) -> tuple[str, str | None]:
    """``arc_easy@mcf`` -> ("arc_easy", "mcf"); a name without the separator has no format."""
    if SEPARATOR not in name:
        return name, None
    base, _, fmt = name.rpartition(SEPARATOR)
    return base, fmt


def format_name(base: str, fmt: str) -> str:
    return f"{base}{SEPARATOR}{fmt}"
