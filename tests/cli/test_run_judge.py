"""``lmeval run`` of a judge-graded task (#62 item 1, acceptance 2 and 3 on the fake backend; the SmolLM2 run is
tests/e2e/test_mt_bench_judge.py): without a judge, no metric is shown as MT-Bench's score and one line says how to
grade it; with ``judge=MODEL`` both turns are judged in the same command, the grades land in both turns' folders, and
one table ends the run with turn 1, turn 2, the overall and the category means, equal to a hand computation from the
grades (FastChat's: turn means, the overall pooled over both turns' parsed grades)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import cli_in_process as cli
from tests.support import data_dir

RUN = ["run", "+task=mt_bench", "run.apply_chat_template=true", f"run.data_dir={data_dir()}", "run.limit=8",
       "model.backend=fake", "--no-progress"]  # fmt: skip
# the fake backend answers "fake answer N": a judge parse rule that reads N gives every document a grade
JUDGE = ["judge=tiny", "judge.backend=fake", r"judge.parse.regex=answer (\d+)"]


def _table(stdout: str) -> dict[str, str]:
    """The results table's Metric -> Value cells (rich's box rows)."""
    out = {}
    for line in stdout.splitlines():
        cells = [c.strip() for c in line.split("│")]
        if len(cells) >= 8 and cells[5] and cells[5] != "Metric":
            out[cells[5]] = cells[7]
    return out


def test_without_a_judge_no_metric_and_one_line_naming_how(tmp_path: Path) -> None:
    rc, out, err = cli(*RUN, "--out", str(tmp_path / "run"))
    assert rc == 0, err
    assert "exact_match" not in out and _table(out) == {}, out
    lines = [line for line in out.splitlines() if "graded by a judge" in line]
    assert len(lines) == 1 and lines[0].startswith("mt_bench: ") and "judge=MODEL" in lines[0], out
    assert "--judge mt_bench_turn1" in lines[0]


def test_with_a_judge_one_table_from_both_turns_grades(tmp_path: Path) -> None:
    root = tmp_path / "run"
    rc, out, err = cli(*RUN, *JUDGE, "--out", str(root))
    assert rc == 0, err
    grades = []
    for turn in (1, 2):
        (entry,) = json.loads((root / f"turn{turn}" / "judge.json").read_text()).values()
        assert entry["judge"] == f"mt_bench_turn{turn}"
        grades.append({int(d): g for d, g in entry["tasks"]["mt_bench"]["grades"].items()})
        metrics = json.loads((root / f"turn{turn}" / "results.json").read_text())["results"]["mt_bench"]
        assert metrics[f"judge_n,mt_bench_turn{turn}"] == 8
    docs = [json.loads(line) for line in (data_dir() / "mt_bench" / "question.jsonl").read_text().splitlines()][:8]
    cats = {i: d["category"] for i, d in enumerate(docs)}
    pooled = [g for t in grades for g in t.values() if g is not None]
    hand = {"turn1": sum(grades[0].values()) / 8, "turn2": sum(grades[1].values()) / 8,
            "overall": sum(pooled) / len(pooled)}  # fmt: skip
    for c in set(cats.values()):
        xs = [t[i] for t in grades for i in t if cats[i] == c]
        hand[c] = sum(xs) / len(xs)
    table = _table(out)
    assert "exact_match" not in out and set(cats.values()) == {"writing"}  # the first 8 questions
    for metric, value in hand.items():
        assert table[metric] == f"{value:.4f}", (metric, table)
    assert table["unparsed"] == "0" and table["graded"] == "16"
    assert out.rstrip().endswith(str(root))


@pytest.mark.parametrize(
    ("extra", "why"),
    [
        (["judge.generation.max_gen_toks=3"], "a judge setting without a judge"),
        (["judge=nosuchmodel"], "no conf/model/nosuchmodel.yaml"),
        (["judge=tiny", "judge.parse.regex=(a)(b)"], "judge.parse.regex: needs exactly one group"),
    ],
)
def test_a_bad_judge_is_refused_in_one_line_before_the_model_runs(tmp_path: Path, extra: list[str], why: str) -> None:
    rc, _, err = cli(*RUN, *extra, "--out", str(tmp_path / "run"))
    assert rc == 2 and why in err and err.count("\n") == 1, err
    assert not (tmp_path / "run").exists()


def test_a_judge_for_a_run_without_a_judge_graded_task_is_refused(tmp_path: Path) -> None:
    rc, _, err = cli("run", "+task=arith", "run.limit=2", "model.backend=fake", "judge=tiny", "--out",
                     str(tmp_path / "run"), "--no-progress")  # fmt: skip
    assert rc == 2 and "no task of this run is graded by a judge" in err and err.count("\n") == 1, err
    assert not (tmp_path / "run").exists()


def _task(tmp_path: Path, judged_by: str) -> list[str]:
    (tmp_path / "d.jsonl").write_text('{"q": "Hi?"}\n{"q": "Why?"}\n')
    (tmp_path / "jt.yaml").write_text(
        f"task: jt\ndataset_path: json\ndataset_kwargs: {{data_files: {{test: {tmp_path / 'd.jsonl'}}}}}\n"
        'test_split: test\noutput_type: generate_until\ndoc_to_text: "{{q}}"\ndoc_to_target: ""\n'
        f"generation_kwargs: {{until: [], max_gen_toks: 8}}\njudged_by: {judged_by}\n"
    )
    return ["run", f"run.include_path={tmp_path}", "run.tasks=[jt]", "model.backend=fake", "--no-progress"]


def test_a_bad_judged_by_is_refused_at_compile(tmp_path: Path) -> None:
    rc, _, err = cli(*_task(tmp_path, "{judges: []}"), "--out", str(tmp_path / "run"))
    assert rc == 2 and "jt.yaml" in err and "judged_by" in err and "non-empty list" in err, err
    assert err.count("\n") == 1


def test_a_pairwise_judge_is_refused_by_run(tmp_path: Path) -> None:
    rc, _, err = cli(*_task(tmp_path, "{judges: [pairwise]}"), "judge=tiny", "--out", str(tmp_path / "run"))
    assert rc == 2 and "judge pairwise is pairwise" in err and "--against" in err and err.count("\n") == 1, err
    assert not (tmp_path / "run").exists()


def test_a_one_turn_judged_task_is_graded_in_its_run(tmp_path: Path) -> None:
    rc, out, err = cli(*_task(tmp_path, "{judges: [single_10]}"), *JUDGE, "judge.parse.min=null",
                       "judge.parse.max=null", "judge.question=null", "judge.reference=null", "--out",
                       str(tmp_path / "run"))  # fmt: skip
    assert rc == 0, err
    (entry,) = json.loads((tmp_path / "run" / "judge.json").read_text()).values()
    grades = list(entry["tasks"]["jt"]["grades"].values())
    assert len(grades) == 2 and _table(out)["turn1"] == _table(out)["overall"] == f"{sum(grades) / 2:.4f}", out
