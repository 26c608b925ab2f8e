"""A tiny vision-language model built offline at test time (no pretrained VLM installs here): the LLaVA
architecture (``LlavaForConditionalGeneration``) over the project's tiny text model's tokenizer (with an
``<image>`` token added) and a 1-layer CLIP vision tower on 28x28 images (4 patches of 14 pixels: 4 image
tokens per image), every weight from ``torch.manual_seed(0)``; its processor (``LlavaProcessor`` with a CLIP
image processor) and the tiny model's ChatML chat template. Its answers mean nothing: parity on the same
weights is the check (lm-eval's ``hf-multimodal`` against lmeval's backends).

``ensure_tiny_vlm(root)`` builds it once into ``root/tiny-vlm`` and returns the directory.
"""

from __future__ import annotations

from pathlib import Path

IMAGE_TOKEN = "<image>"
IMAGE_SIZE = 28
PATCH = 14


def ensure_tiny_vlm(root: Path) -> Path:
    out = root / "tiny-vlm"
    if (out / "model.safetensors").is_file():
        return out
    import torch
    from transformers import (
        AutoTokenizer,
        CLIPImageProcessor,
        CLIPVisionConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
    )

    from lmeval.common.tinymodel import CHAT_TEMPLATE, ensure_tiny_model

    text_dir = ensure_tiny_model()
    tok = AutoTokenizer.from_pretrained(text_dir)
    tok.add_special_tokens({"additional_special_tokens": [IMAGE_TOKEN]})
    image_id = tok.convert_tokens_to_ids(IMAGE_TOKEN)
    text = LlamaConfig.from_pretrained(text_dir)
    text.vocab_size = len(tok)
    vision = CLIPVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                              image_size=IMAGE_SIZE, patch_size=PATCH, projection_dim=32)  # fmt: skip
    config = LlavaConfig(vision_config=vision, text_config=text, image_token_index=image_id,
                         vision_feature_select_strategy="default", vision_feature_layer=-1,
                         image_seq_length=(IMAGE_SIZE // PATCH) ** 2)  # fmt: skip
    config.tie_word_embeddings = False
    torch.manual_seed(0)
    model = LlavaForConditionalGeneration(config).eval()
    with torch.no_grad():  # peaked next-token distributions, as the tiny text model's (greedy checks mean something)
        model.lm_head.weight.mul_(20.0)
    model.generation_config.pad_token_id = tok.pad_token_id
    image_processor = CLIPImageProcessor(size={"shortest_edge": IMAGE_SIZE}, crop_size={"height": IMAGE_SIZE,
                                         "width": IMAGE_SIZE})  # fmt: skip
    processor = LlavaProcessor(image_processor=image_processor, tokenizer=tok, patch_size=PATCH,
                               vision_feature_select_strategy="default", chat_template=CHAT_TEMPLATE,
                               num_additional_image_tokens=1)  # fmt: skip
    tmp = root / "tiny-vlm.tmp"
    model.save_pretrained(tmp)
    processor.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    tmp.rename(out)
    return out
