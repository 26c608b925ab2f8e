"""MT-Bench's grades and summaries equal FastChat's on fixed judge outputs (#62 acceptance 1 and 4).

FastChat's computation is written out here independently, from lm-sys/FastChat ``fastchat/llm_judge``:
``common.py`` (``run_judge_single``: ``one_score_pattern`` ``\\[\\[(\\d+\\.?\\d*)\\]\\]`` searched first, then
``one_score_pattern_backup`` ``\\[(\\d+\\.?\\d*)\\]``, the group read by ``ast.literal_eval``, -1 when neither
matches, no range check; ``run_judge_pair``: ``"[[A]]" in judgment``, then ``[[B]]``, then ``[[C]]`` (tie), else
error; ``play_a_match_pair``: game 2's A/B mapped back) and ``show_result.py`` (``display_result_single``: rows with
score -1 dropped, the turn means, the overall as the mean of every remaining row; ``display_result_pairwise``: rows
with an error in either game dropped, a tie in game 1 or a disagreement is a tie, ``win_rate = win / (win + loss +
tie)``, ``win_rate_adjusted = (win + 0.5 * tie) / (win + loss + tie)``). Ours goes through the shipped judge
configs' parse rules (conf/judge/mt_bench_turn*.yaml, pairwise.yaml) and the scorer."""

from __future__ import annotations

import ast
import re
from typing import Any

import pytest

from lmeval.compiler import load_judge_config
from lmeval.plans.plan import ModelInfo, PlanHeader, TaskSummary
from lmeval.scorer import pairwise_summary, single_summary
from lmeval.scorer.judgegrades import judge_grades

# --- FastChat, written out -------------------------------------------------------------------------------------
ONE = re.compile(r"\[\[(\d+\.?\d*)\]\]")
ONE_BACKUP = re.compile(r"\[(\d+\.?\d*)\]")


def fastchat_rating(judgment: str) -> Any:
    match = re.search(ONE, judgment)
    if not match:
        match = re.search(ONE_BACKUP, judgment)
    return ast.literal_eval(match.groups()[0]) if match else -1


