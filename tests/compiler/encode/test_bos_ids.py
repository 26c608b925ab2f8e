"""Token ids equal lm-eval 0.4.13's own (``HFLM``) on a Llama-style tokenizer that prepends ``<s>``.

For ``add_bos_token`` unset / true / false and with a prefix-token override, the compiler's ids are
compared with what lm-eval's ``HFLM`` hands its model: ``loglikelihood`` (``_encode_pair`` and the
empty-context prefix token, captured from ``_loglikelihood_tokens``), ``tok_encode`` for rolling strings,
``tok_batch_encode`` for generation prompts (including chat-templated prompts that start with ``<s>``), and
``prefix_token_id``. Whole runs (metrics) are compared in tests/e2e/test_bos_vs_lmeval.py.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import lm_eval.models.huggingface as hf  # the oracle: a plain import, never a skip
import pytest

from lmeval.compiler.encode.tokenizer import ModelTokenizer
from tests.bos_model import LLAMA_BOS, build_bos_model

pytestmark = pytest.mark.lmeval_parity

CHAT = f"{LLAMA_BOS}<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n"
PAIRS = [
    ("Question: What is two plus two?\nAnswer:", " four"),
    ("Question: What is two plus two?\nAnswer: ", "four"),  # trailing space moves to the continuation
    ("The cat sat on the", " mat."),
    ("", "An empty context is conditioned on the prefix token."),
    ("", f"{LLAMA_BOS} starts with the BOS text"),
    (CHAT, "4"),
    (f"{LLAMA_BOS}Already has BOS.", " Yes"),
]
TEXTS = [
    "A rolling document.\n\nIt has two paragraphs and some numbers: 1, 22, 333.",
    "Question: What is 3 times 7?\nAnswer:",
    CHAT,
    f"{LLAMA_BOS}{LLAMA_BOS}twice",
    " leading space",
]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_bos_model(tmp_path_factory.mktemp("bos-model") / "llama-style")


def _lm(model_dir: Path, add_bos: bool | None) -> Any:
    kw: dict[str, Any] = {} if add_bos is None else {"add_bos_token": add_bos}
    return hf.HFLM(pretrained=str(model_dir), dtype="float32", device="cpu", batch_size=1, **kw)


def _lm_eval_pairs(lm: Any, pairs: list[tuple[str, str]]) -> list[tuple[list[int], list[int]]]:
    seen: list[Any] = []

    def capture(reqs: list[Any], **_: Any) -> list[tuple[float, bool]]:
        seen.extend(reqs)
        return [(0.0, False)] * len(reqs)

    lm._loglikelihood_tokens = capture
    lm.loglikelihood([SimpleNamespace(args=p) for p in pairs], disable_tqdm=True)
    return [(list(c), list(x)) for _, c, x in seen]


@pytest.mark.parametrize("add_bos", [None, True, False], ids=["unset", "true", "false"])
def test_ids_equal_hflm(model_dir: Path, add_bos: bool | None) -> None:
    lm = _lm(model_dir, add_bos)
    for prefix in (None, 7):
        lm.custom_prefix_token_id = prefix
        ours = ModelTokenizer(model_dir, add_bos, "bos-model", prefix_token_id=prefix)
        assert ours.prefix_token_id == lm.prefix_token_id
        assert ours.rule.prefix_token_id == lm.prefix_token_id
        assert ours.encode_pairs(PAIRS) == _lm_eval_pairs(lm, PAIRS), (add_bos, prefix)
        assert ours.encode_many(TEXTS) == [lm.tok_encode(t) for t in TEXTS], (add_bos, prefix)
        if prefix is None:
            # HFLM's generation (tok_batch_encode) tests the BOS text, its tok_encode (and lm-eval's vLLM
            # generation) the prefix token's text: the same rule unless a prefix token is set; the plan
            # follows tok_encode
            for t, ids in zip(TEXTS, ours.encode_many(TEXTS), strict=True):
                enc, _ = lm.tok_batch_encode([t])
                assert ids == enc[0].tolist(), (add_bos, t)
    # what the rule means on this tokenizer: BOS exactly once, never doubled
    ours = ModelTokenizer(model_dir, add_bos, "bos-model")
    first = ours.encode_many(["plain text", CHAT])
    if add_bos is False:
        assert first[0][0] != 0
    else:
        assert first[0][0] == 0 and ours.rule.special_prefix == [0]
    assert first[1][0] == 0 and first[1][1] != 0


def test_tiny_model_rule_adds_nothing() -> None:
    """The project's own tiny tokenizer adds no special tokens: unset and false give the same ids."""
    from lmeval.common.tinymodel import ensure_tiny_model

    d = ensure_tiny_model()
    unset, off = ModelTokenizer(d, None, "tiny"), ModelTokenizer(d, False, "tiny")
    assert unset.rule.special_prefix == [] and unset.rule.prefix_token_source == "bos"
    assert unset.encode_many(TEXTS) == off.encode_many(TEXTS)
    assert unset.encode_pairs(PAIRS) == off.encode_pairs(PAIRS)


def test_chat_templated_prompts_get_one_bos(model_dir: Path) -> None:
    """The checkpoint's chat template emits ``<s>``: compiled chat prompts start with exactly one BOS."""
    from lmeval import compiler

    _, records = compiler.compile_plan(
        [
            "+task=arith",
            "run.limit=3",
            f"model.path={model_dir}",
            "model.name=llama-style",
            "run.apply_chat_template=true",
        ]  # fmt: skip
    )
    insts = [r for r in records if getattr(r, "context_ids", None) is not None]
    assert insts
    for r in insts:
        assert r.context.startswith(LLAMA_BOS)
        assert r.context_ids[:2] == [0, 2], r.context_ids[:4]  # <s> <|im_start|>


@pytest.mark.parametrize("value", ["-3", "x", "true"])
def test_bad_prefix_token_id_is_a_one_line_error(value: str) -> None:
    from lmeval import compiler
    from lmeval.compiler.errors import CompileError

    with pytest.raises(CompileError, match="model.prefix_token_id") as e:
        compiler.compile_plan(["+task=arith", "run.limit=1", f"model.prefix_token_id={value}"])
    assert "\n" not in str(e.value)


def test_prefix_token_override_is_recorded() -> None:
    from lmeval import compiler

    header, _ = compiler.compile_plan(["+task=arith", "run.limit=1", "model.prefix_token_id=1"])
    rule = header.model.token_rule
    assert rule is not None and (rule.prefix_token_id, rule.prefix_token_source) == (1, "override")
