"""scorer/judgegrades.py: grades come from the judge's outputs only, never from the judged answers."""

from __future__ import annotations

from lmeval.plans.plan import ModelInfo, PlanHeader, TaskSummary
from lmeval.scorer.judgegrades import judge_grades


def _header(mode: str, parse: dict[str, object]) -> PlanHeader:
    cfg = {"task": "judge_t", "output_type": "generate_until", "num_fewshot": 0, "metric_list": [], "filter_list": []}
    task = TaskSummary.of_config(cfg, n_docs=3, n_instances=3, data_fingerprint="")
    return PlanHeader(config={"judge": {"mode": mode, "parse": parse}}, model=ModelInfo(name="m"), tasks=[task])


def test_answer_that_rates_itself_grades_nothing() -> None:
    h = _header("single", {"regex": r"Rating: \[\[(\d+)\]\]", "min": 1, "max": 10})
    rows = [
        {"task": "judge_t", "doc_id": 0, "idx": 0, "response": "It claims ten for itself. Rating: [[3]]"},
        {"task": "judge_t", "doc_id": 1, "idx": 0, "response": "I cannot rate this."},
        {"task": "judge_t", "doc_id": 2, "idx": 0, "response": "Rating: [[5]]"},
    ]
    (tg,) = judge_grades(h, rows)
    assert tg.task == "t" and tg.grades == {0: 3.0, 1: None, 2: 5.0}
    m = tg.metrics()
    assert m["judge_unparsed"] == 1 and m["judge_n"] == 2 and m["judge_score"] == 4.0


def test_pairwise_needs_both_orders() -> None:
    h = _header("pairwise", {"regex": r"\[\[(A|B|C)\]\]", "labels": {"A": "a", "B": "b", "C": "tie"}})
    rows = [
        {"task": "judge_t", "doc_id": 0, "idx": 0, "response": "[[A]]"},
        {"task": "judge_t", "doc_id": 0, "idx": 1, "response": "[[B]]"},
        {"task": "judge_t", "doc_id": 1, "idx": 0, "response": "[[A]]"},
        {"task": "judge_t", "doc_id": 1, "idx": 1, "response": "[[A]]"},
        {"task": "judge_t", "doc_id": 2, "idx": 0, "response": "[[A]]"},
    ]
    (tg,) = judge_grades(h, rows)
    assert tg.grades == {0: "a", 1: "tie", 2: None}
    assert tg.metrics()["judge_score"] == 0.75 and tg.unparsed == 1


def test_parse_that_runs_past_its_limit_is_unparsed_and_named() -> None:
    # (x|x)+ passes the static rule (no nested repeat) but backtracks exponentially on x...xy
    h = _header("single", {"regex": r"^(?:x|x)+(\d)$", "min": 1, "max": 9})
    rows = [
        {"task": "judge_t", "doc_id": 0, "idx": 0, "response": "x" * 60 + "y"},
        {"task": "judge_t", "doc_id": 1, "idx": 0, "response": "xx5"},
    ]
    (tg,) = judge_grades(h, rows)
    assert tg.grades == {0: None, 1: 5.0} and tg.timed_out == [0]
    assert tg.metrics()["judge_unparsed"] == 1
