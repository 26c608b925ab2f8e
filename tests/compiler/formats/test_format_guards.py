"""Guards of two one-line bugs of #38/#39 (#53 acceptance 4, tests/mutants/run_mutants.py): the ``@gen`` letter
rule reads the letter the answer starts with (anchored), and every sweep variant is judged by its own format's
metric (OLMES), not the base task's cloze metric."""

from __future__ import annotations

import re

from lmeval import compiler
from lmeval.scorer.regex.ops import py_regex_extract
from tests.support import data_dir


def _tasks(*overrides: str) -> dict[str, dict]:
    header, _ = compiler.compile_plan([*overrides, "run.limit=2", "model=tiny", f"run.data_dir={data_dir()}"])
    return {t.name: t.config for t in header.tasks}


def test_gen_letter_rule_reads_the_letter_the_answer_starts_with() -> None:
    cfg = _tasks("+task=arc_easy@gen")["arc_easy@gen"]
    (flt,) = cfg["filter_list"]
    step = flt["filter"][0]
    rx = re.compile(step["regex_pattern"])
    answers = {
        "B": "B",
        " (C) because it is warm": "C",
        "\nD. Oxygen": "D",
        "The answer is B": "[invalid]",  # not a letter answer: no letter is guessed out of the sentence
        "it is (A)": "[invalid]",
    }
    got = {a: py_regex_extract(rx, a, step["group_select"], "[invalid]") for a in answers}
    assert got == answers


def test_each_sweep_variant_is_judged_by_its_formats_metric() -> None:
    tasks = _tasks("+task=arc_challenge@sweep", "+run.sweep={formats:[cf,mcf,gen],seeds:[1]}")
    metric = {name: cfg["format"]["metric"] for name, cfg in tasks.items()}
    assert metric["arc_challenge@mcf+seed1"] == "acc,none"
    assert metric["arc_challenge@gen+seed1"] == "exact_match,letter"
    cf = metric["arc_challenge@cf+seed1"]
    assert cf.endswith(",none") and cf.split(",")[0].startswith("acc") and cf != "acc,none"  # the cloze one
