"""What the vLLM tests share (tests/executor/test_vllm.py and its forced-AVX2 child, avx2_child.py): one
in-process engine, and the plan they run: real rows of lm-eval's task configs plus rolling log-likelihoods and
continuations that are the model's own greedy output (so ``is_greedy`` is true for some Instances)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lmeval.executor.backends.vllm_engine import VLLMBackend
from lmeval.executor.modelconf import ModelSpec
from lmeval.plans.plan import DocRecord, InstanceRecord, instance_id_for, read_plan, request_hash_of
from tests.executor import plantools as pt


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
            cache_stats = backend.cache_stats

            def close(self) -> None:
                pass

        return Handle()


def greedy_task(tiny_model: Path, n: int) -> pt.Task:
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


def parity_plan(d: Path, tiny_model: Path) -> Path:
    """Compiled arc_easy 25-shot, gsm8k 5-shot and winogrande subsets (lm-eval's task configs), plus rolling
    and own-greedy-continuation tasks built here (no shipped task config has those)."""
    arc = pt.compiled(d / "arc.msgpack", "+task=arc_easy", "run.num_fewshot=25", "run.limit=6")
    rest = pt.compiled(
        d / "rest.msgpack", "+task=[gsm8k,winogrande]", "run.limit=6", "run.gen_kwargs={max_gen_toks:96}"
    )
    pt.extend(rest, d / "rest_plus.msgpack", [pt.rolling(4), greedy_task(tiny_model, 8)])
    arc_plan = read_plan(arc)
    arc_task = (
        arc_plan.header.tasks[0].name,
        "multiple_choice",
        [(doc, [i for i in arc_plan.instances if i.doc_id == doc.doc_id]) for doc in arc_plan.docs],
    )
    path = d / "parity.msgpack"
    pt.extend(d / "rest_plus.msgpack", path, [arc_task])
    return path
