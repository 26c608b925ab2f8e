"""Images in the plan (#54): lm-eval 0.4.13's ``chartqa`` and ``mmmu_val_art`` YAMLs, unchanged, compile from
local data (tests/imagedata.py: charts and shapes drawn with a seed) into the requests lm-eval itself builds
from the same YAMLs and data: the same text and the same image bytes (and pixels) in the same order. Hostile
images (a decompression bomb, a truncated file, a non-image, too many) are one-line compile errors."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from lmeval import compiler
from lmeval.compiler import CompileError
from lmeval.plans import IMAGE_PLACEHOLDER, InstanceRecord, MediaRef, media_dir, read_plan
from tests.imagedata import lm_eval_requests, make_chartqa, make_mmmu_art


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("imgdata")
    make_chartqa(root)
    make_mmmu_art(root)
    return root


def _ours(task: str, data: Path, *extra: str) -> list[InstanceRecord]:
    _, recs = compiler.compile_plan([f"+task={task}", f"run.data_dir={data}", *extra])
    return [r for r in recs if isinstance(r, InstanceRecord)]


@pytest.mark.parametrize("task", ["chartqa", "mmmu_val_art"])
def test_requests_equal_lm_evals_text_and_ordered_image_bytes(task: str, data: Path) -> None:
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    theirs = lm_eval_requests(task, data)
    ours = _ours(task, data)
    assert len(ours) == len(theirs) == 4
    n_images = 0
    for o, t in zip(ours, theirs, strict=True):
        assert (o.doc_id, o.idx) == (t["doc_id"], t["idx"])
        assert o.context == t["context"]
        assert o.media is not None
        assert [m["sha256"] for m in o.media] == t["sha256"]  # original bytes, in lm-eval's order
        assert [m["pixels"] for m in o.media] == t["pixels"]
        n_images += len(t["sha256"])
        # the k-th image fills the k-th <image> placeholder (lm-eval's hf-multimodal placement)
        for k, m in enumerate(o.media):
            assert m["placeholder"] == k and o.context[m["offset"] :].startswith(IMAGE_PLACEHOLDER)
            assert MediaRef.from_dict(m).to_dict() == m
    if task == "mmmu_val_art":  # a question naming <image 1> twice shows that image twice, as lm-eval does
        assert n_images == 1 + 3 + 1 + 3
        assert ours[1].media is not None and ours[1].media[0]["sha256"] == ours[1].media[2]["sha256"]


def test_compile_writes_the_images_beside_the_plan_and_the_hash_follows_their_bytes(data: Path, tmp_path: Path) -> None:
    out = compiler.compile_to_file(["+task=chartqa", f"run.data_dir={data}"], str(tmp_path / "a.msgpack"))
    plan = read_plan(out)
    shas = {m["sha256"] for i in plan.instances for m in i.media or []}
    assert len(shas) == 4 and {p.name for p in media_dir(out).iterdir()} == shas
    # one image's bytes changed (the same picture re-encoded): the plan, task and request hashes move
    copy = tmp_path / "data2"
    make_chartqa(copy)
    from PIL import Image

    img = Image.open(copy / "ChartQA/images/test-2.png")
    img.load()
    img.save(copy / "ChartQA/images/test-2.png", format="PNG", compress_level=1)
    out2 = compiler.compile_to_file(["+task=chartqa", f"run.data_dir={copy}"], str(tmp_path / "b.msgpack"))
    plan2 = read_plan(out2)
    assert plan2.header.plan_hash != plan.header.plan_hash
    changed = [
        i.doc_id for i, j in zip(plan.instances, plan2.instances, strict=True) if i.request_hash != j.request_hash
    ]
    assert changed == [2]
    assert plan2.instances[2].media[0]["pixels"] == plan.instances[2].media[0]["pixels"]  # type: ignore[index]


def test_a_text_only_plan_has_no_media_anywhere(tmp_path: Path) -> None:
    from tests.support import data_dir

    out = compiler.compile_to_file(
        ["+task=arc_easy", f"run.data_dir={data_dir()}", "run.limit=2"], str(tmp_path / "t.msgpack")
    )
    assert b"media" not in out.read_bytes() and not media_dir(out).exists()


def _one_image_task(tmp_path: Path, image: bytes | None, n: int = 1) -> list[str]:
    """A task whose single document shows ``n`` copies of ``image`` (the file ``images/x.png``)."""
    folder = tmp_path / "data" / "imgs"
    (folder / "images").mkdir(parents=True)
    if image is not None:
        (folder / "images/x.png").write_bytes(image)
    row = {f"i{k}": {"bytes": None, "path": "images/x.png"} for k in range(n)} | {"q": "what?", "a": "x"}
    (folder / "test.jsonl").write_text(json.dumps(row) + "\n")
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "t.yaml").write_text(
        "task: t\ndataset_path: imgs\ntest_split: test\noutput_type: generate_until\n"
        f"doc_to_image: [{', '.join(f'i{k}' for k in range(n))}]\ndoc_to_text: '<image>{{{{q}}}}'\n"
        "doc_to_target: a\nmetric_list: [{metric: exact_match}]\n"
    )
    return [f"run.include_path={tmp_path / 'tasks'}", "run.tasks=[t]", f"run.data_dir={tmp_path / 'data'}"]


def _png(w: int, h: int) -> bytes:
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("L", (w, h)).save(buf, format="PNG")
    return buf.getvalue()


@pytest.mark.parametrize(
    ("image", "n", "message"),
    [
        (_png(12000, 12000), 1, "decompression bomb"),  # 144 megapixels of zeros in a few hundred bytes
        (_png(64, 64)[:-40], 1, "cannot be decoded (truncated or corrupt"),
        (b"GIF89a not really", 1, "not an image of a known format"),
        (None, 1, "cannot read image 'images/x.png'"),
        (_png(4, 4), 17, "17 images, over the bound of 16"),
    ],
    ids=["bomb", "truncated", "not-an-image", "missing", "too-many"],
)
def test_hostile_images_are_one_line_compile_errors(tmp_path: Path, image: bytes | None, n: int, message: str) -> None:
    with pytest.raises(CompileError) as e:
        compiler.compile_plan(_one_image_task(tmp_path, image, n))
    text = str(e.value)
    assert "\n" not in text and message in text
    assert "task t" in text and "doc_to_image" in text and "doc 0" in text


def test_an_image_path_may_not_leave_the_data_folder(tmp_path: Path) -> None:
    args = _one_image_task(tmp_path, _png(4, 4))
    rows = tmp_path / "data" / "imgs" / "test.jsonl"
    rows.write_text(rows.read_text().replace("images/x.png", "../../../etc/passwd"))
    with pytest.raises(CompileError, match="leaves the data folder"):
        compiler.compile_plan(args)


def test_the_cli_prints_a_bomb_as_one_line_and_exits_2(tmp_path: Path) -> None:
    from tests.support import cli_in_process

    args = _one_image_task(tmp_path, _png(12000, 12000))
    rc, out, err = cli_in_process("compile", *args, "--out", str(tmp_path / "p.msgpack"))
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err and "decompression bomb" in err
    assert not (tmp_path / "p.msgpack").exists() and not (tmp_path / "p.msgpack.media").exists()
