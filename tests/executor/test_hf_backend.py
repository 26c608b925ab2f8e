"""The ``hf`` backend's own paths on the tiny model and real data: scoring from shared forwards (one-token
groups, longer continuations, mixed lengths, batch boundaries, shared few-shot prefixes) against a plain
one-request-per-forward computation; batched generation's sampling settings, seeds and stop strings; the
batch-size rule of ``docs/how-to/hf-backend.md``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from lmeval.executor.answers import sample_text
from lmeval.executor.backends.hf import HFBackend
from lmeval.executor.backends.hf_memory import ModelDims, auto_batch_size, per_sequence
from lmeval.executor.backends.hf_sample import restrict, stop_window
from lmeval.executor.backends.hf_scoreplan import cover, prefix_groups
from lmeval.executor.modelconf import ModelSpec
from lmeval.executor.requests import GenInput, GenParams, ScoreInput
from tests.bounds import VS_LM_EVAL
from tests.support import jsonl_rows


@pytest.fixture(scope="module")
def backend(tiny_model: Path) -> Iterator[HFBackend]:
    # one thread: the tiny model's matmuls gain nothing from two, and two spinning OpenMP threads on a
    # shared 2-core machine slow every forward many times over (tests/e2e/background.py)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield HFBackend(ModelSpec("tiny", str(tiny_model), "hf"), tiny_model)
    torch.set_num_threads(threads)


def _enc(b: HFBackend, text: str) -> list[int]:
    return b.tokenizer.encode(text, add_special_tokens=False)


def mmlu_inputs(b: HFBackend, subject: str = "anatomy", docs: int = 6) -> list[ScoreInput]:
    """lm-eval's MMLU 5-shot prompts (first_n dev shots), choices " A".." D": one token each."""

    def q(d: dict[str, Any]) -> str:
        return d["question"].strip() + "".join(f"\n{L}. {c}" for L, c in zip("ABCD", d["choices"], strict=True))

    shots = jsonl_rows(f"mmlu/{subject}", "dev", 5)
    head = f"The following are multiple choice questions (with answers) about {subject}.\n\n"
    head += "".join(q(d) + "\nAnswer: " + "ABCD"[d["answer"]] + "\n\n" for d in shots)
    out = []
    for n, d in enumerate(jsonl_rows(f"mmlu/{subject}", "test", docs)):
        ctx = _enc(b, head + q(d) + "\nAnswer:")
        for L in "ABCD":
            cont = _enc(b, " " + L)
            assert len(cont) == 1
            out.append(ScoreInput(ctx + cont, len(ctx), f"mmlu:{n}:{L}"))
    return out


def arc_inputs(b: HFBackend, docs: int = 8) -> list[ScoreInput]:
    """arc_easy 0-shot: multi-token choices of mixed lengths; each doc also scores its first choice's first
    token alone (a continuation another one extends)."""
    out = []
    for n, d in enumerate(jsonl_rows("arc_easy", "test", docs)):
        ctx = _enc(b, "Question: " + d["question"] + "\nAnswer:")
        for k, text in enumerate(d["choices"]["text"]):
            cont = _enc(b, " " + text)
            out.append(ScoreInput(ctx + cont, len(ctx), f"arc:{n}:{k}"))
            if k == 0:
                out.append(ScoreInput(ctx + cont[:1], len(ctx), f"arc:{n}:{k}:head"))
    return out


def greedy_inputs(b: HFBackend) -> list[ScoreInput]:
    """Continuations that are the model's own greedy tokens (``is_greedy`` true), and one that is not."""
    out = []
    for n, d in enumerate(jsonl_rows("arc_easy", "test", 2)):
        ctx = _enc(b, "Question: " + d["question"] + "\nAnswer:")
        ids = list(ctx)
        with torch.inference_mode():
            for _ in range(3):
                ids.append(int(b.model(input_ids=torch.tensor([ids])).logits[0, -1].argmax()))
        out.append(ScoreInput(ids, len(ctx), f"greedy:{n}"))
        out.append(ScoreInput(ids[:-1] + [(ids[-1] + 1) % 4096], len(ctx), f"greedy:{n}:not"))
    return out


def rolling_inputs(b: HFBackend) -> list[ScoreInput]:
    ids = _enc(b, " ".join(d["question"] for d in jsonl_rows("arc_easy", "test", 6)))
    return [ScoreInput([0] + ids[:-1], 1, "roll")]


