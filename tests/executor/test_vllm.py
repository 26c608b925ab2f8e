"""The vLLM backend on the tiny model, cross-checked against the transformers (``hf``) backend on real data:
arc_easy 25-shot, gsm8k 5-shot generation, winogrande, rolling log-likelihoods, and continuations that are
the model's own greedy output (so ``is_greedy`` is true for some Instances and the check means something).
One in-process engine serves the whole module; the kill test runs the CLI in subprocesses."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from lmeval.executor import execute
from lmeval.executor.backends.vllm_engine import VLLMBackend
from lmeval.executor.modelconf import ModelSpec, model_spec, resolve_model_config
from lmeval.executor.options import RunOptions
from lmeval.executor.run import run_plan
from lmeval.plans.io import read_header
from lmeval.plans.records import DocRecord, InstanceRecord, instance_id_for, request_hash_of
from lmeval.plans.results import part_files, read_manifest
from tests.executor import plantools as pt
from tests.executor.conftest import frame, run_cli

pytestmark = pytest.mark.vllm

TOL = 1e-4


class SharedEngine:
    """One engine for the module; ``close`` from an execute call leaves it running."""

    def __init__(self) -> None:
        self.backend: VLLMBackend | None = None

    def __call__(self, spec: ModelSpec, model_dir: Path | None) -> Any:
        if self.backend is None:
            assert model_dir is not None
            self.backend = VLLMBackend(spec, model_dir)
        backend = self.backend

        class Handle:
            name = backend.name
            max_length = backend.max_length
            tokenizer = backend.tokenizer
            score = backend.score
            generate = backend.generate
            engine_args = backend.engine_args

            def close(self) -> None:
                pass

        return Handle()


@pytest.fixture(scope="module")
def engine() -> SharedEngine:
    return SharedEngine()


def _greedy_task(tiny_model: Path, n: int) -> pt.Task:
    """Loglikelihood Instances whose continuation is the model's greedy continuation (is_greedy true),
    and the same with its last token replaced (is_greedy false). Greedy tokens come from transformers."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(tiny_model), dtype=torch.float32).eval()
    docs = []
    for doc_id, row in enumerate(pt.rows("arc_easy", "validation", n)):
        ctx = f"Question: {row['question']}\nAnswer:"
        ctx_ids = pt.encode(ctx)
        with torch.inference_mode():
            out = model.generate(
                torch.tensor([ctx_ids]), max_new_tokens=4, do_sample=False, eos_token_id=None, pad_token_id=0
            )
        greedy = [int(t) for t in out[0, len(ctx_ids) :]]
        wrong = greedy[:-1] + [(greedy[-1] + 17) % 4000 + 5]
        insts = []
        for idx, cont in enumerate((greedy, wrong)):
            text = pt.tokenizer().decode(cont)
            insts.append(
                InstanceRecord(
                    instance_id=instance_id_for("greedy", doc_id, idx),
                    task="greedy",
                    doc_id=doc_id,
                    idx=idx,
                    request_type="loglikelihood",
                    context=ctx,
                    continuation=text,
                    context_ids=ctx_ids,
                    continuation_ids=cont,
                    request_hash=request_hash_of("loglikelihood", ctx, text, None, ctx_ids, cont),
                )
            )
        docs.append((DocRecord("greedy", doc_id, row, 0), insts))
    return "greedy", "multiple_choice", docs


@pytest.fixture(scope="module")
def parity_plan(tmp_path_factory: pytest.TempPathFactory, tiny_model: Path) -> Path:
    """Compiled arc_easy 25-shot, gsm8k 5-shot and winogrande subsets (lm-eval's task configs), plus rolling
    and own-greedy-continuation tasks built here (no shipped task config has those)."""
    d = tmp_path_factory.mktemp("vllm")
    arc = pt.compiled(d / "arc.msgpack", "+task=arc_easy", "run.num_fewshot=25", "run.limit=6")
    rest = pt.compiled(
        d / "rest.msgpack", "+task=[gsm8k,winogrande]", "run.limit=6", "run.gen_kwargs={max_gen_toks:96}"
    )
    pt.extend(rest, d / "rest_plus.msgpack", [pt.rolling(4), _greedy_task(tiny_model, 8)])
    from lmeval.plans.io import read_plan

    arc_plan = read_plan(arc)
    arc_task = (
        arc_plan.header.tasks[0].name,
        "multiple_choice",
        [(doc, [i for i in arc_plan.instances if i.doc_id == doc.doc_id]) for doc in arc_plan.docs],
    )
    path = d / "parity.msgpack"
    pt.extend(d / "rest_plus.msgpack", path, [arc_task])
    return path


@pytest.fixture(scope="module")
def vllm_results(parity_plan: Path, engine: SharedEngine, tmp_path_factory: pytest.TempPathFactory) -> Path:
    opts = RunOptions(out=str(tmp_path_factory.mktemp("v") / "r"), progress=False, part_size=16)
    return run_plan(str(parity_plan), opts, backend_factory=engine)


