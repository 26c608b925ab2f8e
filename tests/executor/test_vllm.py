"""The vLLM backend on the tiny model, cross-checked against the transformers (``hf``) backend on real data:
arc_easy 25-shot, gsm8k 5-shot generation, winogrande, rolling log-likelihoods, and continuations that are
the model's own greedy output (so ``is_greedy`` is true for some Instances and the check means something).
One in-process engine serves the whole module; the kill test runs the CLI in subprocesses."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from lmeval.executor import execute
from lmeval.executor.modelconf import model_spec, resolve_model_config
from lmeval.executor.options import RunOptions
from lmeval.executor.run import run_plan
from lmeval.plans.plan import read_header
from lmeval.plans.results import part_files, read_manifest
from tests.bounds import LOGLIKELIHOOD, VS_LM_EVAL
from tests.executor import vllm_plan
from tests.executor.conftest import REPO, frame, run_cli
from tests.executor.vllm_plan import SharedEngine
from tests.support import row_diffs

pytestmark = pytest.mark.vllm


@pytest.fixture(scope="module")
def engine() -> SharedEngine:
    return SharedEngine()


@pytest.fixture(scope="module")
def parity_plan(tmp_path_factory: pytest.TempPathFactory, tiny_model: Path) -> Path:
    return vllm_plan.parity_plan(tmp_path_factory.mktemp("vllm"), tiny_model)


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
    # vLLM's kernels against transformers' (what lm-eval's hf backend runs): the bound against lm-eval
    assert VS_LM_EVAL.outside(ll["loglikelihood"].to_list(), ll["loglikelihood_hf"].to_list()) == []
    assert (ll["is_greedy"] == ll["is_greedy_hf"]).all()
    greedy = ll.filter(pl.col("task") == "greedy").sort("doc_id", "idx")
    assert greedy["is_greedy"].to_list() == [True, False] * (greedy.height // 2)
    # rolling sums run over hundreds of tokens of ~-17 each: the bound's relative part
    roll = j.filter(pl.col("request_type") == "loglikelihood_rolling")
    assert roll.height == 4
    assert VS_LM_EVAL.outside(roll["loglikelihood"].to_list(), roll["loglikelihood_hf"].to_list()) == []
    gen = j.filter(pl.col("request_type") == "generate_until")
    assert gen.height == 6 and set(gen["task"]) == {"gsm8k"}
    assert set(ll["task"]) == {"arc_easy", "winogrande", "greedy"}
    assert gen["response"].to_list() == gen["response_hf"].to_list()
    assert (gen["response"].str.len_chars() > 0).all()
    assert not gen["response"].str.contains("Question:").any()


def test_manifest_says_how_far_from_the_limit(parity_plan: Path, vllm_results: Path) -> None:
    """The run's stats carry the limit (distinct token positions of the requests plus generated tokens)
    and the tokens the engine computed. The plan's contexts repeat (a doc's choices), so the limit is below
    the tokens of one request per Instance; every distinct position was computed or read from the cache."""
    from lmeval.executor.efficiency import distinct_positions
    from lmeval.plans.plan import read_plan

    stats = read_manifest(vllm_results).stats
    scored = [i for i in read_plan(parity_plan).instances if i.request_type == "loglikelihood"]
    seqs = [[*i.context_ids, *i.continuation_ids] for i in scored if i.continuation_ids]
    assert seqs and distinct_positions(seqs) < sum(map(len, seqs))
    assert 0 < stats["distinct_tokens"] and 0 < stats["computed_tokens"]
    assert stats["computed_tokens"] + stats["cached_prompt_tokens"] >= stats["distinct_tokens"]


def test_same_plan_twice_identical_on_vllm(
    parity_plan: Path, vllm_results: Path, engine: SharedEngine, tmp_path: Path
) -> None:
    """docs "What repeats exactly": the same plan again on the same engine (its prefix cache warm from the
    first run, another part size) gives the same rows, log-likelihoods within the stated tolerance."""
    opts = RunOptions(out=str(tmp_path / "again"), progress=False, part_size=5)
    again = frame(run_plan(str(parity_plan), opts, backend_factory=engine))
    first = frame(vllm_results)
    assert again["instance_id"].to_list() == first["instance_id"].to_list()
    assert not row_diffs(again, first), row_diffs(again, first)[:5]
    assert read_manifest(tmp_path / "again").numerics.part_size == 5


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
    # batch composition differs after a resume: the docs' tolerance, not bit identity
    assert not row_diffs(resumed, ref), row_diffs(resumed, ref)[:5]


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
    continuation is scored again without it. Every score equals a recompute of the whole prompt within the
    the docs' tolerance (the cached-prefix attention kernel sums in another order), is_greedy exactly."""
    from lmeval.executor.backends.vllm_engine import continuation_score
    from lmeval.executor.modelconf import resolve_model_dir
    from lmeval.executor.requests import ScoreInput
    from lmeval.plans.plan import read_plan

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
    assert sorted(reused) == list(range(len(inputs))) == sorted(full)
    bad = [(k, reused[k], full[k]) for k in full if not LOGLIKELIHOOD.close(reused[k].logprob, full[k].logprob)]
    assert not bad, bad[:5]
    assert [reused[k].is_greedy for k in full] == [full[k].is_greedy for k in full]
    assert backend.cache_stats["cached_prompt_tokens"] > before["cached_prompt_tokens"]
    assert backend.cache_stats["rescored"] > before["rescored"]