def one_per_forward(b: HFBackend, x: ScoreInput) -> tuple[float, bool]:
    with torch.inference_mode():
        logits = b.model(input_ids=torch.tensor([x.ids])).logits[0].float()
    lp = torch.log_softmax(logits[x.ctxlen - 1 : len(x.ids) - 1], dim=-1)
    t = torch.tensor(x.ids[x.ctxlen :])
    return float(lp.gather(1, t[:, None]).sum()), bool((lp.argmax(dim=-1) == t).all())


@pytest.fixture(scope="module")
def all_inputs(backend: HFBackend) -> list[ScoreInput]:
    return mmlu_inputs(backend, docs=3) + arc_inputs(backend, docs=4) + greedy_inputs(backend) + rolling_inputs(backend)


@pytest.fixture(scope="module")
def reference(backend: HFBackend, all_inputs: list[ScoreInput]) -> list[tuple[float, bool]]:
    return [one_per_forward(backend, x) for x in all_inputs]


class Counting:
    """Counts the backend's forward passes (prefix passes included)."""

    def __init__(self, b: HFBackend) -> None:
        self.b, self.calls = b, 0

    def __enter__(self) -> Counting:
        self.orig = self.b._forward

        def counted(*a: Any, **k: Any) -> Any:
            self.calls += 1
            return self.orig(*a, **k)

        self.b._forward = counted  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        self.b._forward = self.orig  # type: ignore[method-assign]


@pytest.mark.parametrize(
    ("batch_size", "head"),
    [(1, "rows"), (3, "rows"), (64, "rows"), (3, "logits_to_keep"), (3, "all")],
)
def test_scores_equal_one_request_per_forward(
    backend: HFBackend, all_inputs: list[ScoreInput], reference: list[tuple[float, bool]], batch_size: int, head: str
) -> None:
    """``head``: the head on the read rows only (a plain-head model), on the union of positions
    (``logits_to_keep``), on every position (a model without it)."""
    saved = backend._plain_head, backend._can_keep
    backend._fixed_batch = batch_size
    backend._plain_head, backend._can_keep = head == "rows", head != "all"
    try:
        got = dict(backend.score(all_inputs))
    finally:
        backend._fixed_batch = None
        backend._plain_head, backend._can_keep = saved
    assert sorted(got) == list(range(len(all_inputs)))
    # the reference computes one request per forward, as lm-eval's hf backend does: its bound
    assert VS_LM_EVAL.outside([got[i].logprob for i in range(len(reference))], [r[0] for r in reference]) == []
    assert [got[i].is_greedy for i in range(len(all_inputs))] == [r[1] for r in reference]
    assert {r[1] for r in reference} == {True, False}  # the greedy check sees both answers


def test_one_forward_per_mmlu_question(backend: HFBackend) -> None:
    """Four one-token choices per question, one forward per question, the 5-shot prefix once for all."""
    xs = mmlu_inputs(backend, docs=5)
    fw = cover(xs)
    assert len(fw) == 5 and all(len(f.members) == 4 for f in fw)
    groups = prefix_groups(fw)
    assert len(groups) == 1 and groups[0].prefix > 300  # the shared description and five shots
    backend._fixed_batch = 1
    try:
        with Counting(backend) as c:
            list(backend.score(xs))
    finally:
        backend._fixed_batch = None
    assert c.calls == 1 + 5  # the prefix, then one forward per question (batch size 1)


def test_computed_tokens_are_the_prefix_once_and_each_question(backend: HFBackend) -> None:
    """The efficiency figure's work side (``cache_stats["computed_tokens"]``): at batch size 1 no padding,
    so the prefix once plus each question's own tokens, fewer than the distinct positions of the requests
    (the choices are read from one row, never run) and far fewer than one forward per request."""
    from lmeval.executor.efficiency import distinct_positions

    xs = mmlu_inputs(backend, docs=5)
    prefix = prefix_groups(cover(xs))[0].prefix
    contexts = {tuple(x.ids[: x.ctxlen]) for x in xs}
    before = backend.cache_stats["computed_tokens"]
    backend._fixed_batch = 1
    try:
        list(backend.score(xs))
    finally:
        backend._fixed_batch = None
    computed = backend.cache_stats["computed_tokens"] - before
    assert computed == prefix + sum(len(c) - prefix for c in contexts)
    assert computed < distinct_positions([x.ids for x in xs]) < sum(len(x.ids) for x in xs)


def test_extended_continuation_read_from_the_longer_forward(backend: HFBackend) -> None:
    xs = arc_inputs(backend, docs=3)
    fw = cover(xs)
    heads = [i for i, x in enumerate(xs) if x.key.endswith(":head")]
    assert all(any(h in f.members and len(f.members) > 1 for f in fw) for h in heads)
    assert len(fw) == len(xs) - len(heads)


