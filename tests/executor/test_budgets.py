"""Thinking and answer budgets enforced (``executor/budgets.py``, contract ``plans/vocab/budgets.py``): a scripted
backend whose greedy continuation follows a fixed chain of word tokens, with the engine's stop-string, EOS and
``max_tokens`` behaviour, so each phase's inputs and the merged response are checked exactly."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace

import polars as pl
import pytest

from lmeval.executor import budgets
from lmeval.executor.requests import GenInput, GenJob, GenOutput, GenParams, Sample, gen_result
from lmeval.plans.vocab import Reasoning, ThinkingBudget, read_budget

WORDS = ["<eos>", ":", "<think>", " a", "\n\n", " b", "</think>", " x", " 7", "?", " q"]
W = {w: i for i, w in enumerate(WORDS)}
# after ":" the model thinks (with a blank line inside), closes, answers " x 7"; after "?" it ends thinking on EOS
NEXT = {":": "<think>", "<think>": " a", " a": "\n\n", "\n\n": " b", " b": "</think>", "</think>": " x",
        " x": " 7", " 7": "<eos>", "?": " q", " q": "<eos>"}  # fmt: skip
FMT = Reasoning(("</think>",), "<think>")


class WordTok:
    eos_token_id: int | None = 0
    bos_token_id: int | None = None

    def encode(self, text: str, add_special_tokens: bool) -> list[int]:
        out, rest = [], text
        while rest:
            w = max((w for w in WORDS if rest.startswith(w)), key=len)
            out.append(W[w])
            rest = rest[len(w) :]
        return out

    def decode(self, ids: Sequence[int]) -> str:
        return "".join(WORDS[i] for i in ids if i != 0)

    def token_text(self, token_id: int) -> str:
        return WORDS[token_id]


class ChainBackend:
    """Greedy decoding of the chain: stops on EOS, on a stop string in the decoded text (its tokens kept in
    the ids, as vLLM does), or after ``max_tokens`` (``length``). ``text_only``: ids withheld and the stop
    string cut from the text, as a text API returns it."""

    name = "chain"
    max_length = 4096

    def __init__(self, text_only: bool = False, n: int = 1) -> None:
        self.tokenizer = WordTok()
        self.calls: list[list[GenInput]] = []
        self.text_only, self.n = text_only, n

    def _one(self, x: GenInput) -> Sample:
        out: list[int] = []
        last = WORDS[x.ids[-1]]
        while len(out) < x.params.max_tokens:
            last = NEXT[last]
            out.append(W[last])
            text = self.tokenizer.decode(out)
            hit = next((s for s in x.params.stop if s in text), None)
            if last == "<eos>" or hit:
                if self.text_only:
                    return Sample(text.split(hit)[0] if hit else text, None, "stop")
                return Sample(None, out, "stop")
        return Sample(self.tokenizer.decode(out), None, "length") if self.text_only else Sample(None, out, "length")

    def generate(self, inputs: Sequence[GenInput]) -> Iterator[tuple[int, GenOutput]]:
        self.calls.append(list(inputs))
        for i, x in enumerate(inputs):
            yield i, GenOutput([self._one(x)] * (x.params.n if self.n > 1 else 1))


def job(prompt: str, budget: ThinkingBudget | None, until: list[str], n: int = 1, seed: int | None = None) -> GenJob:
    tok = WordTok()
    total = budget.total if budget else 50
    params = GenParams(max_tokens=total, stop=until, n=n, seed=seed, temperature=0.7 if seed else 0.0)
    return GenJob("k", GenInput(tok.encode(prompt, False), params, "k", prompt, budget), until, FMT)


def run(backend: ChainBackend, jobs: list[GenJob]) -> list[dict[str, object]]:
    outs = dict(budgets.generate(backend, [j.input for j in jobs]))  # type: ignore[arg-type]
    rows = []
    for i, j in enumerate(jobs):
        r = gen_result(j, outs[i], backend.tokenizer)
        first = r.responses[0] if r.responses else None
        rows.append({"response": first, "finish": r.finish_reason, "tokens": r.reasoning_tokens,
                     "forced": r.thinking_forced, "n": r.n_continuation_tokens})  # fmt: skip
    return rows


def B(thinking: int, answer: int) -> ThinkingBudget:
    return ThinkingBudget(thinking, answer, "</think>", (W["</think>"],))


def test_without_a_budget_the_task_stop_strings_cut_the_reasoning_as_before() -> None:
    be = ChainBackend()
    assert run(be, [job(":", None, ["\n\n"])]) == [
        {"response": "<think> a", "finish": "stop", "tokens": 2, "forced": None, "n": 3}
    ]
    assert len(be.calls) == 1


def test_closed_within_the_budget_stop_strings_cut_only_the_answer() -> None:
    be = ChainBackend()
    rows = run(be, [job(":", B(10, 10), ["\n\n"])])
    assert rows == [{"response": "<think> a\n\n b</think> x 7", "finish": "stop", "tokens": 4, "forced": False, "n": 8}]
    p1, p2 = be.calls
    assert p1[0].params.max_tokens == 10 and p1[0].params.stop == ["</think>"]  # phase 1: the marker only
    # phase 2 continues from the prompt and phase 1's own ids (the marker the model wrote is not doubled)
    assert p2[0].ids == [W[":"], 2, 3, 4, 5, 6]
    assert p2[0].params.max_tokens == 10 and p2[0].params.stop == ["\n\n"]


def test_forced_when_the_thinking_budget_runs_out_and_the_answer_budget_cuts() -> None:
    be = ChainBackend()
    forced, cut = run(be, [job(":", B(2, 10), ["\n\n"]), job(":", B(2, 1), ["\n\n"])])
    assert forced == {"response": "<think> a</think> x 7", "finish": "stop", "tokens": 2, "forced": True, "n": 6}
    assert cut == {"response": "<think> a</think> x", "finish": "length", "tokens": 2, "forced": True, "n": 4}
    assert be.calls[1][0].ids[-3:] == [W["<think>"], W[" a"], W["</think>"]]  # the marker's ids appended


def test_eos_inside_the_block_ends_the_response_and_unbudgeted_inputs_pass_through() -> None:
    be = ChainBackend()
    rows = run(be, [job("?", B(10, 10), ["\n\n"]), job(":", None, ["\n\n"])])
    assert rows[0] == {"response": " q", "finish": "stop", "tokens": None, "forced": False, "n": 2}  # no block
    assert rows[1]["response"] == "<think> a"
    assert len(be.calls) == 2 and be.calls[1] == []  # nothing left for phase 2


def test_sampled_repeats_continue_each_with_its_own_seed() -> None:
    be = ChainBackend(n=2)
    j = job(":", B(2, 10), [], n=2, seed=5)
    outs = dict(budgets.generate(be, [j.input]))  # type: ignore[arg-type]
    assert [x.params.seed for x in be.calls[1]] == [5, 6] and all(x.params.n == 1 for x in be.calls[1])
    assert gen_result(j, outs[0], be.tokenizer).responses == ["<think> a</think> x 7"] * 2


def test_a_text_only_backend_is_continued_from_its_text() -> None:
    rows = run(ChainBackend(text_only=True), [job(":", B(10, 10), ["\n\n"]), job(":", B(2, 10), [])])
    assert [r["response"] for r in rows] == ["<think> a\n\n b</think> x 7", "<think> a</think> x 7"]
    assert [r["forced"] for r in rows] == [False, True]


def test_budget_contract_is_checked() -> None:
    good = B(3, 4).to_dict()
    assert read_budget({"reasoning_budget": good}) == B(3, 4) and B(3, 4).total == 8
    assert read_budget({"until": ["x"]}) is None
    for bad, field in ((dict(good, thinking=0), "thinking"), (dict(good, end_ids=[]), "end_ids"),
                       ({"thinking": 1}, "reasoning_budget")):  # fmt: skip
        with pytest.raises(ValueError, match=field):
            read_budget({"reasoning_budget": bad})


def test_parts_written_before_the_new_columns_read_as_null(tmp_path: object) -> None:
    from pathlib import Path

    from lmeval.plans.results import checksummed
    from lmeval.plans.results.manifest import OPTIONAL_COLUMNS, RESULT_COLUMNS, polars_schema, read_parts

    schema = {k: v for k, v in polars_schema().items() if k not in OPTIONAL_COLUMNS}
    row = {k: None for k in schema} | {"instance_id": "a", "task": "t", "doc_id": 0, "idx": 0}
    d = Path(str(tmp_path))
    tmp = d / "x.parquet"
    pl.DataFrame([row], schema=schema).write_parquet(tmp)
    import hashlib

    part = d / checksummed("part-000000", hashlib.sha256(tmp.read_bytes()).hexdigest())
    tmp.rename(part)
    df = read_parts([part])
    assert df.columns[: len(RESULT_COLUMNS)] == list(RESULT_COLUMNS)
    assert df["reasoning_tokens"].to_list() == [None] and df["thinking_forced"].to_list() == [None]


def test_phase_inputs_are_plain_replacements() -> None:
    x = job(":", B(2, 3), ["\n\n"]).input
    assert budgets.thinking_input(x, B(2, 3)) == replace(
        x, params=replace(x.params, max_tokens=2, stop=["</think>"]), budget=None
    )
