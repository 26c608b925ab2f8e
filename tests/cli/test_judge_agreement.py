"""``lmeval compare JUDGE_A JUDGE_B`` (#62 item 3): two judges' grades of the same answers give their agreement,
Cohen's kappa (checked against scikit-learn's ``cohen_kappa_score``) and Krippendorff's alpha (checked against the
coincidence-matrix form written out here, Krippendorff 2011, "Computing Krippendorff's Alpha-Reliability"); judge
runs of other answers are refused in one line. Fake backend: the judge answers "fake answer N"."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from sklearn.metrics import cohen_kappa_score

from lmeval.plans import read_results
from tests.support import cli_in_process as cli
from tests.support import data_dir


def _ok(*argv: str) -> str:
    rc, out, err = cli(*argv)
    assert rc == 0, err
    return out


def alpha_by_coincidences(a: list[float], b: list[float]) -> float:
    """Krippendorff's alpha, interval metric, two coders, no missing values: coincidences o_ck (each unit adds 1
    to (a, b) and to (b, a)), n_c their margins, n = 2N; alpha = 1 - (n - 1) sum o_ck d_ck / sum n_c n_k d_ck."""
    o: Counter[tuple[float, float]] = Counter()
    for x, y in zip(a, b, strict=True):
        o[(x, y)] += 1
        o[(y, x)] += 1
    nc: Counter[float] = Counter()
    for (c, _), v in o.items():
        nc[c] += v
    n = sum(nc.values())
    obs = sum(v * (c - k) ** 2 for (c, k), v in o.items())
    exp = sum(nc[c] * nc[k] * (c - k) ** 2 for c in nc for k in nc)
    return 1 - (n - 1) * obs / exp


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("agree")
    _ok("run", "+task=mt_bench", "run.apply_chat_template=true", f"run.data_dir={data_dir()}", "run.limit=8",
        "model.backend=fake", "judge=tiny", "judge.backend=fake", r"judge.parse.regex=answer (\d+)", "--out",
        str(d / "mt"), "--no-progress")  # fmt: skip
    # a second judge of turn 1's answers: the same prompts, read otherwise (the last digit of N)
    _ok("judge", str(d / "mt" / "turn1"), "--judge", "mt_bench_turn1", "model=tiny", r"parse.regex=answer \d*(\d)",
        "--out", str(d / "j2.msgpack"))  # fmt: skip
    _ok("execute", str(d / "j2.msgpack"), "model=tiny", "model.backend=fake", "--out", str(d / "j2"), "--no-progress")
    return d


def _grades(results: Path, rx: str) -> dict[int, float]:
    rows = read_results(results).select("doc_id", "response").to_dicts()
    return {int(r["doc_id"]): float(re.search(rx, r["response"]).group(1)) for r in rows}  # type: ignore[union-attr]


def test_two_judges_of_the_same_answers_give_kappa_and_alpha(judged: Path) -> None:
    (j1,) = [p for p in (judged / "mt").glob("turn1.judge-mt_bench_turn1-*") if p.is_dir()]
    out = _ok("compare", str(j1), str(judged / "j2"))
    g1, g2 = _grades(j1, r"answer (\d+)"), _grades(judged / "j2", r"answer \d*(\d)")
    docs = sorted(g1)
    a, b = [g1[d] for d in docs], [g2[d] for d in docs]
    assert len(docs) == 8 and a != b
    kappa = cohen_kappa_score([str(x) for x in a], [str(x) for x in b])
    equal = sum(x == y for x, y in zip(a, b, strict=True)) / 8
    want = (f"mt_bench: 8 documents graded by both judges, equal {equal:.4f}, Cohen's kappa {kappa:.4f}, "
            f"Krippendorff's alpha (interval) {alpha_by_coincidences(a, b):.4f}")  # fmt: skip
    assert out.strip() == want


def test_judges_of_other_answers_are_refused(judged: Path) -> None:
    (j1,) = [p for p in (judged / "mt").glob("turn1.judge-mt_bench_turn1-*") if p.is_dir()]
    (j2,) = [p for p in (judged / "mt").glob("turn2.judge-mt_bench_turn2-*") if p.is_dir()]
    rc, _, err = cli("compare", str(j1), str(j2))
    assert rc == 2 and "graded other answers" in err and err.count("\n") == 1, err


def test_the_judge_is_named_in_the_grades(judged: Path) -> None:
    import json

    (entry,) = json.loads((judged / "mt" / "turn1" / "judge.json").read_text()).values()
    who = entry["judge_model"]
    assert who["name"] == "tiny" and who["backend"] == "fake" and len(who["config_hash"]) == 64
    assert who["config_hash"] == who["ran_config_hash"] and who["tokenizer_hash"]
