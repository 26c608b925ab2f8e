"""Spec scoring: each post-process rule and metric on a hand-checked case, and the aggregation."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from lmeval.plans.vocab import jsonl_spec
from lmeval.scorer.metrics.spec_scoring import (
    _RULE_FUNCS,
    SpecScoringError,
    aggregate_spec,
    corpus_bleu,
    post_process,
    score_spec_doc,
    score_spec_row,
    score_spec_rows,
    token_f1,
)
from tests.bounds import SCORES

DATA = Path(os.environ.get("LMEVAL_DATA_DIR", Path(__file__).resolve().parents[2] / ".." / "shared" / "data"))

# sacrebleu, worked by hand: hyp "the cat sat on the mat" vs ref "the cat sat on a mat" has clipped n-gram
# precisions 5/6, 3/5, 2/4, 1/3 and no brevity penalty, so BLEU = (5/6 * 3/5 * 2/4 * 1/3) ** (1/4).
HYP, REF = "the cat sat on the mat", "the cat sat on a mat"
SENTENCE_BLEU = (1 / 12) ** 0.25
# the same pair plus an exact 6-token match, pooled: (11/12 * 8/10 * 6/8 * 4/6) ** (1/4)
CORPUS_BLEU = (44 / 120) ** 0.25


def doc(metric: str, rule: str, targets: list[str], category: str = "arithmetic", **extra: Any) -> dict[str, Any]:
    return {
        "task_id": f"t-{metric}-{rule}",
        "category": category,
        "prompt": "Q",
        "targets": targets,
        "metric_name": metric,
        "post_process": rule,
        **extra,
    }


# --- post-process rules ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rule", "text", "expected"),
    [
        ("none", " Paris \n", " Paris \n"),
        ("strip_whitespace", " \t 42 \n", "42"),
        ("strip_whitespace", "a b", "a b"),  # inner whitespace stays
        ("lower", "PaRiS Ü", "paris ü"),
        ("extract_letter", "I think (c)... so the answer is C, not B", "C"),  # I, T are not in A-E
        ("extract_letter", "Answer: B", "A"),  # literally the first A-E character: the A of "Answer"
        ("extract_letter", "none of them", ""),
        ("extract_letter", "e", ""),  # lowercase letters do not count
        (
            "extract_code_block",
            "Here:\n```python\ndef f():\n    return 1\n```\nthen ```x``` more",
            "def f():\n    return 1\n",
        ),
        ("extract_code_block", "```\nprint(1)\n```", "print(1)\n"),
        ("extract_code_block", "def f(): return 2", "def f(): return 2"),  # no fence: bare code
        ("extract_code_block", "```py\nx = 1\n", "x = 1\n"),  # unclosed: to the end
        ("extract_first_line", "\n   \n  42  \nfoo\n", "42"),
        ("extract_first_line", "only", "only"),
        ("extract_first_line", "\n\n", ""),
    ],
)
def test_post_process(rule: str, text: str, expected: str) -> None:
    assert post_process(rule, text) == expected


def test_every_contract_rule_and_metric_is_scored() -> None:
    """The scorer implements exactly the vocabulary the compiler validates against (plans/vocab/jsonl_spec.py)."""
    assert set(_RULE_FUNCS) == set(jsonl_spec.POST_PROCESS)
    for metric in jsonl_spec.SPEC_METRICS:
        targets = ["assert True"] if metric == "code_exec" else ["x"]
        assert score_spec_row(doc(metric, "none", targets), "x")["metric_name"] == metric
    assert post_process("extract_letter", "xyz" + jsonl_spec.MCQ_LETTERS[-1]) == jsonl_spec.MCQ_LETTERS[-1]


def test_unknown_rule_is_an_error() -> None:
    with pytest.raises(SpecScoringError, match="strip"):
        post_process("strip", "x")


# --- metrics ----------------------------------------------------------------------------------------------


def test_exact_match_any_target() -> None:
    d = doc("exact_match", "strip_whitespace", ["72", "72.0"])
    assert score_spec_doc(d, " 72.0\n") == {"exact_match": 1.0}
    assert score_spec_doc(d, "72.") == {"exact_match": 0.0}
    assert score_spec_doc(doc("exact_match", "none", ["72"]), " 72") == {"exact_match": 0.0}


def test_normalising_rules_apply_to_targets() -> None:
    d = doc("exact_match", "lower", ["Paris"])
    assert score_spec_doc(d, "PARIS") == {"exact_match": 1.0}
    row = score_spec_row(d, "PARIS")
    assert row["prediction"] == "paris" and row["targets"] == ["paris"]


def test_extraction_rules_leave_targets_alone() -> None:
    d = doc("exact_match", "extract_first_line", ["the answer\nis 4"])
    assert score_spec_doc(d, "the answer\nis 4") == {"exact_match": 0.0}
    mcq = doc("exact_match", "extract_letter", ["B"], category="mcq")
    assert score_spec_doc(mcq, "The correct option is (B).") == {"exact_match": 1.0}
    assert score_spec_doc(mcq, "(D) surely") == {"exact_match": 0.0}


def test_accuracy_is_label_equality_ignoring_outer_whitespace() -> None:
    d = doc("accuracy", "none", ["positive"], category="classification")
    assert score_spec_doc(d, " positive\n") == {"accuracy": 1.0}
    assert score_spec_doc(d, "positive!") == {"accuracy": 0.0}
    assert score_spec_doc(d, "negative") == {"accuracy": 0.0}
    # the same response fails exact_match, which compares whole strings
    assert score_spec_doc(doc("exact_match", "none", ["positive"]), " positive\n") == {"exact_match": 0.0}


def test_token_f1() -> None:
    # pred [the, cat, sat] vs gold [the, cat, sat, down]: P = 1, R = 3/4, F1 = 6/7
    assert token_f1("the cat sat", "The cat sat down.") == pytest.approx(6 / 7)
    assert token_f1("the the", "the") == pytest.approx(2 / 3)  # multiset: one 'the' matches
    assert token_f1("", "") == 1.0
    assert token_f1("x", "") == 0.0
    d = doc("f1", "none", ["a dog", "The cat sat down."], category="summary")
    assert score_spec_doc(d, "the cat, sat")["f1"] == pytest.approx(6 / 7)  # best target


def test_bleu_4_sentence_score() -> None:
    d = doc("bleu_4", "strip_whitespace", ["a completely different reference", REF], category="summary")
    assert score_spec_doc(d, HYP)["bleu_4"] == pytest.approx(SENTENCE_BLEU, abs=SCORES.atol)
    assert score_spec_doc(doc("bleu_4", "none", [REF]), REF)["bleu_4"] == pytest.approx(1.0)


def test_corpus_bleu_pools_ngrams() -> None:
    assert corpus_bleu([REF, HYP], [[REF], [REF]]) == pytest.approx(CORPUS_BLEU, abs=SCORES.atol)
    # not the mean of sentence scores
    assert abs(CORPUS_BLEU - (1 + SENTENCE_BLEU) / 2) > 0.005
    # records with different numbers of references
    assert corpus_bleu([REF, HYP], [["zzz", REF], [REF]]) == pytest.approx(CORPUS_BLEU, abs=SCORES.atol)


def test_rouge_l_best_over_targets() -> None:
    # LCS("the cat on the mat", "the cat sat on the mat") = 5: P = 5/5, R = 5/6, F = 10/11
    d = doc("rouge_l", "none", ["xyz", "the cat sat on the mat"], category="summary")
    assert score_spec_doc(d, "The cat on the mat")["rouge_l"] == pytest.approx(10 / 11)


def test_code_exec_targets_are_not_normalised() -> None:
    d = doc("code_exec", "lower", ["assert F(2) == 2"], category="code_exec")
    assert score_spec_doc(d, "def F(x):\n    return x\n") == {"code_exec": 0.0}  # the code is lowercased
    assert score_spec_doc(d, "F = lambda x: x\n") == {"code_exec": 0.0}
    d = doc("code_exec", "none", ["assert F(2) == 2"], category="code_exec")
    assert score_spec_doc(d, "def F(x):\n    return x\n") == {"code_exec": 1.0}


def test_code_exec_runs_targets_as_tests() -> None:
    targets = ["assert add(1, 2) == 3", "assert add(-1, 1) == 0"]
    d = doc("code_exec", "extract_code_block", targets, category="code_exec")
    good = score_spec_row(d, "Sure:\n```python\ndef add(a, b):\n    return a + b\n```\nDone.")
    assert good["value"] == 1.0 and good["status"] == "passed"
    bad = score_spec_row(d, "```python\ndef add(a, b):\n    return a - b\n```")
    assert bad["value"] == 0.0 and bad["status"] == "failed"
    assert bad["reason"].startswith("AssertionError")
    hang = score_spec_row(d, "```python\nwhile True:\n    pass\n```", timeout=1)
    assert hang["value"] == 0.0 and hang["status"] == "timeout"


def test_code_exec_on_mbpp_reference_solutions() -> None:
    with open(DATA / "mbpp" / "test.jsonl", encoding="utf-8") as f:
        rows = [json.loads(line) for _, line in zip(range(10), f, strict=False)]
    items = [
        (
            doc("code_exec", "extract_code_block", r["test_list"], category="code_exec"),
            f"```python\n{r['code']}\n```",
        )
        for r in rows
    ]
    items.insert(3, (doc("exact_match", "none", ["x"]), "x"))  # mixed with a text metric, order kept
    scored = score_spec_rows(items, workers=2)
    assert [s["metric_name"] for s in scored] == [d["metric_name"] for d, _ in items]
    expected = [(1.0, "passed")] * 10
    expected.insert(3, (1.0, None))
    assert [(s["value"], s.get("status")) for s in scored] == expected
    broken = doc("code_exec", "extract_code_block", rows[0]["test_list"], category="code_exec")
    assert score_spec_doc(broken, "```python\ndef remove_Occ(s, ch):\n    return s\n```") == {"code_exec": 0.0}


def test_unknown_metric_and_missing_fields() -> None:
    with pytest.raises(SpecScoringError, match="unknown metric_name"):
        score_spec_doc(doc("bleu", "none", ["x"]), "x")
    with pytest.raises(SpecScoringError, match="post_process"):
        score_spec_doc({"task_id": "t", "category": "mcq", "targets": ["A"], "metric_name": "exact_match"}, "A")


# --- aggregation ------------------------------------------------------------------------------------------


def test_aggregate_per_category_and_overall() -> None:
    rows = [
        score_spec_row(doc("exact_match", "strip_whitespace", ["4"]), " 4"),
        score_spec_row(doc("exact_match", "strip_whitespace", ["5"]), "6"),
        score_spec_row(doc("exact_match", "strip_whitespace", ["9"]), "9\n"),
        score_spec_row(doc("bleu_4", "none", [REF], category="summary"), REF),
        score_spec_row(doc("bleu_4", "none", [REF], category="summary"), HYP),
        score_spec_row(doc("rouge_l", "none", ["the cat sat on the mat"], category="summary"), "the cat on the mat"),
    ]
    agg = aggregate_spec(rows)
    arith, summary = agg["categories"]["arithmetic"], agg["categories"]["summary"]
    assert arith == {
        "score": pytest.approx(2 / 3),
        "n": 3,
        "metrics": {"exact_match": {"value": pytest.approx(2 / 3), "n": 3}},
    }
    assert summary["metrics"]["bleu_4"] == {"value": pytest.approx(CORPUS_BLEU, abs=SCORES.atol), "n": 2}
    assert summary["metrics"]["rouge_l"] == {"value": pytest.approx(10 / 11), "n": 1}
    summary_score = (2 * CORPUS_BLEU + 10 / 11) / 3
    assert summary["score"] == pytest.approx(summary_score)
    assert summary["n"] == 3
    assert agg["overall"]["n"] == 6
    assert agg["overall"]["score"] == pytest.approx((3 * 2 / 3 + 3 * summary_score) / 6)
    assert agg["overall"]["macro"] == pytest.approx((2 / 3 + summary_score) / 2)


def test_aggregate_accepts_score_spec_doc_style_rows_and_empty_input() -> None:
    rows = [{"category": "mcq", "metric_name": "exact_match", "exact_match": v} for v in (1.0, 1.0, 0.0, 1.0)]
    agg = aggregate_spec(rows)
    assert agg["categories"]["mcq"]["score"] == pytest.approx(0.75)
    assert aggregate_spec([])["overall"]["n"] == 0


def test_aggregate_bleu_needs_predictions() -> None:
    with pytest.raises(SpecScoringError, match="corpus BLEU"):
        aggregate_spec([{"category": "summary", "metric_name": "bleu_4", "value": 0.5}])
