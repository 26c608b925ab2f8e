"""Guards of three one-line bugs of the executor (#53 acceptance 4), without a real model: ``seed: 0`` reaches
chat and batch request bodies (0 is a seed, not "none"); one greedy row does not make a whole ``hf`` batch
greedy (each sampled row still draws from its own generator); the efficiency limit counts generated tokens."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch

from lmeval.executor.backends.hf_sample import Row, RowSampler, generator_for, pick
from lmeval.executor.efficiency import distinct_positions
from lmeval.executor.jobloop import GENERATION, JobLoop, RunStats
from lmeval.executor.requests import GenParams, JobResult
from tests.executor import plantools as pt
from tests.support import cli_in_process


def test_seed_0_reaches_batch_and_chat_bodies(tmp_path: Path) -> None:
    plan = tmp_path / "p.msgpack"
    pt.build(plan, [pt.gsm8k(2, extra={"do_sample": True, "temperature": 0.7, "seed": 0})])
    out = tmp_path / "in.jsonl"
    rc, _, err = cli_in_process("export-batch", str(plan), "--out", str(out), "model.path=stub-model",
                                "model.engine.model=stub")  # fmt: skip
    assert rc == 0, err
    bodies = [json.loads(line)["body"] for line in out.read_text().splitlines()]
    assert len(bodies) == 2 and all(b["seed"] == 0 and b["temperature"] == 0.7 for b in bodies), bodies


def test_one_greedy_row_leaves_the_sampled_rows_sampled() -> None:
    greedy = GenParams(max_tokens=4, stop=[])
    sampled = GenParams(max_tokens=4, stop=[], temperature=1.0, seed=7)
    rows = [Row(greedy, 0), Row(sampled, 0)]
    sampler = RowSampler(rows, [[1, 2], [3, 4]], width=2)
    scores = torch.zeros(2, 50)
    scores[:, 5] = 0.5  # the argmax; a draw from the (nearly flat) distribution almost surely picks another
    ids = torch.tensor([[1, 2], [3, 4]])
    out = sampler(ids, scores.clone())
    want = pick(scores[1], torch.tensor([3, 4]), torch.tensor([], dtype=torch.long), sampled, generator_for(sampled, 0))
    assert want != 5
    assert int(out[0].argmax()) == 5 and int(out[1].argmax()) == want
    assert torch.isinf(out[1]).sum() == 49  # one token left to the sampled row, as its generator drew it


class _Sink:
    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def add(self, rows: Any, tokens: int) -> None:
        self.rows.extend(rows)

    def flush(self) -> None:
        pass


def test_the_efficiency_limit_counts_generated_tokens() -> None:
    """Three generations whose prompts share a prefix; each output generated 5 tokens: the limit is the prompts'
    distinct positions plus 15, whatever the backend."""
    prompts = [[1, 2, 3, 4], [1, 2, 3, 9], [7, 8]]
    outputs = {i: SimpleNamespace(samples=[SimpleNamespace(token_ids=[0] * 5)]) for i in range(3)}
    kind = GENERATION.__class__(
        **{**vars(GENERATION),
           "build": lambda inst, backend, spec, rule, where: SimpleNamespace(key="", size=1, input=SimpleNamespace(
               ids=prompts[inst.doc_id])),
           "run": lambda backend, inputs: iter(outputs.items()),
           "result": lambda job, outs, backend: JobResult(responses=["x"]),
           "problem": lambda x, out: None}  # outputs of the shape the limit reads only
    )  # fmt: skip
    insts = [pt.instance("t", d, 0, "generate_until", f"q{d}", generation_kwargs={"until": []}) for d in range(3)]
    spec = SimpleNamespace(backend="fake", token_rule=None, add_bos_token=None, prefix_token_id=None, seed=1234)
    stats = RunStats()
    loop = JobLoop(SimpleNamespace(tokenizer=None), spec, "plan", _Sink(), stats)  # type: ignore[arg-type]
    loop.run_kind(kind, insts)
    assert stats.distinct_tokens == distinct_positions(prompts) + 15 == 7 + 15
