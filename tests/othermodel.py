"""A second checkpoint, independent of ``model=tiny``, for testing what the tiny model hides.

Where ``lmeval.common.tinymodel`` builds a float32 Llama with 16384 positions and a 4096-token vocabulary, this
builds a Qwen2 (biased q/k/v projections, grouped-query attention with 2 KV heads, tied embeddings, 3 layers)
with ``max_position_embeddings`` 2048, **bfloat16** weights, and its own 1536-token byte-level BPE
vocabulary trained on a differently seeded corpus with other special tokens (``<s>``, ``</s>``, ``<pad>``).
Deterministic: the same files every time. Also lays the model out as a Hugging Face Hub cache entry
(``models--org--name/snapshots/<sha>/``, ``refs/main``) for offline Hub-id tests.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

VOCAB = 1536
HIDDEN = 128
LAYERS = 3
HEADS = 4
KV_HEADS = 2
HEAD_DIM = HIDDEN // HEADS  # 32: vLLM's CPU attention needs at least 32
INTERMEDIATE = 320
MAX_POSITIONS = 2048
SPECIALS = ("<s>", "</s>", "<pad>")
HUB_ID = "lmeval-test/qwenlet-2k"


def _tokenizer_json() -> str:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    from lmeval.common.tinymodel import corpus_texts

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB,
        min_frequency=2,
        special_tokens=list(SPECIALS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus_texts(n_docs=4000, seed=99), trainer=trainer)
    return str(tok.to_str(pretty=True))


def _config() -> dict[str, Any]:
    return {
        "architectures": ["Qwen2ForCausalLM"],
        "attention_dropout": 0.0,
        "bos_token_id": 0,
        "eos_token_id": 1,
        "hidden_act": "silu",
        "hidden_size": HIDDEN,
        "initializer_range": 0.02,
        "intermediate_size": INTERMEDIATE,
        "max_position_embeddings": MAX_POSITIONS,
        "max_window_layers": LAYERS,
        "model_type": "qwen2",
        "num_attention_heads": HEADS,
        "num_hidden_layers": LAYERS,
        "num_key_value_heads": KV_HEADS,
        "rms_norm_eps": 1e-06,
        "rope_theta": 1000000.0,
        "sliding_window": None,
        "tie_word_embeddings": True,
        "torch_dtype": "bfloat16",
        "use_cache": True,
        "use_sliding_window": False,
        "vocab_size": VOCAB,
    }


def _weights() -> dict[str, Any]:
    import numpy as np
    import torch

    rng = np.random.default_rng(7)

    def t(*shape: int, std: float = 0.02) -> Any:
        return torch.from_numpy((rng.standard_normal(shape) * std).astype(np.float32)).to(torch.bfloat16)

    kv = KV_HEADS * HEAD_DIM
    w: dict[str, Any] = {"model.embed_tokens.weight": t(VOCAB, HIDDEN, std=0.1)}  # tied with the output layer
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        w[p + "self_attn.q_proj.weight"] = t(HIDDEN, HIDDEN)
        w[p + "self_attn.q_proj.bias"] = t(HIDDEN)
        w[p + "self_attn.k_proj.weight"] = t(kv, HIDDEN)
        w[p + "self_attn.k_proj.bias"] = t(kv)
        w[p + "self_attn.v_proj.weight"] = t(kv, HIDDEN)
        w[p + "self_attn.v_proj.bias"] = t(kv)
        w[p + "self_attn.o_proj.weight"] = t(HIDDEN, HIDDEN)
        w[p + "mlp.gate_proj.weight"] = t(INTERMEDIATE, HIDDEN)
        w[p + "mlp.up_proj.weight"] = t(INTERMEDIATE, HIDDEN)
        w[p + "mlp.down_proj.weight"] = t(HIDDEN, INTERMEDIATE)
        w[p + "input_layernorm.weight"] = torch.ones(HIDDEN, dtype=torch.bfloat16)
        w[p + "post_attention_layernorm.weight"] = torch.ones(HIDDEN, dtype=torch.bfloat16)
    w["model.norm.weight"] = torch.ones(HIDDEN, dtype=torch.bfloat16)
    return w


def _dump(path: Path, obj: dict[str, Any]) -> None:
    path.write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def build_other_model(out: Path) -> Path:
    """Write the checkpoint into ``out`` (created); returns it."""
    from safetensors.torch import save_file

    out.mkdir(parents=True, exist_ok=True)
    (out / "tokenizer.json").write_text(_tokenizer_json(), encoding="utf-8")
    _dump(
        out / "tokenizer_config.json",
        {
            "add_bos_token": False,
            "add_eos_token": False,
            "bos_token": "<s>",
            "eos_token": "</s>",
            "pad_token": "<pad>",
            "clean_up_tokenization_spaces": False,
            "model_max_length": MAX_POSITIONS,
            "tokenizer_class": "PreTrainedTokenizerFast",
        },
    )
    _dump(out / "special_tokens_map.json", {"bos_token": "<s>", "eos_token": "</s>", "pad_token": "<pad>"})
    _dump(out / "config.json", _config())
    _dump(out / "generation_config.json", {"bos_token_id": 0, "eos_token_id": 1, "do_sample": False})
    save_file(_weights(), str(out / "model.safetensors"), metadata={"format": "pt"})
    return out


def snapshot_sha(model_dir: Path) -> str:
    """A 40-hex "commit" for the cache layout: the sha1 over the files (as a git tree would name them)."""
    h = hashlib.sha1()
    for f in sorted(model_dir.iterdir()):
        h.update(f.name.encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def lay_out_hub_cache(model_dir: Path, hf_home: Path, repo_id: str = HUB_ID) -> str:
    """Put ``model_dir`` into ``$HF_HOME/hub`` as huggingface_hub lays out a downloaded snapshot (blobs
    named by content, snapshot files linking to them, ``refs/main`` naming the commit); returns the sha."""
    sha = snapshot_sha(model_dir)
    repo = hf_home / "hub" / ("models--" + repo_id.replace("/", "--"))
    snap = repo / "snapshots" / sha
    (repo / "blobs").mkdir(parents=True, exist_ok=True)
    snap.mkdir(parents=True, exist_ok=True)
    for f in sorted(model_dir.iterdir()):
        data = f.read_bytes()
        blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
        blob.write_bytes(data)
        (snap / f.name).symlink_to(Path("..") / ".." / "blobs" / blob.name)
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(sha, encoding="utf-8")
    return sha
