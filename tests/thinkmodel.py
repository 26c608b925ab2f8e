"""A tiny thinking model: greedy decoding emits a fixed chain, ``<think> Let me think. #### 7</think> #### 18``
then EOS, after any prompt that ends with ``:`` (gsm8k's ``Answer:``).

The tiny model's tokenizer (``lmeval.common.tinymodel``) plus three added, non-special tokens: ``<think>``,
``</think>`` and `` ####`` (a second spelling of ``####``, so the reasoning's wrong ``#### 7`` and the answer's
``#### 18`` are different tokens). The weights make a successor function: one Llama layer whose output
projections (``o_proj``, ``down_proj``) are zero, so the residual stream at each position is that token's
embedding, and ``lm_head`` row ``j`` is the normalised embedding of the token whose successor is ``j``;
random embeddings in 64 dimensions are near orthogonal, so the argmax after token ``t`` is its successor.
Deterministic: the same files every time.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from lmeval.common import tinymodel as tm

HIDDEN = 64
HEADS = 2  # head_dim 32: vLLM's CPU attention needs at least 32
VOCAB = 4160  # the tiny tokenizer's 4096 + the added tokens, rounded up
ADDED = {"<think>": 4096, "</think>": 4097, " ####": 4098}
SCALE = 10.0
# the chain (tiny-tokenizer pieces; added tokens by content); its first token follows ``:``
CHAIN = ("<think>", "ĠLet", "Ġme", "Ġthink", ".", "Ġ", "####", "Ġ7", "</think>", " ####", "Ġ18", tm.EOS)
RESPONSE = "<think> Let me think. #### 7</think> #### 18"  # what greedy decoding answers


def _tokenizer(src: Path) -> tuple[str, dict[str, Any]]:
    tok = json.loads((src / "tokenizer.json").read_text(encoding="utf-8"))
    for content, i in ADDED.items():
        tok["added_tokens"].append(
            {
                "id": i,
                "content": content,
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "special": False,
            }  # fmt: skip
        )
    cfg = json.loads((src / "tokenizer_config.json").read_text(encoding="utf-8"))
    for content, i in ADDED.items():
        cfg["added_tokens_decoder"][str(i)] = {"content": content, "lstrip": False, "normalized": False,
                                               "rstrip": False, "single_word": False, "special": False}  # fmt: skip
    return json.dumps(tok, ensure_ascii=False), cfg


def _ids(vocab: dict[str, int]) -> list[int]:
    return [ADDED[p] if p in ADDED else vocab[p] for p in (":", *CHAIN)]


def _weights(chain: list[int]) -> dict[str, Any]:
    import numpy as np

    rng = np.random.default_rng(28)
    emb = rng.standard_normal((VOCAB, HIDDEN)).astype(np.float32)
    unit = emb / np.linalg.norm(emb, axis=1, keepdims=True)
    head = np.zeros((VOCAB, HIDDEN), dtype=np.float32)
    for prev, nxt in zip(chain, chain[1:], strict=False):
        head[nxt] = SCALE * unit[prev]
    z = np.zeros
    p = "model.layers.0."
    return {
        "model.embed_tokens.weight": emb,
        p + "self_attn.q_proj.weight": rng.standard_normal((HIDDEN, HIDDEN)).astype(np.float32) * 0.02,
        p + "self_attn.k_proj.weight": rng.standard_normal((HIDDEN, HIDDEN)).astype(np.float32) * 0.02,
        p + "self_attn.v_proj.weight": rng.standard_normal((HIDDEN, HIDDEN)).astype(np.float32) * 0.02,
        p + "self_attn.o_proj.weight": z((HIDDEN, HIDDEN), dtype=np.float32),
        p + "mlp.gate_proj.weight": rng.standard_normal((HIDDEN, HIDDEN)).astype(np.float32) * 0.02,
        p + "mlp.up_proj.weight": rng.standard_normal((HIDDEN, HIDDEN)).astype(np.float32) * 0.02,
        p + "mlp.down_proj.weight": z((HIDDEN, HIDDEN), dtype=np.float32),
        p + "input_layernorm.weight": np.ones(HIDDEN, dtype=np.float32),
        p + "post_attention_layernorm.weight": np.ones(HIDDEN, dtype=np.float32),
        "model.norm.weight": np.ones(HIDDEN, dtype=np.float32),
        "lm_head.weight": head,
    }


def build_think_model(out: Path) -> Path:
    """Write the model into ``out`` (created); returns it."""
    from safetensors.numpy import save_file

    src = tm.ensure_tiny_model()
    out.mkdir(parents=True, exist_ok=True)
    tok_json, tok_cfg = _tokenizer(src)
    (out / "tokenizer.json").write_text(tok_json, encoding="utf-8")
    (out / "tokenizer_config.json").write_text(json.dumps(tok_cfg, indent=2, sort_keys=True), encoding="utf-8")
    shutil.copy(src / "special_tokens_map.json", out / "special_tokens_map.json")
    shutil.copy(src / "generation_config.json", out / "generation_config.json")
    cfg = json.loads((src / "config.json").read_text(encoding="utf-8"))
    cfg.update(hidden_size=HIDDEN, num_attention_heads=HEADS, num_key_value_heads=HEADS, head_dim=HIDDEN // HEADS,
               num_hidden_layers=1, intermediate_size=HIDDEN, vocab_size=VOCAB,
               max_position_embeddings=2048)  # fmt: skip
    (out / "config.json").write_text(json.dumps(cfg, indent=2, sort_keys=True), encoding="utf-8")
    vocab = json.loads(tok_json)["model"]["vocab"]
    vocab[tm.EOS] = tm.SPECIAL_TOKENS.index(tm.EOS)
    save_file(_weights(_ids(vocab)), str(out / "model.safetensors"), metadata={"format": "pt"})
    return out
