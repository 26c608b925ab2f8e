"""The tiny reference model: a 2-layer Llama with a byte-level BPE tokenizer, built from nothing but code.

``ensure_tiny_model()`` returns a Hugging Face-format model directory (config.json, model.safetensors,
tokenizer.json, tokenizer_config.json with a ChatML chat template, special_tokens_map.json,
generation_config.json) that transformers and vLLM load offline. Everything is derived deterministically:

- the tokenizer is trained with ``tokenizers`` on text generated from a fixed seed (``tinycorpus``: English
  sentences, numbers, punctuation, Python-like code, "Question:/Answer:" and multiple-choice layouts), vocab 4096;
- the weights come from ``numpy.random.default_rng(0)`` and are written with ``safetensors.numpy``; the output
  layer is scaled up (``LM_HEAD_SCALE``) so next-token distributions are peaked and argmax/greedy checks mean
  something.

Building takes about a second and gives byte-identical files every time. The directory is cached under
``$LMEVAL_CACHE/models/tiny-v1`` (default ``~/.cache/lmeval/models/tiny-v1``); it is built in a temporary
sibling directory and renamed into place, so concurrent callers never see a partial model.

The tokenizer adds no special tokens when encoding (``add_bos_token: false`` in ``conf/model/tiny.yaml``);
the chat template does not add BOS either. This module never imports torch.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Any

from lmeval.common.cachefile import read_cache_file
from lmeval.common.tinycorpus import corpus_texts

TINY_NAME = "tiny"
RECIPE = "tiny-v1"  # bump (and the cache directory name) on any change to what gets built

BOS = "<|begin_of_text|>"
EOS = "<|end_of_text|>"
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
PAD = "<|pad|>"
SPECIAL_TOKENS = (BOS, EOS, IM_START, IM_END, PAD)  # ids 0..4, in this order

VOCAB_SIZE = 4096
HIDDEN = 128
LAYERS = 2
HEADS = 4
HEAD_DIM = HIDDEN // HEADS  # 32: vLLM's CPU attention rejects head_dim < 32
INTERMEDIATE = 256
MAX_POSITIONS = 16384
LM_HEAD_SCALE = 20.0
INIT_STD = 0.02

CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{%- if message['role'] not in ['system', 'user', 'assistant'] %}"
    "{{ raise_exception('Only system, user and assistant roles are supported.') }}"
    "{%- endif %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{%- endif %}"
)

MODEL_FILES = (
    "config.json",
    "generation_config.json",
    "model.safetensors",
    "special_tokens_map.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "lmeval_tiny.json",
)


# ------------------------------------------------------------------------------------------ tokenizer


def build_tokenizer_json() -> str:
    """Train the byte-level BPE tokenizer; returns tokenizer.json's text."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        min_frequency=2,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus_texts(), trainer=trainer)
    if tok.get_vocab_size() > VOCAB_SIZE:
        raise AssertionError(f"tokenizer has {tok.get_vocab_size()} tokens, more than {VOCAB_SIZE}")
    for i, t in enumerate(SPECIAL_TOKENS):
        if tok.token_to_id(t) != i:
            raise AssertionError(f"special token {t} is not id {i}")
    return tok.to_str(pretty=True)


def _tokenizer_config() -> dict[str, Any]:
    return {
        "added_tokens_decoder": {
            str(i): {
                "content": t,
                "lstrip": False,
                "normalized": False,
                "rstrip": False,
                "single_word": False,
                "special": True,
            }
            for i, t in enumerate(SPECIAL_TOKENS)
        },
        "add_bos_token": False,
        "add_eos_token": False,
        "bos_token": BOS,
        "chat_template": CHAT_TEMPLATE,
        "clean_up_tokenization_spaces": False,
        "eos_token": EOS,
        "model_input_names": ["input_ids", "attention_mask"],
        "model_max_length": MAX_POSITIONS,
        "pad_token": PAD,
        "tokenizer_class": "PreTrainedTokenizerFast",
    }


def _special_tokens_map() -> dict[str, Any]:
    return {
        "additional_special_tokens": [IM_START, IM_END],
        "bos_token": BOS,
        "eos_token": EOS,
        "pad_token": PAD,
    }


# ---------------------------------------------------------------------------------------------- model


