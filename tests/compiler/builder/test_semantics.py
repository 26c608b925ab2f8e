"""lm-eval 0.4.13's prompt rules as the compiler applies them (cross-checked against lm-eval's own
build_all_requests for these tasks by the parity tests; here: the rules themselves)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lmeval import compiler
from lmeval.plans.plan import DocRecord, InstanceRecord


def _docs(records: list) -> list[DocRecord]:
    return [r for r in records if isinstance(r, DocRecord)]


def _insts(records: list) -> list[InstanceRecord]:
    return [r for r in records if isinstance(r, InstanceRecord)]


@pytest.fixture(scope="module")
def tok():
    from transformers import PreTrainedTokenizerFast

    from lmeval.common.tinymodel import ensure_tiny_model

    return PreTrainedTokenizerFast.from_pretrained(str(ensure_tiny_model()))


def test_limit_gives_the_first_docs_the_same_prompts(data: Path) -> None:
    base = ["+task=arc_challenge", f"run.data_dir={data}", "run.num_fewshot=25"]
    _, small = compiler.compile_plan([*base, "run.limit=3"])
    _, big = compiler.compile_plan([*base, "run.limit=12"])
    assert small == big[: len(small)]


def test_seed_drives_the_fewshot_draw(data: Path) -> None:
    base = ["+task=arc_easy", f"run.data_dir={data}", "run.num_fewshot=5", "run.limit=4"]
    a = [d.fewshot_ids for d in _docs(compiler.compile_plan(base)[1])]
    b = [d.fewshot_ids for d in _docs(compiler.compile_plan([*base, "run.fewshot_random_seed=1234"])[1])]
    c = [d.fewshot_ids for d in _docs(compiler.compile_plan([*base, "run.fewshot_random_seed=7"])[1])]
    assert a == b != c
    assert len({tuple(x) for x in a}) == 4  # one RNG consumed doc by doc: every doc gets a new draw


def test_leakage_guard_when_pool_is_the_eval_split(data: Path) -> None:
    # asdiv: no test_split and no fewshot_split ("both unset" counts as equal), pool = validation = eval split
    header, records = compiler.compile_plan(
        ["+task=asdiv", f"run.data_dir={data}", "run.num_fewshot=5", "run.limit=60"]
    )
    for d in _docs(records):
        assert len(d.fewshot_ids) == 5 and d.doc_id not in d.fewshot_ids


def test_first_n_sampler(data: Path) -> None:
    _, records = compiler.compile_plan(["+task=mmlu", f"run.data_dir={data}", "run.num_fewshot=5", "run.limit=2"])
    assert all(d.fewshot_ids == [0, 1, 2, 3, 4] for d in _docs(records))


def test_task_explicit_zero_shot_wins(tmp_path: Path, data: Path) -> None:
    # a plain lm-eval YAML with num_fewshot: 0
    (tmp_path / "z.yaml").write_text(
        "task: zs\ndataset_path: allenai/ai2_arc\ndataset_name: ARC-Easy\noutput_type: multiple_choice\n"
        'training_split: train\ntest_split: test\nnum_fewshot: 0\ndoc_to_text: "Q: {{question}}\\nA:"\n'
        'doc_to_target: "{{choices.label.index(answerKey)}}"\ndoc_to_choice: "{{choices.text}}"\n'
    )
    header, records = compiler.compile_plan(
        [f"run.include_path={tmp_path}", "run.tasks=[zs]", f"run.data_dir={data}", "run.num_fewshot=5", "run.limit=2"]
    )
    assert header.task("zs").num_fewshot == 0
    assert all(d.fewshot_ids == [] for d in _docs(records))
    assert any("num_fewshot is 0" in n for n in header.extra["notes"])


def test_chat_template_multiturn_and_single_turn(data: Path) -> None:
    base = ["+task=gsm8k_cot_llama", f"run.data_dir={data}", "run.limit=2", "run.apply_chat_template=true"]
    header, records = compiler.compile_plan(base)
    assert header.model.chat_template_hash and len(header.model.chat_template_hash) == 64
    ctx = _insts(records)[0].context
    assert ctx.startswith("<|im_start|>user\n") and ctx.endswith("<|im_start|>assistant\n")
    assert ctx.count("<|im_start|>assistant\n") == 9  # 8 few-shot answers as turns + the generation prompt
    _, single = compiler.compile_plan([*base, "run.fewshot_as_multiturn=false"])
    sctx = _insts(single)[0].context
    assert sctx.count("<|im_start|>user\n") == 1 and sctx.count("<|im_start|>assistant\n") == 1


def test_chat_template_delimiter_rule_and_system_message(data: Path) -> None:
    chat = ["run.apply_chat_template=true", "run.system_instruction=Be brief."]
    base = ["+task=mmlu", f"run.data_dir={data}", "run.limit=1", "run.num_fewshot=1"]
    _, records = compiler.compile_plan([*base, *chat])
    inst = next(i for i in _insts(records) if i.task == "mmlu_anatomy")
    assert inst.continuation == "A"  # target_delimiter becomes "" under a chat template
    assert inst.context.startswith(
        "<|im_start|>system\nBe brief.\n\nThe following are multiple choice questions (with answers) about anatomy."
    )
    _, plain = compiler.compile_plan(["+task=mmlu", f"run.data_dir={data}", "run.limit=1"])
    assert next(i for i in _insts(plain) if i.task == "mmlu_anatomy").continuation == " A"


def test_trailing_whitespace_moves_to_the_continuation(tmp_path: Path, tok) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text('{"q": "What is two plus two?", "t": "four"}\n')
    (tmp_path / "w.yaml").write_text(
        f"task: w\ndataset_path: json\ndataset_kwargs: {{data_files: {{test: {data}}}}}\ntest_split: test\n"
        'output_type: loglikelihood\ndoc_to_text: "Question: {{q}}\\nAnswer: "\ndoc_to_target: "{{t}}"\n'
    )
    _, records = compiler.compile_plan([f"run.include_path={tmp_path}", "run.tasks=[w]"])
    inst = _insts(records)[0]
    assert inst.context.endswith("Answer: ") and inst.continuation == "four"
    ctx_ids = tok.encode("Question: What is two plus two?\nAnswer:", add_special_tokens=False)
    whole = tok.encode("Question: What is two plus two?\nAnswer: four", add_special_tokens=False)
    assert inst.context_ids == ctx_ids
    assert inst.continuation_ids == whole[len(ctx_ids) :]
    assert tok.decode(inst.continuation_ids) == " four"


@pytest.mark.parametrize(
    "overrides",
    [["+task=arc_challenge", "run.num_fewshot=25", "run.limit=15"],
     ["+task=winogrande", "run.num_fewshot=5", "run.limit=15"],
     ["+task=gsm8k_cot_llama", "run.apply_chat_template=true", "run.limit=5"],
     ["+task=mmlu", "run.num_fewshot=5", "run.limit=2", "run.apply_chat_template=true"]],
    ids=["arc25", "winogrande5", "gsm8k_cot_chat", "mmlu5_chat"],
)  # fmt: skip
def test_token_ids_equal_lmeval_encode_pair(overrides: list[str], data: Path, tok) -> None:
    """The compiler's batched/piecewise tokenization equals lm-eval's per-request _encode_pair."""
    _, records = compiler.compile_plan([*overrides, f"run.data_dir={data}"])
    for inst in _insts(records):
        if inst.request_type == "loglikelihood":
            ctx, cont = inst.context, inst.continuation or ""
            n = len(ctx) - len(ctx.rstrip())
            if n:
                ctx, cont = ctx[:-n], ctx[-n:] + cont
            c = tok.encode(ctx, add_special_tokens=False)
            w = tok.encode(ctx + cont, add_special_tokens=False)
            assert (inst.context_ids, inst.continuation_ids) == (c, w[len(c) :])
        else:
            assert inst.context_ids == tok.encode(inst.context, add_special_tokens=False)


def test_add_bos_token_true_prepends_bos(tok) -> None:
    _, plain = compiler.compile_plan(["+task=arith", "run.limit=2"])
    _, bos = compiler.compile_plan(["+task=arith", "run.limit=2", "model.add_bos_token=true"])
    a, b = _insts(plain)[0], _insts(bos)[0]
    assert b.context_ids == [tok.bos_token_id, *a.context_ids]
