"""Small image benchmark data made at test time (no image data set is in ../shared/data, nothing downloads):
bar charts and shapes drawn with a seed by Pillow, written in the local layout of ``run.data_dir`` for the Hub
datasets lm-eval 0.4.13's ``chartqa``, ``mmmu_val_art`` and ``pisa_*`` YAMLs read: ``ChartQA/test.jsonl``,
``MMMU/Art/validation.jsonl`` and ``pisa-bench/<language>.jsonl``, each image a Hugging Face ``Image`` value
``{"bytes": null, "path": ...}`` relative to the dataset folder (``images/...png``), or null (no image).

``lm_eval_requests(task, data)`` dumps the requests lm-eval 0.4.13 itself builds from the same YAML and data
(its Task API; ``datasets.load_dataset`` answered from the local files with the image columns cast to
``datasets.Image``, as the Hub's parquet gives them): per Instance its context, and the ordered sha256 of each
image's original bytes (None for an image ``datasets`` made in memory: an EXIF-rotated one) and of its decoded
pixels (``plans.image_digest``), and each image's (width, height).
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Any

MMMU_IMAGE_FIELDS = [f"image_{i}" for i in range(1, 8)]


def _png(path: Path, rnd: random.Random, size: tuple[int, int] = (48, 32), kind: str = "bars") -> None:
    from PIL import Image, ImageDraw

    img = Image.new("RGB", size, (255, 255, 255))
    d = ImageDraw.Draw(img)
    w, h = size
    if kind == "bars":
        n = 4
        for i in range(n):
            top = rnd.randrange(2, h - 2)
            colour = (rnd.randrange(256), rnd.randrange(256), rnd.randrange(256))
            d.rectangle([i * w // n + 1, top, (i + 1) * w // n - 2, h - 1], fill=colour)
    else:
        for _ in range(3):
            x, y = rnd.randrange(w - 8), rnd.randrange(h - 8)
            d.ellipse([x, y, x + 8, y + 8], fill=(rnd.randrange(256), 0, rnd.randrange(256)))
    path.parent.mkdir(parents=True, exist_ok=True)
    img.save(path, format="PNG")


def make_chartqa(root: Path, n: int = 4, seed: int = 0) -> Path:
    """``root/ChartQA/test.jsonl`` and its charts; returns ``root`` (a ``run.data_dir``)."""
    rnd = random.Random(seed)
    folder = root / "ChartQA"
    rows = []
    for i in range(n):
        rel = f"images/test-{i}.png"
        _png(folder / rel, rnd)
        rows.append({"image": {"bytes": None, "path": rel}, "query": f"Which bar is tallest in chart {i}?",
                     "label": [str(rnd.randrange(1, 5))], "human_or_machine": i % 2})  # fmt: skip
    (folder / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


def make_mmmu_art(root: Path, n: int = 4, seed: int = 1) -> Path:
    """``root/MMMU/Art/validation.jsonl`` with one or two images per question (a repeated ``<image 1>`` too)."""
    rnd = random.Random(seed)
    folder = root / "MMMU" / "Art"
    rows = []
    for i in range(n):
        row: dict[str, Any] = {"id": f"validation_Art_{i + 1}"}
        two = i % 2 == 1
        question = "Which painting uses more red? <image 1>" + (" or <image 2>? Again <image 1>." if two else "")
        for k, name in enumerate(MMMU_IMAGE_FIELDS):
            if k < (2 if two else 1):
                rel = f"images/validation_{i}_{k}.png"
                _png(folder / rel, rnd, (40, 40), "shapes")
                row[name] = {"bytes": None, "path": rel}
            else:
                row[name] = None
        mc = i != 2
        row.update({"question": question, "options": str(["Left", "Right", "Both"]) if mc else "[]",
                    "explanation": "", "img_type": "['Paintings']", "answer": "AB"[i % 2] if mc else "red",
                    "topic_difficulty": "Easy", "question_type": "multiple-choice" if mc else "open",
                    "subfield": "Art"})  # fmt: skip
        rows.append(row)
    (folder / "validation.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


PISA_LANGUAGES = ("en", "ch")


def make_pisa(root: Path, n: int = 4, seed: int = 2) -> Path:
    """``root/pisa-bench/<language>.jsonl`` for lm-eval's ``pisa_en`` and ``pisa_ch``: multiple-choice questions,
    every other one text-only (its ``image`` null, as PISA's text-only questions are)."""
    rnd = random.Random(seed)
    folder = root / "pisa-bench"
    for lang in PISA_LANGUAGES:
        rows = []
        for i in range(n):
            image = None
            if i % 2 == 0:
                rel = f"images/{lang}-{i}.png"
                _png(folder / rel, rnd)
                image = {"bytes": None, "path": rel}
            rows.append({"question": f"[{lang}] Which bar is tallest in figure {i}?", "image": image,
                         "choices": str(["the first", "the second", "the third", "the fourth"]),
                         "answer": rnd.randrange(4)})  # fmt: skip
        (folder / f"{lang}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


def exif_image(path: Path, fmt: str, orientation: int, seed: int = 3) -> None:
    """A 48x32 bar chart at ``path`` (``fmt``: JPEG or PNG) whose EXIF Orientation tag is ``orientation``."""
    from PIL import Image

    _png(path, random.Random(seed))
    img = Image.open(path)
    img.load()
    exif = Image.Exif()
    exif[0x0112] = orientation  # Orientation
    img.save(path, format=fmt, exif=exif.tobytes())


LOCAL = {("HuggingFaceM4/ChartQA", None): ("ChartQA", ["image"]), ("MMMU/MMMU", "Art"): ("MMMU/Art", MMMU_IMAGE_FIELDS),
         ("PisaBench/pisa-bench", None): ("pisa-bench", ["image"])}  # fmt: skip


def lm_eval_requests(task: str, data: Path, num_fewshot: int | None = None) -> list[dict[str, Any]]:
    """The requests lm-eval 0.4.13 builds for ``task`` from ``data`` (see the module docstring), in its order."""
    from unittest import mock

    import datasets
    from lm_eval.tasks import TaskManager, get_task_dict

    real = datasets.load_dataset

    def load_dataset(path: str, name: str | None = None, **kwargs: Any) -> datasets.DatasetDict:
        folder, image_fields = LOCAL[(path, name)]
        base = data / folder
        splits = {p.stem: str(p) for p in sorted(base.glob("*.jsonl"))}
        dd = real("json", data_files=splits)
        out = {}
        for split, ds in dd.items():
            for f in image_fields:
                ds = ds.map(
                    lambda r, f=f: {f: None if r[f] is None else {"bytes": None, "path": str(base / r[f]["path"])}}
                )
                ds = ds.cast_column(f, datasets.Image())
            out[split] = ds
        return datasets.DatasetDict(out)

    with mock.patch.object(datasets, "load_dataset", load_dataset):
        t = get_task_dict([task], TaskManager())[task]
        if num_fewshot is not None:
            t.set_config(key="num_fewshot", value=num_fewshot)
        t.set_fewshot_seed(seed=1234)  # lm-eval's default fewshot_random_seed, and run.fewshot_random_seed's
        t.build_all_requests(limit=None, rank=0, world_size=1)
    out = []
    for inst in sorted(t.instances, key=lambda x: (x.doc_id, x.idx)):
        ctx, _kwargs, extra = inst.arguments
        images = extra["visual"] or []  # None for a document without images
        out.append({"doc_id": inst.doc_id, "idx": inst.idx, "context": ctx, "visual": extra["visual"],
                    "sha256": [_original(im) for im in images], "pixels": [_pixels(im) for im in images],
                    "size": [im.size for im in images]})  # fmt: skip
    return out


def _original(img: Any) -> str | None:
    name = getattr(img, "filename", "")
    return hashlib.sha256(Path(name).read_bytes()).hexdigest() if name else None


def _pixels(img: Any) -> str:
    from lmeval.plans import image_digest

    img.load()
    return image_digest(img)


def lm_eval_generations(
    task: str, data: Path, model_dir: Path, limit: int, max_gen_toks: int
) -> tuple[list[str], dict[str, Any]]:
    """The answers lm-eval 0.4.13's ``hf-multimodal`` gives for the first ``limit`` documents of ``task`` (greedy,
    ``max_gen_toks`` new tokens, batch size 1), in document order, and its metrics for the task."""
    from unittest import mock

    import datasets
    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager, get_task_dict

    real = datasets.load_dataset

    def load_dataset(path: str, name: str | None = None, **kwargs: Any) -> datasets.DatasetDict:
        folder, image_fields = LOCAL[(path, name)]
        base = data / folder
        dd = real("json", data_files={p.stem: str(p) for p in sorted(base.glob("*.jsonl"))})
        out = {}
        for split, ds in dd.items():
            for f in image_fields:
                ds = ds.map(
                    lambda r, f=f: {f: None if r[f] is None else {"bytes": None, "path": str(base / r[f]["path"])}}
                )
                ds = ds.cast_column(f, datasets.Image())
            out[split] = ds
        return datasets.DatasetDict(out)

    with mock.patch.object(datasets, "load_dataset", load_dataset):
        tasks = get_task_dict([task], TaskManager())
    res = simple_evaluate(model="hf-multimodal", model_args=f"pretrained={model_dir},dtype=float32",
                          tasks=[tasks[task]], limit=limit, batch_size=1, log_samples=True,
                          gen_kwargs=f"max_gen_toks={max_gen_toks}", device="cpu")  # fmt: skip
    samples = sorted(res["samples"][task], key=lambda s: s["doc_id"])
    return [s["resps"][0][0] for s in samples], dict(res["results"][task])
