"""Prompt formats behind one lookup (#52): a format is one adapter object registered by name, its contract
(``plans.PromptFormat``) what the scorer reads too; no module outside the lookup and the adapters tests a
format's name (an AST scan, with planted cases); a toy format registered here compiles a real task."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from lmeval import compiler
from lmeval.compiler import CompileError
from lmeval.compiler.formats import (
    OlmesFormat,
    format_adapter,
    lm_eval_05_format,
    olmes_format,
    register_format,
    unregister_format,
)
from lmeval.plans import (
    BEST,
    LM_EVAL_05,
    OLMES,
    SWEEP,
    DocRecord,
    InstanceRecord,
    PlanHeader,
    PromptFormat,
    VariantError,
    format_names,
    parse_variant,
    prompt_format,
)
from tests.support import jsonl_rows

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = ("common", "plans", "compiler", "executor", "scorer", "diff", "contamination", "lock", "report", "lmeval")
# where a format's name may be spelt: the lookup (the contract's module, wherever plans/ keeps it) and the
# adapters (compiler/formats/)
ADAPTERS_DIR = "compiler/formats/"
LOOKUP_MODULE = "promptformats.py"
NAMES = frozenset((*format_names(), BEST, SWEEP))


def _literals(node: ast.AST) -> set[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return {s for e in node.elts for s in _literals(e)}
    return set()


def name_branches(source: str, names: frozenset[str] = NAMES) -> list[str]:
    """Every place ``source`` tests a value against format names: a comparison (``fmt == "mcf"``,
    ``fmt in ("cf", "mcf")``), a ``case "gen":`` or a table keyed by two or more of them."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            hit = set().union(*(_literals(x) for x in (node.left, *node.comparators))) & names
            if hit:
                found.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.MatchValue) and _literals(node.value) & names:
            found.append((node.lineno, f"case {ast.unparse(node.value)}"))
        elif isinstance(node, ast.Dict):
            keys = set().union(set(), *(_literals(k) for k in node.keys if k is not None)) & names
            if len(keys) > 1:
                found.append((node.lineno, f"a table keyed by {sorted(keys)}"))
    return [f"{line}: {what}" for line, what in sorted(found)]


def _product_sources() -> Iterator[tuple[str, str]]:
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            if any((ROOT / p).is_symlink() for p in path.relative_to(ROOT).parents):
                continue  # lmeval/compiler -> ../compiler: read once, under its own folder
            yield path.relative_to(ROOT).as_posix(), path.read_text(encoding="utf-8")


def test_no_module_outside_the_lookup_tests_a_formats_name() -> None:
    seen = {rel for rel, _ in _product_sources()}
    assert "compiler/tasks/expander.py" in seen and "scorer/groups/members.py" in seen  # the scan reads them
    found = {
        rel: hits
        for rel, source in _product_sources()
        if not (rel.startswith(ADAPTERS_DIR) or rel.endswith("/" + LOOKUP_MODULE)) and (hits := name_branches(source))
    }
    assert found == {}, f"read the format's record (plans.prompt_format / compiler.formats adapters): {found}"


def test_a_planted_branch_on_a_formats_name_is_found() -> None:
    planted = (
        "def metric(fmt, kind):\n"
        "    if fmt == 'mcf':\n"
        "        return 'acc'\n"
        "    if fmt in ('cf', 'cot'):\n"
        "        return 'acc_norm'\n"
        "    match fmt:\n"
        "        case 'gen':\n"
        "            return 'exact_match'\n"
        "    if kind == 'generation' or fmt == BEST:\n"  # neither is a format's name spelt out
        "        return None\n"
        "KEYS = {'cf': 1, 'mcqa': 2, 'other': 3}\n"
        "ONE = {'cf': 1}\n"
    )
    assert name_branches(planted) == [
        "2: fmt == 'mcf'",
        "4: fmt in ('cf', 'cot')",
        "7: case 'gen'",
        "11: a table keyed by ['cf', 'mcqa']",
    ]


def test_every_format_is_one_record_and_one_adapter() -> None:
    assert format_names(OLMES) == ("cf", "mcf", "gen")
    assert format_names(LM_EVAL_05) == ("mcqa", "cloze", "generate", "cot")
    for name in format_names():
        adapter = format_adapter(name)
        assert adapter is not None and adapter.contract == prompt_format(name)
    assert olmes_format("mcqa") is None and lm_eval_05_format("mcf") is None  # two vocabularies, distinct names
    gen = prompt_format("gen")
    assert gen is not None and gen.generation and gen.key == "exact_match,letter" and gen.fallback
    with pytest.raises(ValueError, match="already registered otherwise"):
        register_format(OlmesFormat(replace(prompt_format("mcf") or gen, metric="acc_norm")))
    with pytest.raises(ValueError, match="cannot name a prompt format"):
        register_format(OlmesFormat(PromptFormat(BEST, OLMES, False, "acc")))
    with pytest.raises(ValueError, match="shipped"):
        unregister_format("cf")


