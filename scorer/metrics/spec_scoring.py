"""Scoring for the frozen JSONL task spec: post-process rules, per-record metrics, aggregation.

A spec doc (as the compiler stores it in the plan) carries ``task_id``, ``category``, ``targets``,
``metric_name`` and ``post_process``. For one model response:

1. ``post_process(rule, response)`` turns it into the prediction. The normalising rules (``none``,
   ``strip_whitespace``, ``lower``) are applied to the targets too (except for code_exec, whose targets
   are test code), so ``lower`` compares case-insensitively whatever case the targets were written in;
   the extraction rules (``extract_letter``, ``extract_code_block``, ``extract_first_line``) apply to the
   response only and targets are used as written. ``extract_letter`` is literally "the first character
   in A-E", so "Answer: C" gives "A"; ``extract_code_block`` returns the text unchanged when it has no
   fence; ``extract_first_line`` strips the line it returns.
2. The metric compares the prediction with the targets (all values in [0, 1]):

   - ``exact_match``: 1.0 when the prediction equals any target.
   - ``accuracy``: classification label equality: 1.0 when the prediction equals any target label, with
     surrounding whitespace ignored on both sides.
   - ``f1``: token-level F1, best over targets. Tokens are the ``\\w+`` runs of the lowercased text
     (Unicode letters, digits and underscore; punctuation and whitespace separate tokens and are dropped),
     counted as a multiset. Both empty: 1.0; one empty: 0.0.
   - ``bleu_4``: per record, sacrebleu's sentence BLEU against all targets; for a task or category the
     aggregate is sacrebleu's corpus BLEU over its records (not the mean of sentence scores). Reported
     as sacrebleu's score / 100.
   - ``rouge_l``: rouge-score's ROUGE-L F-measure (its default tokenizer: lowercased ASCII alphanumeric
     tokens, no stemmer), best over targets.
   - ``code_exec``: the prediction followed by the targets (test statements, one per target) runs in
     ``scorer.sandbox``; 1.0 when it exits with status 0.

``aggregate_spec`` aggregates scored rows per category (and per metric within a category) and overall.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from lmeval.plans import MCQ_LETTERS, POST_PROCESS, SPEC_METRICS, UserError

NORMALISING_RULES = frozenset({"none", "strip_whitespace", "lower"})
FENCE = "```"


class SpecScoringError(UserError):
    """A spec doc or row that cannot be scored (unknown rule or metric, missing field)."""


# --- post-processing ----------------------------------------------------------------------------------


def _extract_letter(text: str) -> str:
    for ch in text:
        if ch in MCQ_LETTERS:
            return ch
    return ""


def _extract_code_block(text: str) -> str:
    """Body of the first ``` fenced block, without the opening line (its language tag).

    No opening fence: the text unchanged (a bare-code answer). No closing fence: the body runs to the end.
    """
    start = text.find(FENCE)
    if start < 0:
        return text
    newline = text.find("\n", start + len(FENCE))
    if newline < 0:
        return ""
    body_start = newline + 1
    end = text.find(FENCE, body_start)
    return text[body_start:] if end < 0 else text[body_start:end]


def _extract_first_line(text: str) -> str:
    """The first line with any non-whitespace character, with its surrounding whitespace removed."""
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


_RULE_FUNCS: dict[str, Callable[[str], str]] = {
    "none": lambda s: s,
    "strip_whitespace": str.strip,
    "lower": str.lower,
    "extract_letter": _extract_letter,
    "extract_code_block": _extract_code_block,
    "extract_first_line": _extract_first_line,
}


def post_process(rule: str, text: str) -> str:
    """Apply one post-process rule (see the module docstring) to ``text``."""
    try:
        func = _RULE_FUNCS[rule]
    except KeyError:
        known = ", ".join(POST_PROCESS)
        raise SpecScoringError(f"unknown post_process rule {rule!r} (expected one of {known})") from None
    return func(text)


# --- metrics -------------------------------------------------------------------------------------------

_TOKEN = re.compile(r"\w+")


def f1_tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def token_f1(prediction: str, target: str) -> float:
    pred, gold = f1_tokens(prediction), f1_tokens(target)
    if not pred and not gold:
        return 1.0
    if not pred or not gold:
        return 0.0
    common = sum((Counter(pred) & Counter(gold)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(gold)
    return 2 * precision * recall / (precision + recall)


def sentence_bleu(prediction: str, targets: Sequence[str]) -> float:
    import sacrebleu

    return float(sacrebleu.sentence_bleu(prediction, list(targets)).score) / 100.0


def corpus_bleu(predictions: Sequence[str], targets: Sequence[Sequence[str]]) -> float:
    """sacrebleu corpus BLEU (/100); records may have different numbers of references."""
    import sacrebleu

    if not predictions:
        return 0.0
    width = max(len(t) for t in targets)
    # sacrebleu takes one stream per reference position; None marks a record with fewer references
    streams: list[list[str | None]] = [[t[i] if i < len(t) else None for t in targets] for i in range(width)]
    return float(sacrebleu.corpus_bleu(list(predictions), streams).score) / 100.0  # type: ignore[arg-type]


_rouge_scorer: Any = None


def rouge_l(prediction: str, targets: Sequence[str]) -> float:
    global _rouge_scorer
    if _rouge_scorer is None:
        from rouge_score import rouge_scorer

        _rouge_scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
    return max(float(_rouge_scorer.score(t, prediction)["rougeL"].fmeasure) for t in targets)


def code_program(code: str, targets: Sequence[str]) -> str:
    """The program a code_exec record runs: the generated code, then each target (a test) on its own line."""
    return code.rstrip("\n") + "\n\n" + "\n".join(targets) + "\n"


# --- per record -----------------------------------------------------------------------------------------


def _field(doc: Mapping[str, Any], key: str) -> Any:
    if key not in doc:
        raise SpecScoringError(f"spec doc {doc.get('task_id', '?')}: missing field {key!r}")
    return doc[key]


def _prepare(doc: Mapping[str, Any], response: str) -> tuple[dict[str, Any], list[str]]:
    """The row without its value, and the raw targets (code_exec runs them as written)."""
    rule = _field(doc, "post_process")
    metric = _field(doc, "metric_name")
    if metric not in SPEC_METRICS:
        known = ", ".join(SPEC_METRICS)
        raise SpecScoringError(
            f"spec doc {doc.get('task_id', '?')}: unknown metric_name {metric!r} (expected one of {known})"
        )
    targets = [str(t) for t in _field(doc, "targets")]
    if not targets:
        raise SpecScoringError(f"spec doc {doc.get('task_id', '?')}: empty targets")
    prediction = post_process(rule, response)
    normalise = rule in NORMALISING_RULES and metric != "code_exec"
    row: dict[str, Any] = {
        "task_id": doc.get("task_id"),
        "category": _field(doc, "category"),
        "metric_name": metric,
        "post_process": rule,
        "prediction": prediction,
        "targets": [post_process(rule, t) for t in targets] if normalise else targets,
    }
    return row, targets


def _text_value(metric: str, prediction: str, targets: Sequence[str]) -> float:
    if metric == "exact_match":
        return float(prediction in targets)
    if metric == "accuracy":
        return float(prediction.strip() in {t.strip() for t in targets})
    if metric == "f1":
        return max(token_f1(prediction, t) for t in targets)
    if metric == "bleu_4":
        return sentence_bleu(prediction, targets)
    if metric == "rouge_l":
        return rouge_l(prediction, targets)
    raise AssertionError(metric)


def score_spec_rows(
    items: Iterable[tuple[Mapping[str, Any], str]],
    *,
    timeout: float = 10.0,
    allow_network: bool = False,
    workers: int = 2,
) -> list[dict[str, Any]]:
    """Score (doc, response) pairs: the rows ``aggregate_spec`` takes, in input order.

    Keys: task_id, category, metric_name, post_process, prediction (the processed response), targets (as
    compared), value (the metric in [0, 1]) and, for code_exec, status and reason from the sandbox.
    code_exec programs run ``workers`` at a time.
    """
    rows: list[dict[str, Any]] = []
    programs: list[tuple[int, str]] = []
    for doc, response in items:
        row, raw_targets = _prepare(doc, response)
        if row["metric_name"] == "code_exec":
            programs.append((len(rows), code_program(row["prediction"], raw_targets)))
        else:
            row["value"] = _text_value(row["metric_name"], row["prediction"], row["targets"])
        rows.append(row)
    if programs:
        from lmeval.scorer.sandbox import check_many

        results = check_many([p for _, p in programs], workers=workers, timeout=timeout, allow_network=allow_network)
        for (i, _), res in zip(programs, results, strict=True):
            rows[i].update(value=float(res.passed), status=res.status, reason=res.reason)
    return rows


def score_spec_row(
    doc: Mapping[str, Any],
    response: str,
    *,
    timeout: float = 10.0,
    allow_network: bool = False,
) -> dict[str, Any]:
    """Score one response to one spec doc (see ``score_spec_rows`` for the row's keys)."""
    return score_spec_rows([(doc, response)], timeout=timeout, allow_network=allow_network, workers=1)[0]


def score_spec_doc(
    doc: Mapping[str, Any],
    response: str,
    *,
    timeout: float = 10.0,
    allow_network: bool = False,
) -> dict[str, float]:
    """``{metric_name: value}`` for one response to one spec doc (value in [0, 1])."""
    row = score_spec_row(doc, response, timeout=timeout, allow_network=allow_network)
    return {row["metric_name"]: row["value"]}


# --- aggregation ---------------------------------------------------------------------------------------


def _row_value(row: Mapping[str, Any]) -> float:
    metric = row["metric_name"]
    value = row.get("value", row.get(metric))
    if value is None:
        raise SpecScoringError(f"row {row.get('task_id', '?')}: no value for metric {metric!r}")
    return float(value)


def aggregate_metric(metric: str, rows: Sequence[Mapping[str, Any]]) -> float:
    """One metric's aggregate over rows: corpus BLEU for bleu_4, the mean of values otherwise."""
    if not rows:
        return math.nan
    if metric == "bleu_4":
        try:
            preds = [str(r["prediction"]) for r in rows]
            refs = [[str(t) for t in r["targets"]] for r in rows]
        except KeyError as e:
            raise SpecScoringError(
                f"bleu_4 rows need 'prediction' and 'targets' for corpus BLEU (missing {e})"
            ) from None
        return corpus_bleu(preds, refs)
    return sum(_row_value(r) for r in rows) / len(rows)


def aggregate_spec(rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Per-category and overall aggregates of scored rows (``score_spec_row`` output).

    Returns ``{"categories": {category: {"score", "n", "metrics": {metric: {"value", "n"}}}},
    "overall": {"score", "macro", "n"}}`` where a metric's value is ``aggregate_metric``, a category's
    score is the record-weighted mean of its metrics' values (the plain mean of its records when no
    bleu_4 is involved), overall ``score`` is the record-weighted mean of category scores and ``macro``
    their unweighted mean.
    """
    by_cat: dict[str, dict[str, list[Mapping[str, Any]]]] = {}
    for row in rows:
        by_cat.setdefault(str(row["category"]), {}).setdefault(str(row["metric_name"]), []).append(row)
    categories: dict[str, Any] = {}
    for cat in sorted(by_cat):
        metrics = {m: {"value": aggregate_metric(m, rs), "n": len(rs)} for m, rs in sorted(by_cat[cat].items())}
        n = sum(v["n"] for v in metrics.values())
        score = sum(v["value"] * v["n"] for v in metrics.values()) / n
        categories[cat] = {"score": score, "n": n, "metrics": metrics}
    total = sum(c["n"] for c in categories.values())
    if total:
        overall = {
            "score": sum(c["score"] * c["n"] for c in categories.values()) / total,
            "macro": sum(c["score"] for c in categories.values()) / len(categories),
            "n": total,
        }
    else:
        overall = {"score": math.nan, "macro": math.nan, "n": 0}
    return {"categories": categories, "overall": overall}
