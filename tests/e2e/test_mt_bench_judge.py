"""#62 acceptance 2 on the real model: ``lmeval run +task=mt_bench ... run.limit=8 model=smollm2 judge=smollm2``
answers both turns with SmolLM2 on vLLM, judges both with SmolLM2 on vLLM (four engine runs), writes the grades into
both turns' folders and ends with one table holding turn 1, turn 2, the overall and the category means, equal to a
hand computation from the judge's raw outputs.

Cost bounds (2 cores): 16 generated tokens an answer, 3 a grade. A 135M judge given MT-Bench's long rubric writes
no ``[[n]]`` in a few tokens, so the judge's answer is prefilled with ``Rating: [[`` (no chat template) and the parse
rule reads the number it writes first, as tests/e2e/test_judge.py does: the grades are then real numbers the
model wrote, and everything from the judge plans to the table is the one-command flow."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from lmeval.plans import read_results
from tests.support import cli_in_process as cli
from tests.support import data_dir

PREFILLED = "Question: {{ question }}\nAnswer: {{ answer }}\nRate the answer from 1 to 10.\nRating: [["
FIRST, BACKUP = r"^\s*(\d+)", r"\[(\d+\.?\d*)\]"  # the test's parse rule, and MT-Bench's judges' fallback


def _hand_grade(output: str | None) -> float | None:
    m = re.search(FIRST, output or "") or re.search(BACKUP, output or "")
    return float(m.group(1)) if m else None


def _table(stdout: str) -> dict[str, str]:
    out = {}
    for line in stdout.splitlines():
        cells = [c.strip() for c in line.split("│")]
        if len(cells) >= 8 and cells[5] and cells[5] != "Metric":
            out[cells[5]] = cells[7]
    return out


def test_mt_bench_in_one_command_smollm2_judged_by_smollm2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    root = tmp_path / "mt"
    rc, out, err = cli("run", "+task=mt_bench", "run.apply_chat_template=true", f"run.data_dir={data_dir()}",
                       "run.limit=8", "model=smollm2", "judge=smollm2", "run.gen_kwargs={max_gen_toks:16}",
                       "judge.apply_chat_template=false", f"judge.rubric={PREFILLED}", f"judge.parse.regex={FIRST}",
                       "judge.generation.max_gen_toks=3", "--out", str(root), "--no-progress")  # fmt: skip
    assert rc == 0, err[-3000:]
    grades: list[dict[int, float | None]] = []
    for turn in (1, 2):
        (judge_dir,) = [p for p in root.glob(f"turn{turn}.judge-mt_bench_turn{turn}-*") if p.is_dir()]
        rows = read_results(judge_dir).select("doc_id", "response").to_dicts()
        hand = {int(r["doc_id"]): _hand_grade(r["response"]) for r in rows}
        assert len(hand) == 8
        (entry,) = json.loads((root / f"turn{turn}" / "judge.json").read_text()).values()
        assert {int(d): g for d, g in entry["tasks"]["mt_bench"]["grades"].items()} == hand  # in the turn's folder
        grades.append(hand)
    pooled = [g for t in grades for g in t.values() if g is not None]
    assert pooled, grades  # real grades the model wrote, not only "unparsed"

    def mean(xs: list[float]) -> str:
        return "None" if not xs else f"{sum(xs) / len(xs):.4f}"

    want = {f"turn{k + 1}": mean([g for g in t.values() if g is not None]) for k, t in enumerate(grades)}
    want["overall"] = mean(pooled)
    want["writing"] = mean(pooled)  # the first 8 questions are MT-Bench's writing category
    want["unparsed"] = str(sum(g is None for t in grades for g in t.values()))
    table = _table(out)
    assert {k: table.get(k) for k in want} == want, out
    assert "exact_match" not in out and out.rstrip().endswith(str(root))