# ------------------------------------------------------------------------------------------ generation


def gsm_prompts(b: HFBackend, n: int = 4) -> list[list[int]]:
    shots = jsonl_rows("gsm8k", "train", 2)
    head = "".join(f"Question: {d['question']}\nAnswer: {d['answer']}\n\n" for d in shots)
    return [_enc(b, head + f"Question: {d['question']}\nAnswer:") for d in jsonl_rows("gsm8k", "test", n)]


def _gen(b: HFBackend, xs: list[GenInput], batch_size: int | None = None) -> dict[int, list[list[int]]]:
    b._fixed_batch = batch_size
    try:
        return {i: [s.token_ids or [] for s in o.samples] for i, o in b.generate(xs)}
    finally:
        b._fixed_batch = None


def test_top_k_1_sampling_is_greedy(backend: HFBackend) -> None:
    prompts = gsm_prompts(backend)
    greedy = _gen(backend, [GenInput(p, GenParams(24, []), str(i)) for i, p in enumerate(prompts)])
    hot = GenParams(24, [], temperature=5.0, top_k=1, seed=3, n=2)
    sampled = _gen(backend, [GenInput(p, hot, str(i)) for i, p in enumerate(prompts)])
    assert all(sampled[i] == greedy[i] * 2 for i in greedy)
    loose = _gen(backend, [GenInput(p, GenParams(24, [], temperature=5.0, seed=3), str(i))
                           for i, p in enumerate(prompts)])  # fmt: skip
    assert any(loose[i] != greedy[i] for i in greedy)  # temperature alone does sample


def test_same_seed_same_samples_whatever_the_batch(backend: HFBackend) -> None:
    prompts = gsm_prompts(backend)
    p = GenParams(20, [], temperature=1.5, top_p=0.9, seed=11, n=3)
    alone = _gen(backend, [GenInput(prompts[0], p, "a")], batch_size=1)
    others = [GenInput(q, GenParams(20, [], temperature=1.0, seed=5 + i), str(i)) for i, q in enumerate(prompts[1:])]
    mixed = _gen(backend, [*others, GenInput(prompts[0], p, "a")], batch_size=4)
    assert mixed[len(others)] == alone[0]
    assert len({tuple(s) for s in alone[0]}) > 1  # seed + sample: the three samples differ
    other_seed = _gen(backend, [GenInput(prompts[0], GenParams(20, [], temperature=1.5, top_p=0.9, seed=12), "a")])
    assert other_seed[0][0] != alone[0][0]


def test_restrict_matches_vllms_order() -> None:
    """temperature, then min_p of the tempered distribution, top_k with ties kept, top_p of what is left."""
    logits = torch.tensor([4.0, 3.0, 3.0, 2.0, 1.0, 0.0])
    kept = lambda p: (restrict(logits, p) > float("-inf")).tolist()  # noqa: E731
    assert kept(GenParams(1, [], temperature=1.0, top_k=2)) == [True, True, True, False, False, False]
    probs = torch.softmax(logits / 0.5, dim=-1)
    top2 = float(probs[0] + probs[1])  # p of {0, 1} = top_p boundary: cumulative of the low tail
    assert kept(GenParams(1, [], temperature=0.5, top_p=0.5)) == [True, False, False, False, False, False]
    assert kept(GenParams(1, [], temperature=0.5, top_p=min(0.999, top2 + 1e-3))) == [True, True, True] + [False] * 3
    # min_p 0.3 of the tempered max: exp(-2) = 0.135 of the max is dropped at temperature 1, kept at 2
    assert kept(GenParams(1, [], temperature=1.0, min_p=0.3)) == [True, True, True, False, False, False]
    assert kept(GenParams(1, [], temperature=2.0, min_p=0.3)) == [True, True, True, True, False, False]


@pytest.mark.vllm
def test_restrict_agrees_with_vllm_sampler_ops() -> None:
    ops = pytest.importorskip("vllm.v1.sample.ops.topk_topp_sampler")
    g = torch.Generator().manual_seed(0)
    for k, p in ((5, None), (None, 0.8), (40, 0.9), (1, 0.5)):
        x = torch.randn(300, generator=g) * 3
        ours = restrict(x, GenParams(1, [], temperature=1.0, top_k=k or 0, top_p=p if p is not None else 1.0))
        theirs = ops.apply_top_k_top_p_pytorch(x.clone()[None], None if k is None else torch.tensor([k]),
                                               None if p is None else torch.tensor([p]))[0]  # fmt: skip
        assert torch.equal(ours > float("-inf"), theirs > float("-inf"))


