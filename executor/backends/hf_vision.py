"""The ``hf`` backend for a vision-language model (a checkpoint whose config.json has a ``vision_config``):
transformers' processor and image-text-to-text model, one request at a time, as lm-eval 0.4.13's
``hf-multimodal`` runs a request (batch size 1):

- the prompt is the plan's context with its ``<image>`` placeholders replaced by the processor's image token
  (the first ``model.max_images`` of them; later ones kept as text, lm-eval's ``replace_placeholders``);
- the images are the plan's bytes (checked against their sha256 before the run), decoded by Pillow, the first
  ``model.max_images`` of them (default 999, lm-eval's), converted to RGB only with ``model.convert_img_format``;
- the processor gets ``text=[prompt]``, ``images=[...]`` (a flat list for a ``llava`` model, else one list
  per prompt, as lm-eval), then greedy or sampled ``generate`` for ``max_gen_toks`` new tokens; stop strings
  are applied to the decoded answer by the executor, as for every backend.

Everything that changes pixels here (``max_images``, ``convert_img_format``, ``image_processor``: keyword
arguments for ``AutoProcessor.from_pretrained``) is a ``model.*`` setting, so it is in the plan's config and its
hash, and ``lmeval diff`` names it. Log-likelihood requests with images are not run (``executor/media.py``).
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from lmeval.executor.backends.base import load_hf_tokenizer, samples_to_run, set_offline_env
from lmeval.executor.errors import ExecuteError
from lmeval.executor.modelconf import ModelSpec
from lmeval.executor.requests import GenInput, GenOutput, Sample, ScoreInput, ScoreOutput
from lmeval.plans import IMAGE_PLACEHOLDER

DEFAULT_MAX_IMAGES = 999  # lm-eval 0.4.13's HFMultimodalLM default


def is_vision_model(model_dir: Path) -> bool:
    """Whether the checkpoint is a vision-language model (its config.json names a vision tower)."""
    try:
        cfg = json.loads((model_dir / "config.json").read_text())
    except (OSError, ValueError):
        return False
    return isinstance(cfg, dict) and isinstance(cfg.get("vision_config"), dict)


def place_images(text: str, image_token: str, max_images: int) -> str:
    """lm-eval's ``replace_placeholders``: the first ``max_images`` ``<image>`` placeholders become the model's
    image token; later ones stay as they are (or vanish when the image token is ``<image>`` itself)."""
    parts = text.split(IMAGE_PLACEHOLDER)
    out = [parts[0]]
    for k, part in enumerate(parts[1:]):
        out.append(image_token if k < max_images else ("" if image_token == IMAGE_PLACEHOLDER else IMAGE_PLACEHOLDER))
        out.append(part)
    return "".join(out)


class HFVisionBackend:
    name = "hf"

    def __init__(self, spec: ModelSpec, model_dir: Path) -> None:
        set_offline_env()
        import torch
        from transformers import AutoModelForImageTextToText, AutoProcessor

        extra = spec.raw
        self.max_images = int(extra.get("max_images") or DEFAULT_MAX_IMAGES)
        self.rgb = bool(extra.get("convert_img_format") or False)
        kwargs = dict(extra.get("image_processor") or {})
        self.model: Any
        try:
            self.processor = AutoProcessor.from_pretrained(str(model_dir), **kwargs)
            self.model = AutoModelForImageTextToText.from_pretrained(str(model_dir), dtype=torch.float32)
        except (OSError, ValueError) as e:
            raise ExecuteError(f"model.path={model_dir}: cannot load a vision-language model ({e})") from None
        self.model.eval()
        self.tokenizer = load_hf_tokenizer(model_dir)
        self.image_token = getattr(self.processor, "image_token", None) or IMAGE_PLACEHOLDER
        text_cfg = self.model.config.get_text_config()
        self.max_length = int(spec.max_model_len or getattr(text_cfg, "max_position_embeddings", None) or 2048)
        self._llava = getattr(self.model.config, "model_type", "") == "llava"
        self._args = {"model": str(model_dir), "dtype": "float32", "batch_size": 1, "max_images": self.max_images}

    def engine_args(self) -> dict[str, Any]:
        return dict(self._args)

    def score(self, inputs: Sequence[ScoreInput]) -> Iterator[tuple[int, ScoreOutput]]:
        if inputs:
            raise ExecuteError("log-likelihood requests are not run on a vision-language model")
        return iter(())

    def generate(self, inputs: Sequence[GenInput]) -> Iterator[tuple[int, GenOutput]]:
        for i, x in enumerate(inputs):
            yield i, GenOutput([self._one(x, s) for s in range(samples_to_run(x.params))])

    def _one(self, x: GenInput, sample: int) -> Sample:
        import torch
        from PIL import Image

        images: list[Any] = [Image.open(io.BytesIO(b)) for b in x.images[: self.max_images]]
        if self.rgb:
            images = [im.convert("RGB") for im in images]
        text = place_images(x.text, self.image_token, self.max_images)
        enc = self.processor(images=images if self._llava else [images], text=[text], return_tensors="pt",
                             padding="longest")  # fmt: skip
        p = x.params
        kw: dict[str, Any] = {"max_new_tokens": p.max_tokens, "do_sample": not p.greedy, "use_cache": True,
                              "pad_token_id": self.processor.tokenizer.pad_token_id}  # fmt: skip
        if not p.greedy:
            kw.update(temperature=p.temperature, top_p=p.top_p)
            if p.seed is not None:
                torch.manual_seed(p.seed + sample)
        with torch.inference_mode():
            out = self.model.generate(**enc, **kw)
        ids = out[0, enc["input_ids"].shape[1] :].tolist()
        eos = self.tokenizer.eos_token_id
        reason = "stop" if eos is not None and ids and ids[-1] == eos else "length"
        if reason == "stop":
            ids = ids[:-1]
        return Sample(text=None, token_ids=ids, finish_reason=reason)

    def close(self) -> None:
        self.model = None