def test_one_token_continuations_read_from_one_request_per_context(parity_plan: Path, engine: SharedEngine) -> None:
    """Continuations of one token (MMLU's " A" .. " D") are scored from one next-token request per context
    (``logprob_token_ids``): the same numbers as a prompt-log-prob recompute of each ``context + token``
    within the README's tolerance, is_greedy exactly, in one request per context instead of one per choice,
    mixed with multi-token inputs in the same call."""
    from lmeval.executor.backends.vllm_engine import continuation_score, next_token_groups
    from lmeval.executor.modelconf import resolve_model_dir
    from lmeval.executor.requests import ScoreInput
    from lmeval.plans.plan import read_plan

    spec = model_spec(resolve_model_config(read_header(parity_plan), []))
    engine(spec, resolve_model_dir(spec))
    backend = engine.backend
    assert backend is not None
    ll = [i for i in read_plan(parity_plan).instances if i.request_type == "loglikelihood" and i.continuation_ids]
    contexts = list(dict.fromkeys(tuple(i.context_ids) for i in ll))[:12]
    inputs: list[ScoreInput] = []
    for ctx in contexts:
        nxt = [i for i in ll if tuple(i.context_ids) == ctx]
        # the first token of each continuation, and tokens the model is likely and unlikely to pick
        tokens = sorted({i.continuation_ids[0] for i in nxt} | {ctx[-1], 11, 13})
        inputs += [ScoreInput([*ctx, t], len(ctx), f"{len(inputs)}") for t in tokens]
    inputs.append(ScoreInput([*contexts[0], *ll[0].continuation_ids, 11], len(contexts[0]), "multi"))
    groups, rest = next_token_groups(inputs)
    assert len(groups) == len(contexts) and rest == [len(inputs) - 1]
    before = dict(backend.cache_stats)
    got = dict(backend.score(inputs))
    full = {
        k: continuation_score(out.prompt_logprobs, inputs[k].ids, inputs[k].ctxlen)
        for k, out in backend._stream([x.ids for x in inputs], backend._score_params(False))
    }
    assert sorted(got) == sorted(full) == list(range(len(inputs)))
    bad = [(k, got[k], full[k]) for k in full if not LOGLIKELIHOOD.close(got[k].logprob, full[k].logprob)]
    assert not bad, bad[:5]
    assert [got[k].is_greedy for k in full] == [full[k].is_greedy for k in full]
    assert any(got[k].is_greedy for k in full) and not all(got[k].is_greedy for k in full)
    computed = backend.cache_stats["computed_tokens"] - before["computed_tokens"]
    one_each = sum(len(x.ids) for x in inputs)  # a prompt-log-prob request per input, no cache
    assert computed < one_each / 2, (computed, one_each)


def test_avx2_kernel_path_repeats_and_agrees_with_the_default_path(
    parity_plan: Path, vllm_results: Path, tmp_path: Path
) -> None:
    """docs "What repeats exactly" on the other kernel path: with AVX2 kernels forced (tests/kernelpath;
    vLLM loads ``_C_AVX2``, torch runs at AVX2), the same plan on a warm cache with another part size, a
    resume, and prefix-cache reads against a full recompute agree within the tolerance; so do the AVX2 rows
    and this process's rows (the CPU's own path: AVX-512 where it has it), and the manifests say which."""
    env = {**os.environ, "LMEVAL_TEST_CPU_ISA": "avx2", "PYTHONPATH": f"{REPO / 'tests' / 'kernelpath'}:{REPO}"}
    child = Path(__file__).with_name("avx2_child.py")
    r = subprocess.run([sys.executable, str(child), str(parity_plan), str(tmp_path)], env=env,
                       capture_output=True, text=True, timeout=600)  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    paths = [read_manifest(tmp_path / d).numerics.kernel_paths for d in "abc"]
    assert all(len(p) == 1 and p[0].vllm_kernels == "_C_AVX2" for p in paths), paths
    assert paths[0][0].torch_cpu_capability == "AVX2" and paths[0][0].aten_cpu_capability == "avx2"
    here = read_manifest(vllm_results).numerics.kernel_paths[0]
    if "avx512f" in here.cpu_flags:  # the two runs really took two kernel paths
        assert here.vllm_kernels in ("_C", "_C_AVX512") and here.torch_cpu_capability != "AVX2"
    a, b, c = (frame(tmp_path / d) for d in "abc")
    assert read_manifest(tmp_path / "c").stats["resumed"] > 0
    for other in (b, c, frame(vllm_results)):
        assert a["instance_id"].to_list() == other["instance_id"].to_list()
        assert not row_diffs(a, other), row_diffs(a, other)[:5]
    scores = json.loads((tmp_path / "scores.json").read_text())
    reused, full = scores["reused"], scores["full"]
    assert reused.keys() == full.keys() and scores["cached_prompt_tokens"] > 0
    bad = [(k, reused[k], full[k]) for k in full if not LOGLIKELIHOOD.close(reused[k][0], full[k][0])]
    assert not bad, bad[:5]
    assert [reused[k][1] for k in full] == [full[k][1] for k in full]