def test_stop_strings_stop_where_the_text_first_holds_one(backend: HFBackend) -> None:
    """As the whole-text check does (vLLM's): the first token after which the generated text, special
    tokens kept, contains a stop string; the response is cut as the executor cuts."""
    prompts = gsm_prompts(backend)
    free = _gen(backend, [GenInput(p, GenParams(48, []), str(i)) for i, p in enumerate(prompts)])
    dec = backend.tokenizer.decode_with_special
    for i, p in enumerate(prompts):
        ids = free[i][0]
        text = dec(ids)
        mid = len(dec(ids[:20]))
        stop = text[mid - 2 : mid + 3]  # across a token boundary, starting where the text is far along
        if not stop.strip():
            continue
        want = next(k for k in range(1, len(ids) + 1) if stop in dec(ids[:k]))
        out = next(o for _, o in backend.generate([GenInput(p, GenParams(48, [stop, "never-seen"]), "s")]))
        s = out.samples[0]
        assert s.token_ids == ids[:want] and s.finish_reason == "stop"
        assert sample_text(s, backend.tokenizer, [stop]) == backend.tokenizer.decode(ids[:want]).split(stop)[0]
    assert stop_window(["\n\n", "Question:"]) == len(b"Question:") + 2


def test_length_and_eos_finish_reasons(backend: HFBackend) -> None:
    prompts = gsm_prompts(backend, 2)
    outs = dict(backend.generate([GenInput(prompts[0], GenParams(5, []), "a"),
                                  GenInput(prompts[1], GenParams(9, []), "b")]))  # fmt: skip
    assert [len(outs[0].samples[0].token_ids or []), len(outs[1].samples[0].token_ids or [])] == [5, 9]
    assert outs[0].samples[0].finish_reason == "length"


# ------------------------------------------------------------------------------------------ batch size

SMOLLM2 = ModelDims(hidden=576, intermediate=1536, layers=30, heads=9, kv_dim=192, vocab=49152, dtype_bytes=4)


def test_batch_size_rule_is_the_documented_one() -> None:
    """docs/how-to/hf-backend.md's worked example: SmolLM2 in float32, a 1,024-token phase, 16 GiB free."""
    assert (
        per_sequence(SMOLLM2, 1024)
        == 1024 * 4 * (4 * 576 + 2 * 192 + 3 * 1536)
        + 1024 * 2 * 30 * 192 * 4
        + (1024 * 9 * 1024 * 4)
        + 1024 * 49152 * 8
    )
    assert auto_batch_size(SMOLLM2, 1024, 16 << 30) == 16
    assert auto_batch_size(SMOLLM2, 100, 16 << 30) == 64  # capped
    assert auto_batch_size(SMOLLM2, 8192, 1 << 30) == 1  # never 0
    doc = (Path(__file__).resolve().parents[2] / "docs" / "how-to" / "hf-backend.md").read_text()
    assert "batch size 16" in doc and "FRACTION = 0.5" in doc and "MAX_AUTO = 64" in doc


def test_backend_uses_the_rule_unless_set(backend: HFBackend, tiny_model: Path) -> None:
    from lmeval.executor.backends.hf_memory import free_memory, model_dims

    assert backend.batch_size_for(500) == auto_batch_size(model_dims(backend.model.config, "float32"), 500,
                                                          free_memory())  # fmt: skip
    fixed = HFBackend(ModelSpec("tiny", str(tiny_model), "hf", batch_size=5), tiny_model)
    assert fixed.batch_size_for(500) == 5 and fixed.engine_args()["batch_size"] == 5
    assert backend.engine_args()["batch_size"] == "auto"


def test_generation_shared_prefix_runs_once_and_changes_nothing(backend: HFBackend) -> None:
    """gsm8k prompts share their few-shot examples: a batch runs them once (one prefix pass), and the
    tokens are those of each prompt generated alone."""
    prompts = gsm_prompts(backend)
    xs = [GenInput(p, GenParams(24, ["\n\n"]), str(i)) for i, p in enumerate(prompts)]
    alone = _gen(backend, xs, batch_size=1)
    backend._fixed_batch = 4
    try:
        with Counting(backend) as c:
            together = {i: [s.token_ids for s in o.samples] for i, o in backend.generate(xs)}
    finally:
        backend._fixed_batch = None
    assert c.calls == 1 and together == alone