# a cloze variant: OLMES' cloze prompt ending in "A:", each choice after a newline instead of a space
TOY = OlmesFormat(PromptFormat("toy", OLMES, False, "acc", labelled=False), answer_prefix="A:", target_delimiter="\n")


@pytest.fixture
def toy() -> Iterator[OlmesFormat]:
    register_format(TOY)
    try:
        yield TOY
    finally:
        unregister_format("toy")
    assert prompt_format("toy") is None and format_adapter("toy") is None


def _compile(data: Path, *overrides: str) -> tuple[PlanHeader, list[DocRecord], list[InstanceRecord]]:
    header, records = compiler.compile_plan([f"run.data_dir={data}", "run.limit=3", *overrides])
    return (
        header,
        [r for r in records if isinstance(r, DocRecord)],
        [r for r in records if isinstance(r, InstanceRecord)],
    )


def test_a_format_registered_here_compiles_a_real_task(toy: OlmesFormat, data: Path) -> None:
    """One ``register_format`` call: ``arc_easy@toy`` compiles on the reference data, each prompt OLMES' cloze
    prompt ending in ``A:``, each choice continued after a newline; the record names the format and the scorer
    side knows it."""
    header, docs, insts = _compile(data, "run.tasks=[arc_easy@toy]")
    (task,) = header.tasks
    assert task.name == "arc_easy@toy" and task.config["format"]["name"] == "toy"
    assert task.config["format"]["metric"] == "acc_norm,none"  # arc_easy's cloze normalisation (OLMES)
    rows = jsonl_rows("arc_easy", "test", limit=3)
    for doc_id, row in enumerate(rows):
        choices = row["choices"]["text"]
        mine = sorted((i for i in insts if i.doc_id == doc_id), key=lambda i: i.idx)[: len(choices)]
        assert [i.context for i in mine] == [f"Question: {row['question']}\nA:"] * len(choices)
        assert [i.continuation for i in mine] == [f"\n{c}" for c in choices]
        assert docs[doc_id].target == row["choices"]["label"].index(row["answerKey"])
    assert prompt_format("toy") == toy.contract  # the record every stage reads (plans)
    with pytest.raises(VariantError, match="cloze format has no labels"):
        parse_variant("toy+parens")
    # run.format and a sweep take it too, as they take the shipped formats
    header2, _, _ = _compile(data, "run.tasks=[arc_easy,gsm8k]", "run.format=toy")
    assert [t.name for t in header2.tasks] == ["arc_easy@toy", "gsm8k"]
    header3, _, _ = _compile(data, "run.tasks=[arc_easy@sweep]", "run.sweep={formats: [toy, mcf], seeds: [1]}")
    assert [t.name for t in header3.tasks] == ["arc_easy@mcf+seed1", "arc_easy@toy+seed1"]


def test_an_unregistered_format_is_refused(data: Path) -> None:
    with pytest.raises(CompileError, match="unknown prompt format 'toy'"):
        _compile(data, "run.tasks=[arc_easy@toy]")


def test_an_lm_eval_05_format_registered_here_is_selected_by_name(data: Path) -> None:
    """lm-eval 0.5's vocabulary the same way: ``mcqa`` with another answer prompt, one registration; its
    requests are ``@mcqa``'s but for the prompt's last words."""
    mcqa = lm_eval_05_format("mcqa")
    assert mcqa is not None
    register_format(replace(mcqa, name="mcqa_fr", answer_prompt="Réponse :"))
    try:
        _, _, theirs = _compile(data, "run.tasks=[arc_easy@mcqa_fr]")
    finally:
        unregister_format("mcqa_fr")
    _, _, ours = _compile(data, "run.tasks=[arc_easy@mcqa]")
    assert [i.task for i in theirs] == ["arc_easy@mcqa_fr"] * len(ours)
    assert all(i.context.endswith("\nRéponse :") for i in theirs)
    assert [i.context.removesuffix("Réponse :") for i in theirs] == [i.context.removesuffix("Answer:") for i in ours]
    assert [i.continuation for i in theirs] == [i.continuation for i in ours]