def fastchat_single(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """show_result's single mode over judgment rows {turn, score, category}; per category the same pooled mean."""
    kept = [r for r in rows if r["score"] != -1]

    def mean(xs: list[float]) -> float:
        return sum(xs) / len(xs)

    out = {f"turn{t}": mean([r["score"] for r in kept if r["turn"] == t]) for t in (1, 2)}
    out["overall"] = mean([r["score"] for r in kept])
    for c in {r["category"] for r in kept}:
        out[c] = mean([r["score"] for r in kept if r["category"] == c])
    return out


def fastchat_winner(judgment: str) -> str:
    if "[[A]]" in judgment:
        return "A"
    if "[[B]]" in judgment:
        return "B"
    if "[[C]]" in judgment:
        return "tie"
    return "error"


def fastchat_pairwise(games: list[tuple[str, str]]) -> dict[str, float]:
    """model_1 (the judged run) against the baseline: play_a_match_pair's mapping, display_result_pairwise's count."""
    win = loss = tie = 0
    for g1_text, g2_text in games:
        g1 = {"A": "model_1", "B": "model_2"}.get(fastchat_winner(g1_text), fastchat_winner(g1_text))
        g2 = {"A": "model_2", "B": "model_1"}.get(fastchat_winner(g2_text), fastchat_winner(g2_text))
        if g1 == "error" or g2 == "error":
            continue
        if g1 == "tie" or g1 != g2:
            tie += 1
        elif g1 == "model_1":
            win += 1
        else:
            loss += 1
    n = win + loss + tie
    return {"win_rate": win / n, "loss_rate": loss / n, "win_rate_adjusted": (win + 0.5 * tie) / n}


# --- fixed judge outputs covering FastChat's parse cases ----------------------------------------------------------
TURN1 = [
    ("writing", "Helpful and clear. Rating: [[8]]"),  # [[n]]
    ("writing", "I would rate this response [7] overall."),  # the [n] fallback
    ("math", "Wrong answer. Rating: [[0]]"),  # 0: taken as given
    ("math", "Flawless. Rating: [[11]]"),  # out of range: taken as given
    ("coding", "Mostly right. Rating: [[7.5]]"),  # a decimal
    ("coding", "I cannot decide on a rating."),  # none: dropped and counted
    ("roleplay", "Step [2] is weak, but overall Rating: [[9]]"),  # [[n]] wins over an earlier [n]
    ("roleplay", "Rating: [[6.]]"),  # "6." as FastChat's regex and literal_eval read it
]
TURN2 = [
    ("writing", "Rating: [[5]]"),
    ("writing", "Rating: [[ 5 ]]"),  # spaces: neither pattern matches
    ("math", "[[3.25]] is my rating"),
    ("math", "score [10]"),
    ("coding", "no rating"),
    ("coding", "Rating: [[4]] and later [[9]]"),  # the first match
    ("roleplay", "Rating: [[2]]"),
    ("roleplay", "Rating: [[10]]"),
]


def _header(mode: str, parse: dict[str, Any]) -> PlanHeader:
    cfg = {"task": "judge_mt_bench", "output_type": "generate_until", "num_fewshot": 0, "metric_list": [],
           "filter_list": []}  # fmt: skip
    task = TaskSummary.of_config(cfg, n_docs=8, n_instances=8, data_fingerprint="")
    return PlanHeader(config={"judge": {"mode": mode, "parse": parse}}, model=ModelInfo(name="m"), tasks=[task])


def _grades(judge: str, outputs: list[tuple[str, str]]) -> dict[int, float | None]:
    parse = load_judge_config(judge).parse.to_dict()
    rows = [{"task": "judge_mt_bench", "doc_id": i, "idx": 0, "response": text} for i, (_, text) in enumerate(outputs)]
    (tg,) = judge_grades(_header("single", parse), rows)
    return tg.grades


@pytest.mark.parametrize(("judge", "outputs"), [("mt_bench_turn1", TURN1), ("mt_bench_turn2", TURN2)])
def test_every_grade_is_fastchats(judge: str, outputs: list[tuple[str, str]]) -> None:
    ours = _grades(judge, outputs)
    for i, (_, text) in enumerate(outputs):
        want = fastchat_rating(text)
        assert ours[i] == (None if want == -1 else want), (text, ours[i], want)


def test_turn_means_overall_and_categories_are_fastchats() -> None:
    g1, g2 = _grades("mt_bench_turn1", TURN1), _grades("mt_bench_turn2", TURN2)
    cats = {i: c for i, (c, _) in enumerate(TURN1)}
    s = single_summary([g1, g2], cats)
    rows = [{"turn": t, "category": c, "score": fastchat_rating(text)}
            for t, outs in ((1, TURN1), (2, TURN2)) for c, text in outs]  # fmt: skip
    want = fastchat_single(rows)
    assert s.turns == pytest.approx([want["turn1"], want["turn2"]])
    assert s.overall == pytest.approx(want["overall"])
    assert s.overall != pytest.approx((want["turn1"] + want["turn2"]) / 2)  # pooled, not the mean of the turn means
    assert s.categories == pytest.approx({c: want[c] for c in ("writing", "math", "coding", "roleplay")})
    assert s.unparsed == sum(fastchat_rating(t) == -1 for _, t in TURN1 + TURN2) == 3
    assert s.n == 13 and s.turn_n == [7, 6]
    m = s.metrics()
    assert m["turn1,judge"] == s.turns[0] and m["overall,judge"] == s.overall and m["unparsed,judge"] == 3
    assert m["math,judge"] == s.categories["math"]


GAMES = [  # (game 1: the judged run is A, game 2: it is B)
    ("A is better. [[A]]", "B is better. [[B]]"),  # agreement: a win
    ("[[B]]", "[[A]]"),  # agreement: a loss
    ("[[B]]", "[[A]]"),
    ("[[A]]", "[[A]]"),  # disagreement (position bias): a tie
    ("[[C]]", "[[C]]"),  # a tie in both orders
    ("[[A]]", "[[C]]"),  # a tie in one order: a tie
    ("[[C]]", "[[B]]"),  # a tie in game 1: a tie
    ("no verdict", "[[A]]"),  # an error in one order: dropped
    ("[[B]]", "undecided"),
    ("Not [[B]], rather [[A]]", "[[B]]"),  # both labels named: FastChat looks for [[A]] first: a win
]


def test_pairwise_win_rates_are_fastchats() -> None:
    rows = [{"task": "judge_mt_bench", "doc_id": i, "idx": k, "response": g[k]} for i, g in enumerate(GAMES)
            for k in (0, 1)]  # fmt: skip
    (tg,) = judge_grades(_header("pairwise", load_judge_config("pairwise").parse.to_dict()), rows)
    want = fastchat_pairwise(GAMES)
    m = tg.metrics()
    assert m["judge_win_rate"] == pytest.approx(want["win_rate"])
    assert m["judge_loss_rate"] == pytest.approx(want["loss_rate"])
    assert m["judge_win_rate_adjusted"] == pytest.approx(want["win_rate_adjusted"])
    assert m["judge_score"] == pytest.approx(want["win_rate_adjusted"])
    assert (m["judge_win"], m["judge_loss"], m["judge_tie"], m["judge_unparsed"]) == (2, 2, 4, 2)
    p = pairwise_summary(list(tg.grades.values()))
    assert p.metrics()["win_rate_adjusted,judge"] == pytest.approx(want["win_rate_adjusted"])
