"""A Llama-style test checkpoint: the tiny model's weights with a tokenizer that prepends ``<s>``.

Like Llama 3's (and unlike the tiny model's, which adds no special tokens), its ``tokenizer.json``
post-processor is ``Sequence[ByteLevel, TemplateProcessing("<s> $A")]`` and its ``tokenizer_config.json``
has no ``add_bos_token`` key, so ``add_special_tokens`` (on by default) prepends BOS. The BOS token (id 0)
is renamed ``<s>``; the chat template starts with ``{{ bos_token }}``, so chat-templated prompts begin with
the BOS text. Built from ``lmeval.common.tinymodel`` by rewriting JSON files: deterministic, no network.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from lmeval.common.tinymodel import BOS, CHAT_TEMPLATE, ensure_tiny_model

LLAMA_BOS = "<s>"


def _rename(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {_rename(k): _rename(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_rename(v) for v in obj]
    return LLAMA_BOS if obj == BOS else obj


def build_bos_model(out: Path) -> Path:
    """Write the checkpoint into ``out`` (created) and return it."""
    src = ensure_tiny_model()
    out.mkdir(parents=True, exist_ok=True)
    for name in ("config.json", "generation_config.json", "model.safetensors"):
        shutil.copyfile(src / name, out / name)
    tok = json.loads((src / "tokenizer.json").read_text(encoding="utf-8"))
    for t in tok["added_tokens"]:
        if t["content"] == BOS:
            t["content"] = LLAMA_BOS
    vocab = tok["model"]["vocab"]
    vocab[LLAMA_BOS] = vocab.pop(BOS)
    tok["post_processor"] = {
        "type": "Sequence",
        "processors": [
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": True},
            {
                "type": "TemplateProcessing",
                "single": [{"SpecialToken": {"id": LLAMA_BOS, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                "pair": [
                    {"SpecialToken": {"id": LLAMA_BOS, "type_id": 0}},
                    {"Sequence": {"id": "A", "type_id": 0}},
                    {"SpecialToken": {"id": LLAMA_BOS, "type_id": 1}},
                    {"Sequence": {"id": "B", "type_id": 1}},
                ],
                "special_tokens": {LLAMA_BOS: {"id": LLAMA_BOS, "ids": [vocab[LLAMA_BOS]], "tokens": [LLAMA_BOS]}},
            },
        ],
    }
    (out / "tokenizer.json").write_text(json.dumps(tok, ensure_ascii=False), encoding="utf-8")
    cfg = _rename(json.loads((src / "tokenizer_config.json").read_text(encoding="utf-8")))
    cfg.pop("add_bos_token", None)
    cfg.pop("add_eos_token", None)
    cfg["chat_template"] = "{{ bos_token }}" + CHAT_TEMPLATE
    (out / "tokenizer_config.json").write_text(json.dumps(cfg, indent=2, sort_keys=True), encoding="utf-8")
    stm = _rename(json.loads((src / "special_tokens_map.json").read_text(encoding="utf-8")))
    (out / "special_tokens_map.json").write_text(json.dumps(stm, indent=2, sort_keys=True), encoding="utf-8")
    return out