def _model_config() -> dict[str, Any]:
    return {
        "architectures": ["LlamaForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": SPECIAL_TOKENS.index(BOS),
        "eos_token_id": SPECIAL_TOKENS.index(EOS),
        "head_dim": HEAD_DIM,
        "hidden_act": "silu",
        "hidden_size": HIDDEN,
        "initializer_range": INIT_STD,
        "intermediate_size": INTERMEDIATE,
        "max_position_embeddings": MAX_POSITIONS,
        "mlp_bias": False,
        "model_type": "llama",
        "num_attention_heads": HEADS,
        "num_hidden_layers": LAYERS,
        "num_key_value_heads": HEADS,
        "pad_token_id": SPECIAL_TOKENS.index(PAD),
        "pretraining_tp": 1,
        "rms_norm_eps": 1e-05,
        "rope_scaling": None,
        "rope_theta": 10000.0,
        "tie_word_embeddings": False,
        "torch_dtype": "float32",
        "use_cache": True,
        "vocab_size": VOCAB_SIZE,
    }


def _generation_config() -> dict[str, Any]:
    return {
        "bos_token_id": SPECIAL_TOKENS.index(BOS),
        "do_sample": False,
        "eos_token_id": SPECIAL_TOKENS.index(EOS),
        "pad_token_id": SPECIAL_TOKENS.index(PAD),
    }


def build_weights() -> dict[str, Any]:
    """All tensors of the model as float32 numpy arrays, keyed by their Hugging Face Llama names."""
    import numpy as np

    rng = np.random.default_rng(0)

    def normal(*shape: int, scale: float = 1.0) -> Any:
        return (rng.standard_normal(shape) * (INIT_STD * scale)).astype(np.float32)

    w: dict[str, Any] = {"model.embed_tokens.weight": normal(VOCAB_SIZE, HIDDEN)}
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
            w[p + f"self_attn.{name}.weight"] = normal(HIDDEN, HIDDEN)
        w[p + "mlp.gate_proj.weight"] = normal(INTERMEDIATE, HIDDEN)
        w[p + "mlp.up_proj.weight"] = normal(INTERMEDIATE, HIDDEN)
        w[p + "mlp.down_proj.weight"] = normal(HIDDEN, INTERMEDIATE)
        w[p + "input_layernorm.weight"] = np.ones(HIDDEN, dtype=np.float32)
        w[p + "post_attention_layernorm.weight"] = np.ones(HIDDEN, dtype=np.float32)
    w["model.norm.weight"] = np.ones(HIDDEN, dtype=np.float32)
    w["lm_head.weight"] = normal(VOCAB_SIZE, HIDDEN, scale=LM_HEAD_SCALE)
    return w


# ---------------------------------------------------------------------------------------------- build


def _dump_json(path: Path, obj: dict[str, Any]) -> None:
    path.write_text(json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")


def build_tiny_model(out_dir: str | os.PathLike[str]) -> Path:
    """Write every file of the tiny model into ``out_dir`` (created if needed); no caching, no renaming."""
    from safetensors.numpy import save_file

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "tokenizer.json").write_text(build_tokenizer_json(), encoding="utf-8")
    _dump_json(out / "tokenizer_config.json", _tokenizer_config())
    _dump_json(out / "special_tokens_map.json", _special_tokens_map())
    _dump_json(out / "config.json", _model_config())
    _dump_json(out / "generation_config.json", _generation_config())
    save_file(build_weights(), str(out / "model.safetensors"), metadata={"format": "pt"})
    # written last: its presence marks a complete build
    stamp = {"name": TINY_NAME, "recipe": RECIPE, "source_sha256": _source_hash()}
    _dump_json(out / "lmeval_tiny.json", stamp)
    return out


RECIPE_SOURCES = (Path(__file__), Path(__file__).with_name("tinycorpus.py"))  # the modules that define the build


def _source_hash() -> str:
    # any edit to this recipe invalidates cached builds made from an older version of it
    h = hashlib.sha256()
    for src in RECIPE_SOURCES:
        h.update(src.read_bytes())
    return h.hexdigest()


def default_cache_dir() -> Path:
    root = os.environ.get("LMEVAL_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "lmeval")
    return Path(root) / "models" / RECIPE


def _is_complete(d: Path) -> bool:
    """``d`` is a finished build of this recipe: a real folder (not a link) of regular files and its stamp."""
    try:
        if not stat.S_ISDIR(os.lstat(d).st_mode):
            return False
        if not all(stat.S_ISREG(os.lstat(d / f).st_mode) for f in MODEL_FILES):
            return False
    except OSError:
        return False
    try:
        info = json.loads(read_cache_file(d / "lmeval_tiny.json", 1 << 20) or b"")
    except (ValueError, RecursionError):
        return False
    if not isinstance(info, dict):
        return False
    return info.get("recipe") == RECIPE and info.get("source_sha256") == _source_hash()


def _make_readable(d: Path) -> None:
    # mkdtemp and safetensors create owner-only files; a shared cache should be readable like any download
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(d, 0o755 & ~umask)
    for f in d.iterdir():
        os.chmod(f, 0o644 & ~umask)


def ensure_tiny_model(cache_dir: str | None = None) -> Path:
    """Return the tiny model's directory, building it (about a second) if it is not cached yet.

    ``cache_dir`` is the model directory itself; by default ``$LMEVAL_CACHE/models/tiny-v1`` or
    ``~/.cache/lmeval/models/tiny-v1``. Safe against concurrent callers: the build goes to a temporary
    sibling that is renamed into place; the loser of a race discards its copy.
    """
    target = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    if _is_complete(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.build-", dir=target.parent))
    try:
        build_tiny_model(tmp)
        _make_readable(tmp)
        if os.path.lexists(target) and not _is_complete(target):
            # a leftover that is not ours (or an old recipe): move it aside rather than delete blindly
            stale = Path(tempfile.mkdtemp(prefix=f".{target.name}.stale-", dir=target.parent))
            try:
                os.rename(target, stale / target.name)
            except FileNotFoundError:
                pass
            shutil.rmtree(stale, ignore_errors=True)
        try:
            os.rename(tmp, target)
        except OSError:
            if not _is_complete(target):  # someone else's rename did not win either
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target
