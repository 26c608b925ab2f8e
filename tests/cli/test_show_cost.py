"""``lmeval show PLAN --cost``: per task the distinct requests, prompt tokens from the plan's token ids and the
most tokens generation may take (max_gen_toks x repeats), and a price from per-million-token prices."""

from __future__ import annotations

from pathlib import Path

from lmeval.plans.plan import read_plan
from tests.bounds import ARITHMETIC
from tests.executor import plantools as pt
from tests.support import cli_in_process


def _table(out: str) -> dict[str, list[str]]:
    return {line.split()[0]: line.split()[1:] for line in out.splitlines()[1:] if not line.startswith("prices")}


def test_cost_counts_prompt_and_generation_tokens_per_task(tmp_path: Path) -> None:
    plan = tmp_path / "p.msgpack"
    # gsm8k_copy asks gsm8k's first two requests again (same prompts): they are sent once, counted once
    pt.build(plan, [pt.gsm8k(3, max_gen_toks=24, repeats=2), pt.arc_easy(4), pt.gsm8k(2, name="gsm8k_copy")])
    insts = read_plan(plan).instances
    gsm = [i for i in insts if i.task == "gsm8k"]
    arc = [i for i in insts if i.task == "arc_easy"]
    gsm_prompt = sum(len(i.context_ids or []) for i in gsm)
    arc_prompt = sum(len(i.context_ids or []) + len(i.continuation_ids or []) for i in arc)
    assert gsm_prompt > 100 and arc_prompt > 100

    rc, out, err = cli_in_process("show", str(plan), "--cost")
    assert rc == 0, err
    t = _table(out)
    assert t["gsm8k"] == ["3", str(gsm_prompt), str(3 * 24 * 2)]
    assert t["arc_easy"] == [str(len(arc)), str(arc_prompt), "0"]
    assert t["gsm8k_copy"] == ["0", "0", "0"]
    assert t["total"] == [str(3 + len(arc)), str(gsm_prompt + arc_prompt), "144"]

    rc, out, err = cli_in_process("show", str(plan), "--cost", "--price-in", "0.15", "--price-out", "0.60")
    assert rc == 0, err
    price = float(_table(out)["total"][3])
    assert abs(price - round(((gsm_prompt + arc_prompt) * 0.15 + 144 * 0.60) / 1e6, 4)) < ARITHMETIC.atol
    assert "prices per million tokens: 0.15 in, 0.6 out" in out
