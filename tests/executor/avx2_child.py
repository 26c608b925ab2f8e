"""The child half of test_vllm.py's forced-AVX2 test: ``python avx2_child.py PLAN OUT`` with
``tests/kernelpath`` first on ``PYTHONPATH`` and ``LMEVAL_TEST_CPU_ISA=avx2`` (so torch, oneDNN and vLLM
compute with AVX2 kernels). On one engine: the plan into OUT/a (part size 16), again into OUT/b (warm prefix
cache, part size 5), a resume into OUT/c (OUT/a's first parts kept, the rest executed again), and the plan's
log-likelihood requests read through the prefix cache and recomputed in full (OUT/scores.json). No result
store: every run computes (what is compared is the engine's paths)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from lmeval.executor.backends.vllm_engine import continuation_score
from lmeval.executor.modelconf import model_spec, resolve_model_config, resolve_model_dir
from lmeval.executor.options import RunOptions
from lmeval.executor.requests import ScoreInput
from lmeval.executor.run import run_plan
from lmeval.plans.plan import read_header, read_plan
from lmeval.plans.results import part_files
from tests.executor.vllm_plan import SharedEngine


def main(plan: str, out: Path) -> None:
    engine = SharedEngine()
    run_plan(plan, RunOptions(out=str(out / "a"), progress=False, part_size=16, store="off"), backend_factory=engine)
    run_plan(plan, RunOptions(out=str(out / "b"), progress=False, part_size=5, store="off"), backend_factory=engine)
    shutil.copytree(out / "a", out / "c")
    parts = part_files(out / "c")
    for p in parts[len(parts) // 2 :]:
        p.unlink()
    run_plan(plan, RunOptions(out=str(out / "c"), progress=False, part_size=8, store="off"), backend_factory=engine)
    spec = model_spec(resolve_model_config(read_header(plan), []))
    engine(spec, resolve_model_dir(spec))
    backend = engine.backend
    assert backend is not None
    ll = [i for i in read_plan(plan).instances if i.request_type == "loglikelihood" and i.continuation_ids]
    inputs = [ScoreInput([*i.context_ids, *i.continuation_ids], len(i.context_ids), i.request_hash) for i in ll]
    reused = dict(backend.score(inputs))
    full = {
        k: continuation_score(o.prompt_logprobs, inputs[k].ids, inputs[k].ctxlen)
        for k, o in backend._stream([x.ids for x in inputs], backend._score_params(False))
    }
    scores = {
        "reused": {str(k): [v.logprob, v.is_greedy] for k, v in sorted(reused.items())},
        "full": {str(k): [v.logprob, v.is_greedy] for k, v in sorted(full.items())},
        "cached_prompt_tokens": backend.cache_stats["cached_prompt_tokens"],
    }
    (out / "scores.json").write_text(json.dumps(scores))


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
