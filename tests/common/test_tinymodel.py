"""The tiny reference model: deterministic build, caching, tokenizer, transformers and vLLM loading."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from lmeval.common import tinymodel
from lmeval.common.modelref import tokenizer_hash
from lmeval.common.tinymodel import ensure_tiny_model
from tests.bounds import VS_LM_EVAL

REPO = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("LMEVAL_DATA_DIR", REPO.parent / "shared" / "data"))


def _digests(d: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.iterdir())}


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return ensure_tiny_model(str(tmp_path_factory.mktemp("cache") / "tiny-v1"))


def _prompts(n: int) -> list[str]:
    prompts = []
    with open(DATA / "arc_easy" / "test.jsonl", encoding="utf-8") as f:
        for line, _ in zip(f, range(n), strict=False):
            doc = json.loads(line)
            labels, texts = doc["choices"]["label"], doc["choices"]["text"]
            choices = "\n".join(f"{lab}. {t}" for lab, t in zip(labels, texts, strict=True))
            prompts.append(f"Question: {doc['question']}\n{choices}\nAnswer: {doc['answerKey']}")
    return prompts


def test_build_is_byte_identical_across_processes(tmp_path: Path, model_dir: Path) -> None:
    # a second build in a fresh interpreter (different hash seeds, thread scheduling) must match exactly
    code = f"from lmeval.common.tinymodel import build_tiny_model; build_tiny_model({str(tmp_path / 'b')!r})"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)
    assert _digests(tmp_path / "b") == _digests(model_dir)
    assert set(_digests(model_dir)) == set(tinymodel.MODEL_FILES)


# sha256 of every built file but the cache stamp (whose source hash moves with any edit to the recipe's code):
# a refactor of common/tinymodel.py or common/tinycorpus.py must build exactly these bytes.
PINNED = {
    "config.json": "3dc44e602cf3011d7abefaf2e939dec086d81f63c7ed02cbdd5e26b156553056",
    "generation_config.json": "6a4a45f1f101dd92089755d2fae41039a32071647b41e9852896a12c94d753a2",
    "model.safetensors": "4c7d09842879b5bb1218e51009bb55ab6745f535f75903fc0cd6a2f34420df01",
    "special_tokens_map.json": "6a089b01e65c2d41401f64e828beb7cb6fb6f478c49a5dbc60a5421231b3ce8e",
    "tokenizer.json": "0a7cc99b8a2f421d90130896bd2df7b26fd618b9476c8b12ad299c9fd32739ee",
    "tokenizer_config.json": "5c9c796e2f4e6879d51cf43c6e77447a833c7db3cdca4052fe7dc03cba7494d5",
}


def test_built_bytes_are_pinned(model_dir: Path) -> None:
    digests = _digests(model_dir)
    assert {k: v for k, v in digests.items() if k != "lmeval_tiny.json"} == PINNED
    assert tokenizer_hash(model_dir) == PINNED["tokenizer.json"]


def test_stamp_covers_every_recipe_module() -> None:
    # the corpus lives in its own module; editing it must invalidate cached builds like editing tinymodel.py
    assert {p.name for p in tinymodel.RECIPE_SOURCES} == {"tinymodel.py", "tinycorpus.py"}
    assert all(p.is_file() for p in tinymodel.RECIPE_SOURCES)


def test_cached_model_is_returned_without_rebuilding(model_dir: Path) -> None:
    before = {p.name: p.stat().st_mtime_ns for p in model_dir.iterdir()}
    assert ensure_tiny_model(str(model_dir)) == model_dir
    assert {p.name: p.stat().st_mtime_ns for p in model_dir.iterdir()} == before


def test_default_cache_location_follows_lmeval_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LMEVAL_CACHE", str(tmp_path))
    assert tinymodel.default_cache_dir() == tmp_path / "models" / "tiny-v1"
    monkeypatch.delenv("LMEVAL_CACHE")
    assert tinymodel.default_cache_dir() == Path.home() / ".cache" / "lmeval" / "models" / "tiny-v1"


def test_incomplete_cache_is_rebuilt(tmp_path: Path, model_dir: Path) -> None:
    target = tmp_path / "tiny-v1"
    target.mkdir()
    (target / "config.json").write_text("{}")  # e.g. a copy interrupted half-way
    assert ensure_tiny_model(str(target)) == target
    assert _digests(target) == _digests(model_dir)
    assert [p.name for p in tmp_path.iterdir()] == ["tiny-v1"]  # no temporary directories left behind


def test_cache_from_an_older_recipe_is_rebuilt(tmp_path: Path, model_dir: Path) -> None:
    import shutil

    target = tmp_path / "tiny-v1"
    shutil.copytree(model_dir, target)
    stamp = json.loads((target / "lmeval_tiny.json").read_text())
    (target / "lmeval_tiny.json").write_text(json.dumps(dict(stamp, source_sha256="0" * 64)))
    (target / "tokenizer.json").write_text("{}")
    assert ensure_tiny_model(str(target)) == target
    assert _digests(target) == _digests(model_dir)


def test_concurrent_builds_agree(tmp_path: Path, model_dir: Path) -> None:
    target = tmp_path / "tiny-v1"
    code = f"from lmeval.common.tinymodel import ensure_tiny_model; print(ensure_tiny_model({str(target)!r}))"
    procs = [
        subprocess.Popen([sys.executable, "-c", code], cwd=REPO, stdout=subprocess.PIPE, text=True) for _ in range(3)
    ]
    outs = [p.communicate()[0].strip() for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0]
    assert outs == [str(target)] * 3
    assert _digests(target) == _digests(model_dir)
    assert [p.name for p in tmp_path.iterdir()] == ["tiny-v1"]


def test_tokenizer_on_real_benchmark_text(model_dir: Path) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(model_dir))
    assert len(tok) == tinymodel.VOCAB_SIZE
    assert (tok.bos_token, tok.eos_token, tok.pad_token) == (tinymodel.BOS, tinymodel.EOS, tinymodel.PAD)
    assert tok.convert_tokens_to_ids(list(tinymodel.SPECIAL_TOKENS)) == [0, 1, 2, 3, 4]
    assert tok.model_max_length == tinymodel.MAX_POSITIONS
    n_chars = n_tokens = 0
    for name in ("mmlu/test.jsonl", "gsm8k/test.jsonl", "humaneval/test.jsonl"):
        with open(DATA / name, encoding="utf-8") as f:
            for line, _ in zip(f, range(30), strict=False):
                text = "\n".join(str(v) for v in json.loads(line).values())
                ids = tok(text)["input_ids"]
                assert tok.decode(ids) == text  # byte-level: lossless, no unknown tokens
                assert not set(ids) & {0, 1, 2, 3, 4}  # encoding adds no special tokens
                n_chars += len(text)
                n_tokens += len(ids)
    assert n_chars / n_tokens > 1.8  # trained merges, not bytes (1.0): real text compresses (~2.1 measured)


def test_chat_template(model_dir: Path) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(model_dir))
    msgs = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "2+2?"},
        {"role": "assistant", "content": "4"},
        {"role": "user", "content": "3+3?"},
    ]
    text = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    assert text == (
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n2+2?<|im_end|>\n"
        "<|im_start|>assistant\n4<|im_end|>\n<|im_start|>user\n3+3?<|im_end|>\n<|im_start|>assistant\n"
    )
    assert not str(tok.apply_chat_template(msgs, tokenize=False)).endswith("<|im_start|>assistant\n")
    ids = tok(text)["input_ids"]
    assert ids.count(2) == 5 and ids.count(3) == 4  # the markers are single special tokens


def test_transformers_loads_and_is_peaked(model_dir: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModelForCausalLM.from_pretrained(str(model_dir))
    cfg = model.config
    assert (cfg.num_hidden_layers, cfg.hidden_size, cfg.num_attention_heads, cfg.head_dim) == (2, 128, 4, 32)
    assert model.dtype == torch.float32 and not cfg.tie_word_embeddings
    ids = torch.tensor([tok(_prompts(1)[0])["input_ids"]])
    with torch.no_grad():
        probs = torch.softmax(model(ids).logits[0], -1)
    # the scaled output layer makes the argmax stand out (median max p ~0.28; unscaled it would be ~1e-3)
    assert probs.max(-1).values.median().item() > 0.1


VLLM_SCRIPT = textwrap.dedent(
    """
    import json, sys
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt
    model_dir, prompts = sys.argv[1], json.loads(sys.stdin.read())
    llm = LLM(model=model_dir, enforce_eager=True, kv_cache_memory_bytes=1 << 30, dtype="float32", seed=0)
    params = SamplingParams(max_tokens=8, temperature=0, prompt_logprobs=0, detokenize=False)
    outs = llm.generate([TokensPrompt(prompt_token_ids=p) for p in prompts], params)
    res = []
    for ids, o in zip(prompts, outs):
        lps = [None] + [o.prompt_logprobs[i][t].logprob for i, t in enumerate(ids) if i > 0]
        res.append({"generated": list(o.outputs[0].token_ids), "prompt_logprobs": lps})
    print("RESULT " + json.dumps(res))
    """
)


@pytest.mark.vllm
def test_vllm_matches_transformers(model_dir: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(model_dir))
    prompts = [tok(p)["input_ids"] for p in _prompts(4)]
    env = dict(os.environ, VLLM_ENABLE_V1_MULTIPROCESSING="0", TORCHDYNAMO_DISABLE="1", HF_HUB_OFFLINE="1")
    proc = subprocess.run(
        [sys.executable, "-c", VLLM_SCRIPT, str(model_dir)],
        input=json.dumps(prompts),
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(next(line for line in proc.stdout.splitlines() if line.startswith("RESULT "))[7:])

    model: Any = AutoModelForCausalLM.from_pretrained(str(model_dir))
    for ids, got in zip(prompts, result, strict=True):
        x = torch.tensor([ids])
        with torch.no_grad():
            logp = torch.log_softmax(model(x).logits[0].double(), -1)
            gen = model.generate(x, max_new_tokens=8, do_sample=False)[0, len(ids) :].tolist()
        expected = [logp[i - 1, t].item() for i, t in enumerate(ids) if i > 0]
        assert got["prompt_logprobs"][0] is None
        # vLLM's kernels against transformers' (what lm-eval's hf backend runs): the bound against lm-eval
        assert VS_LM_EVAL.outside(got["prompt_logprobs"][1:], expected) == []
        assert got["generated"] == gen
