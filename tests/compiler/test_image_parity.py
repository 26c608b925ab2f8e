"""Image parity with lm-eval 0.4.13 on images made here (#64): an EXIF-rotated JPEG or PNG is upright in the
plan as ``datasets`` hands it to lm-eval (size, pixels and the bytes the model is shown); a few-shot candidate
equal to the document once its images are decoded is dropped as lm-eval drops it, whatever its image path; a
palette image's pixel hash covers its palette and transparency."""

from __future__ import annotations

import hashlib
import io
import json
import os
import random
import shutil
from pathlib import Path
from typing import Any

import pytest

from lmeval import compiler
from lmeval.compiler import CompileError
from lmeval.plans import DocRecord, InstanceRecord, image_digest, read_image, read_plan
from tests.imagedata import exif_image, lm_eval_requests, make_chartqa, make_mmmu_art


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _write(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _decoded(data: bytes) -> Any:
    from PIL import Image

    img = Image.open(io.BytesIO(data))  # as the executor's backends open the bytes a plan carries
    img.load()
    return img


def test_exif_rotated_jpeg_and_png_are_upright_as_lm_eval_sees_them(tmp_path: Path) -> None:
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    root = make_chartqa(tmp_path / "d")
    folder = root / "ChartQA"
    rows = _rows(folder / "test.jsonl")
    # doc 1: a JPEG turned a quarter (6), doc 2: a PNG turned the other way (8), doc 3: a tag that moves nothing
    for i, (fmt, orientation) in {1: ("JPEG", 6), 2: ("PNG", 8), 3: ("JPEG", 1)}.items():
        rel = f"images/exif-{i}.{fmt.lower()}"
        exif_image(folder / rel, fmt, orientation, seed=i)
        rows[i]["image"] = {"bytes": None, "path": rel}
    _write(folder / "test.jsonl", rows)
    theirs = lm_eval_requests("chartqa", root)
    plan = compiler.compile_to_file(["+task=chartqa", f"run.data_dir={root}"], str(tmp_path / "p.msgpack"))
    ours = read_plan(plan).instances
    assert len(ours) == len(theirs) == 4
    for o, t in zip(ours, theirs, strict=True):
        assert o.context == t["context"] and o.media is not None
        assert [(m["width"], m["height"]) for m in o.media] == [tuple(s) for s in t["size"]]
        assert [m["pixels"] for m in o.media] == t["pixels"]
        for m in o.media:  # what the model is shown: the plan's bytes, decoded, are lm-eval's picture
            assert image_digest(_decoded(read_image(plan, m["sha256"]))) == m["pixels"]
    sizes = [(o.media[0]["width"], o.media[0]["height"]) for o in ours if o.media]
    assert sizes == [(48, 32), (32, 48), (32, 48), (48, 32)]  # the turned ones stand upright
    assert [o.media[0]["mime"] for o in ours if o.media] == ["image/png", "image/png", "image/png", "image/jpeg"]
    # a tag that moves no pixel keeps the image's own bytes
    original = hashlib.sha256((folder / "images/exif-3.jpeg").read_bytes()).hexdigest()
    assert ours[3].media is not None and ours[3].media[0]["sha256"] == original


def test_a_duplicate_fewshot_candidate_whose_image_path_differs_is_dropped_as_lm_eval_drops_it(tmp_path: Path) -> None:
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    root = make_mmmu_art(tmp_path / "d", n=4)
    folder = root / "MMMU" / "Art"
    rows = _rows(folder / "validation.jsonl")
    from PIL import Image

    dups = []  # docs 4, 5, 6: copies of docs 0, 2 and 3 whose first image is another file
    for i, rel, how in [(0, "images/same-bytes.png", "copy"), (2, "images/recompressed.png", "png1"),
                        (3, "images/as-jpeg.jpg", "jpeg")]:  # fmt: skip
        src = folder / rows[i]["image_1"]["path"]
        if how == "copy":  # the same file under another path: equal decoded
            shutil.copy(src, folder / rel)
        else:  # the same picture re-encoded: equal decoded as PNG again, not as a JPEG (another class and pixels)
            img = Image.open(src).convert("RGB")
            img.save(folder / rel, format="PNG" if how == "png1" else "JPEG", compress_level=1)
        dups.append(rows[i] | {"image_1": {"bytes": None, "path": rel}})
    _write(folder / "validation.jsonl", rows + dups)
    theirs = lm_eval_requests("mmmu_val_art", root, num_fewshot=2)
    _, recs = compiler.compile_plan(["+task=mmmu_val_art", f"run.data_dir={root}", "run.num_fewshot=2"])
    ours = [r for r in recs if isinstance(r, InstanceRecord)]
    assert len(ours) == len(theirs) == 7
    assert [o.context for o in ours] == [t["context"] for t in theirs]
    shots = {r.doc_id: r.fewshot_ids for r in recs if isinstance(r, DocRecord)}
    twins = {0: 4, 4: 0, 2: 5, 5: 2}  # equal decoded (the JPEG copy of doc 3, doc 6, is not)
    assert all(twins.get(d) not in ids for d, ids in shots.items())
    # the case at stake occurs: lm-eval's draws of 2 + 1 candidates (seed 1234, doc by doc, none redrawn
    # before doc 5) hold doc 2's twin and doc 4's
    rnd = random.Random(1234)
    assert [d for d in range(5) if twins.get(d) in rnd.sample(range(7), 3)] == [2, 4]


def _palette_png(indices: bytes, colours: list[int], transparency: bytes | None = None) -> bytes:
    from PIL import Image

    img = Image.frombytes("P", (4, 2), indices)
    img.putpalette(colours)
    buf = io.BytesIO()
    if transparency is None:
        img.save(buf, format="PNG")
    else:
        img.save(buf, format="PNG", transparency=transparency)
    return buf.getvalue()


PALETTE_A = [0, 0, 0, 255, 0, 0, 0, 255, 0, 0, 0, 255]
PALETTE_B = [0, 0, 0, 0, 0, 255, 0, 255, 0, 255, 0, 0]  # red and blue swapped
INDICES = bytes([0, 1, 2, 3, 3, 2, 1, 0])


def test_the_pixel_hash_covers_palette_and_transparency(tmp_path: Path) -> None:
    from PIL import Image

    def pixels(png: bytes) -> str:
        return image_digest(_decoded(png))

    a, b = _palette_png(INDICES, PALETTE_A), _palette_png(INDICES, PALETTE_B)
    assert _decoded(a).tobytes() == _decoded(b).tobytes()  # the same indices
    assert pixels(a) != pixels(b)
    assert pixels(_palette_png(INDICES, PALETTE_A, bytes([0, 255, 255, 255]))) != pixels(a)  # tRNS: index 0 clear
    grey = Image.frombytes("L", (4, 2), INDICES)
    buf = io.BytesIO()
    grey.save(buf, format="PNG", transparency=3)
    assert pixels(buf.getvalue()) != image_digest(grey)  # a transparent grey level
    # an image without palette or transparency keeps its hash: mode, size, then the raw pixels
    rgb = grey.convert("RGB")
    old = hashlib.sha256(b"RGB\x004\x002\x00" + rgb.tobytes()).hexdigest()
    assert image_digest(rgb) == old
    # and the plan records it: the same chart as two palettes
    hashes = []
    for name, colours in (("a", PALETTE_A), ("b", PALETTE_B)):
        root = make_chartqa(tmp_path / name, n=1)
        (root / "ChartQA/images/test-0.png").write_bytes(_palette_png(INDICES, colours))
        _, recs = compiler.compile_plan(["+task=chartqa", f"run.data_dir={root}"])
        media = [r.media for r in recs if isinstance(r, InstanceRecord) and r.media]
        hashes.append(media[0][0]["pixels"])
    assert hashes[0] != hashes[1]


def test_a_chartqa_row_whose_image_is_null_is_a_text_request_as_lm_evals_shows_nothing(tmp_path: Path) -> None:
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    root = make_chartqa(tmp_path / "d", n=3)
    rows = _rows(root / "ChartQA/test.jsonl")
    rows[1]["image"] = None
    _write(root / "ChartQA/test.jsonl", rows)
    theirs = lm_eval_requests("chartqa", root)
    plan = compiler.compile_to_file(["+task=chartqa", f"run.data_dir={root}"], str(tmp_path / "p.msgpack"))
    ours = read_plan(plan).instances  # read back: the plan is valid
    assert [o.context for o in ours] == [t["context"] for t in theirs]
    assert [t["visual"] for t in theirs][1] == [] and ours[1].media is None
    assert [[m["sha256"] for m in o.media or []] for o in ours] == [t["sha256"] for t in theirs]


def test_a_cmyk_jpeg_turned_by_exif_is_refused_in_one_line(tmp_path: Path) -> None:
    from PIL import Image

    root = make_chartqa(tmp_path / "d", n=1)
    exif = Image.Exif()
    exif[0x0112] = 6
    Image.new("CMYK", (8, 4), (0, 50, 100, 0)).save(root / "ChartQA/images/test-0.png", "JPEG", exif=exif.tobytes())
    with pytest.raises(CompileError) as e:
        compiler.compile_plan(["+task=chartqa", f"run.data_dir={root}"])
    text = str(e.value)
    assert "\n" not in text and "task chartqa" in text and "doc_to_image" in text and "doc 0" in text
    assert "(CMYK) has an EXIF orientation but cannot be stored upright as PNG" in text
