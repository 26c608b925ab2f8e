"""``lmeval judge`` on a real SmolLM2 run with SmolLM2 as its judge (#39, acceptance 3): grades and the unparsed
count equal a hand count over the judge's raw outputs; the judge plan's hash moves with the rubric, not with where
it is written; ``lmeval diff`` of two judge plans names the rubric. Reuses the session's SmolLM2 run (arith)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from lmeval.plans.plan import read_header
from lmeval.plans.results import read_results
from tests.support import cli_in_process as cli

PREFILLED = "rubric=Question: {{ question }}\nAnswer: {{ answer }}\nRate the answer from 1 to 10.\nRating: [["
JUDGE = ["--judge", "single_10", "tasks=[arith]", "limit=3", "generation.max_gen_toks=32", "question=null"]


def _judge(results: Path, out: Path, *extra: str) -> str:
    rc, stdout, err = cli("judge", str(results), *JUDGE, *extra, "--out", str(out))
    assert rc == 0, err
    return read_header(out).plan_hash


def test_judge_smollm2_by_smollm2(smollm2_vllm: Path, tmp_path: Path) -> None:
    run = tmp_path / "judged"
    shutil.copytree(smollm2_vllm, run)  # judge-score writes into it: the session's run stays as it was
    h1 = _judge(run, tmp_path / "j1.msgpack")
    assert _judge(run, tmp_path / "elsewhere" / "j1.msgpack") == h1  # where it is written is not identity
    h2 = _judge(run, tmp_path / "j2.msgpack", "rubric=Rate the answer {{ answer }} to {{ question }} as Rating: [[N]]")
    assert h2 != h1
    rc, diff, err = cli("diff", str(tmp_path / "j1.msgpack"), str(tmp_path / "j2.msgpack"))
    assert rc in (0, 1), err
    assert "judge.rubric" in diff

    rc, dry, err = cli("judge", str(run), *JUDGE, "--dry-run", "--price-in", "1", "--price-out", "2")
    assert rc == 0 and "judge_arith" in dry and "max_gen_tokens" in dry and "96" in dry, dry + err

    # executed: the judge's answer prefilled with "Rating: [[" (no chat template) so that a 135M model writes
    # grades the parse rule reads (the MT-Bench rubric above gets none from it); on the hf backend (one model load,
    # no vLLM engine start: CI time); a judge plan runs on any backend
    h3 = _judge(run, tmp_path / "j3.msgpack", "apply_chat_template=false", PREFILLED, r"parse.regex=^\s*(\d+)",
                "generation.max_gen_toks=3")  # fmt: skip
    rc, _, err = cli("execute", str(tmp_path / "j3.msgpack"), "--out", str(tmp_path / "jr"), "model=smollm2",
                     "model.backend=hf", "--no-progress")  # fmt: skip
    assert rc == 0, err
    rc, out, err = cli("judge-score", str(tmp_path / "jr"), "--into", str(run))
    assert rc == 0, err
    rows = read_results(tmp_path / "jr").select("doc_id", "response").to_dicts()
    assert len(rows) == 3 and all(r["response"] is not None for r in rows)
    hand: dict[str, float | None] = {}
    for r in rows:  # the parse rule by hand: first match at the start, a number in [1, 10]
        m = re.match(r"\s*(\d+)", r["response"])
        hand[str(r["doc_id"])] = float(m.group(1)) if m and 1 <= float(m.group(1)) <= 10 else None
    assert any(v is not None for v in hand.values()), rows  # real grades, not only "unparsed"
    graded = json.loads((run / "judge.json").read_text())[h3]["tasks"]["arith"]
    assert graded["grades"] == hand
    assert graded["judge_unparsed"] == sum(v is None for v in hand.values())
    metrics = json.loads((run / "results.json").read_text())["results"]["arith"]
    assert metrics["judge_unparsed,single_10"] == graded["judge_unparsed"]
    assert f"{graded['judge_unparsed']} unparsed" in out