@pytest.fixture(scope="module")
def hf_results(parity_plan: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return execute(
        str(parity_plan), out=str(tmp_path_factory.mktemp("h") / "r"), overrides=["model.backend=hf"], progress=False
    )


def test_vllm_matches_hf(vllm_results: Path, hf_results: Path) -> None:
    v, h = frame(vllm_results), frame(hf_results)
    assert v.height == h.height and read_manifest(vllm_results).backend == "vllm"
    j = v.join(h, on="instance_id", suffix="_hf")
    assert j.height == v.height
    ll = j.filter(pl.col("request_type") == "loglikelihood")
    diff = (ll["loglikelihood"] - ll["loglikelihood_hf"]).abs()
    assert diff.max() < TOL, ll.with_columns(d=diff).sort("d", descending=True).head(3)
    assert (ll["is_greedy"] == ll["is_greedy_hf"]).all()
    greedy = ll.filter(pl.col("task") == "greedy").sort("doc_id", "idx")
    assert greedy["is_greedy"].to_list() == [True, False] * (greedy.height // 2)
    # rolling sums run over hundreds of tokens of ~-17 each: float32 agreement is per token
    roll = j.filter(pl.col("request_type") == "loglikelihood_rolling")
    per_tok = (roll["loglikelihood"] - roll["loglikelihood_hf"]).abs() / roll["n_continuation_tokens"]
    assert roll.height == 4 and per_tok.max() < TOL
    gen = j.filter(pl.col("request_type") == "generate_until")
    assert gen.height == 6 and set(gen["task"]) == {"gsm8k"}
    assert set(ll["task"]) == {"arc_easy", "winogrande", "greedy"}
    assert gen["response"].to_list() == gen["response_hf"].to_list()
    assert (gen["response"].str.len_chars() > 0).all()
    assert not gen["response"].str.contains("Question:").any()


def test_same_plan_twice_identical_on_vllm(
    parity_plan: Path, vllm_results: Path, engine: SharedEngine, tmp_path: Path
) -> None:
    opts = RunOptions(out=str(tmp_path / "again"), progress=False, part_size=5)
    again = run_plan(str(parity_plan), opts, backend_factory=engine)
    assert frame(again).equals(frame(vllm_results))


def test_kill_and_resume_on_vllm(parity_plan: Path, vllm_results: Path, tmp_path: Path) -> None:
    out = tmp_path / "r"
    args = ("execute", str(parity_plan), "--no-progress", "--part-size", "8", "--out", str(out))
    r = run_cli(*args, env={"LMEVAL_EXECUTOR_FAULT": "part:3"})
    assert r.returncode == -signal.SIGKILL, r.stderr[-2000:]
    before = sum(pl.read_parquet(p).height for p in part_files(out))
    assert 0 < before < frame(vllm_results).height
    r = run_cli(*args)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip().splitlines()[-1] == str(out)
    stats = read_manifest(out).stats
    total = frame(vllm_results).height
    assert stats["resumed"] == before and stats["executed"] == total - before
    resumed, ref = frame(out), frame(vllm_results)
    assert resumed["instance_id"].to_list() == ref["instance_id"].to_list()
    assert resumed.drop("loglikelihood").equals(ref.drop("loglikelihood"))
    d = (resumed["loglikelihood"] - ref["loglikelihood"]).abs().max()
    assert d is None or d < 1e-6  # batch composition differs after a resume


def test_engine_args_come_from_config_and_overrides(parity_plan: Path, tiny_model: Path) -> None:
    header = read_header(parity_plan)
    spec = model_spec(resolve_model_config(header, ["model.engine.max_num_seqs=7", "model.dtype=float32"]))
    from lmeval.executor.backends.vllm_engine import engine_args
    from lmeval.executor.engineconf import Platform, vllm_engine_keys

    args = engine_args(spec, tiny_model, Platform("cpu"), vllm_engine_keys())
    assert args["max_num_seqs"] == 7 and args["kv_cache_memory_bytes"] == 1 << 30
    assert args["enforce_eager"] is True and args["max_model_len"] == 16384 and args["dtype"] == "float32"


def test_prefix_cache_reuse_scores_equal_a_full_recompute(parity_plan: Path, engine: SharedEngine) -> None:
    """Requests sharing a context read it from the prefix cache; one whose cache hit reaches into its
    continuation is scored again without it. Every score equals a recompute of the whole prompt, bit for bit."""
    from lmeval.executor.backends.vllm_engine import continuation_score
    from lmeval.executor.modelconf import resolve_model_dir
    from lmeval.executor.requests import ScoreInput
    from lmeval.plans.io import read_plan

    spec = model_spec(resolve_model_config(read_header(parity_plan), []))
    engine(spec, resolve_model_dir(spec))
    backend = engine.backend
    assert backend is not None
    ll = [i for i in read_plan(parity_plan).instances if i.request_type == "loglikelihood" and i.continuation_ids]
    inputs = [ScoreInput([*i.context_ids, *i.continuation_ids], len(i.context_ids), i.request_hash) for i in ll]
    assert len({tuple(x.ids[: x.ctxlen]) for x in inputs}) < len(inputs)  # contexts repeat (choices of a doc)
    x = inputs[0]
    long = ScoreInput(x.ids + x.ids[:80], x.ctxlen, "long")  # its repeat hits the cache past the context
    inputs += [long, long]
    before = dict(backend.cache_stats)
    reused = dict(backend.score(inputs))
    full = {
        k: continuation_score(out.prompt_logprobs, inputs[k].ids, inputs[k].ctxlen)
        for k, out in backend._stream([x.ids for x in inputs], backend._score_params(False))
    }
    assert sorted(reused) == list(range(len(inputs)))
    assert reused == full
    assert backend.cache_stats["cached_prompt_tokens"] > before["cached_prompt_tokens"]
    assert backend.cache_stats["rescored"] > before["rescored"]
