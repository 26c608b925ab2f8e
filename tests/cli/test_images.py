"""A plan with images from the command line (#54): ``execute`` refuses a plan copied without its images or with
one image's bytes changed, in one line naming the image and the Instance; ``show --media`` lists each
Instance's images; ``diff`` names a changed image."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from lmeval.plans import media_dir, read_plan
from tests.imagedata import make_chartqa
from tests.support import cli_in_process


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("vlmplan")
    make_chartqa(root / "data")
    out = root / "chartqa.msgpack"
    rc, _, err = cli_in_process("compile", "+task=chartqa", f"run.data_dir={root / 'data'}", "--out", str(out))
    assert rc == 0, err
    return out


def _copy(plan: Path, where: Path, with_media: bool = True) -> Path:
    where.mkdir()
    shutil.copy(plan, where / plan.name)
    if with_media:
        shutil.copytree(media_dir(plan), media_dir(where / plan.name))
    return where / plan.name


def test_a_copied_plan_with_its_images_runs(plan: Path, tmp_path: Path) -> None:
    copy = _copy(plan, tmp_path / "m")
    rc, _, err = cli_in_process("execute", str(copy), "model.backend=fake", "--out", str(tmp_path / "res"))
    assert rc == 0, err


def test_a_plan_copied_without_its_images_is_refused_naming_image_and_instance(plan: Path, tmp_path: Path) -> None:
    copy = _copy(plan, tmp_path / "m", with_media=False)
    first = read_plan(copy).instances[0]
    assert first.media is not None
    rc, out, err = cli_in_process("execute", str(copy), "model.backend=fake", "--out", str(tmp_path / "res"))
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert f"image {first.media[0]['sha256'][:12]} of Instance {first.instance_id}" in err and "is missing" in err
    assert not (tmp_path / "res").exists()


def test_a_plan_with_one_image_altered_is_refused_naming_it(plan: Path, tmp_path: Path) -> None:
    copy = _copy(plan, tmp_path / "m")
    third = read_plan(copy).instances[2]
    assert third.media is not None
    sha = third.media[0]["sha256"]
    f = media_dir(copy) / sha
    f.chmod(0o644)
    f.write_bytes(f.read_bytes()[:-1] + b"\x00")
    rc, _, err = cli_in_process("execute", str(copy), "model.backend=fake", "--out", str(tmp_path / "res"))
    assert rc == 2 and err.count("\n") == 1
    assert f"image {sha[:12]} of Instance {third.instance_id} (task chartqa doc 2) has been altered" in err


def test_a_backend_or_model_that_cannot_show_images_is_refused(plan: Path, tmp_path: Path) -> None:
    rc, _, err = cli_in_process("execute", str(plan), "model.backend=openai", "--out", str(tmp_path / "res"))
    assert rc == 2 and "shows images, which model.backend=openai cannot send" in err
    rc, _, err = cli_in_process("execute", str(plan), "model.backend=hf", "--out", str(tmp_path / "res"))
    assert rc == 2 and "shows images, but" in err and "is not a vision-language model" in err
    assert not (tmp_path / "res").exists()


def test_show_lists_each_instances_images(plan: Path) -> None:
    rc, out, _ = cli_in_process("show", str(plan), "--media")
    assert rc == 0
    insts = read_plan(plan).instances
    for inst in insts:
        m = inst.media[0]  # type: ignore[index]
        assert f"chartqa doc {inst.doc_id} idx 0 ({inst.instance_id}): 1 image(s)" in out
        assert f"{m['sha256']} 48x32 image/png {m['size']} B <image> #0" in out


def test_diff_names_the_changed_image(plan: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    make_chartqa(data)
    from PIL import Image

    img = Image.open(data / "ChartQA/images/test-1.png").convert("RGB")
    img.putpixel((0, 0), (1, 2, 3))
    img.save(data / "ChartQA/images/test-1.png", format="PNG")
    other = tmp_path / "b.msgpack"
    assert cli_in_process("compile", "+task=chartqa", f"run.data_dir={data}", "--out", str(other))[0] == 0
    old = read_plan(plan).instances[1].media[0]  # type: ignore[index]
    new = read_plan(other).instances[1].media[0]  # type: ignore[index]
    rc, out, _ = cli_in_process("diff", str(plan), str(other))
    assert f"idx 0 image 0: {old['sha256'][:12]} 48x32 image/png" in out
    assert f"→ {new['sha256'][:12]} 48x32 image/png" in out and "(pixels changed)" in out
    assert "chartqa doc 1" in out and "chartqa doc 0" not in out


def _fake_vlm(where: Path, longest_edge: int) -> Path:
    """The tiny text model's files as a 'vision-language model' directory for compiling: a vision_config in its
    config.json and an image processor's settings (nothing here loads its weights)."""
    import json

    from lmeval.common.tinymodel import ensure_tiny_model

    shutil.copytree(ensure_tiny_model(), where)
    cfg = json.loads((where / "config.json").read_text())
    (where / "config.json").write_text(json.dumps({**cfg, "vision_config": {"image_size": 56}}))
    (where / "preprocessor_config.json").write_text(json.dumps({"size": {"longest_edge": longest_edge}}))
    return where


def test_processor_and_resize_settings_are_plan_identity(tmp_path: Path) -> None:
    """The model's image-processor files are hashed into the plan (model.processor_hash): another resize setting
    gives another plan hash, diff names it, and execute refuses a model whose processor settings differ.
    ``model.image_processor`` overrides (the processor's keyword arguments) are config: diff names them too."""
    data = make_chartqa(tmp_path / "data", n=2)
    a, b = _fake_vlm(tmp_path / "vlm-a", 56), _fake_vlm(tmp_path / "vlm-b", 112)
    plans = {}
    for name, model, extra in (("a", a, []), ("b", b, []), ("c", a, ["+model.image_processor.size.longest_edge=64"])):
        out = tmp_path / f"{name}.msgpack"
        rc, _, err = cli_in_process("compile", "+task=chartqa", f"run.data_dir={data}", f"model.path={model}",
                                    *extra, "--out", str(out))  # fmt: skip
        assert rc == 0, err
        plans[name] = read_plan(out).header
    assert plans["a"].model.processor_hash and plans["a"].model.processor_hash != plans["b"].model.processor_hash
    assert len({h.plan_hash for h in plans.values()}) == 3
    _, out, _ = cli_in_process("diff", str(tmp_path / "a.msgpack"), str(tmp_path / "b.msgpack"))
    assert "processor_hash" in out
    _, out, _ = cli_in_process("diff", str(tmp_path / "a.msgpack"), str(tmp_path / "c.msgpack"))
    assert "model.image_processor" in out
    rc, _, err = cli_in_process("execute", str(tmp_path / "a.msgpack"), "model.backend=hf", f"model.path={b}",
                                "--out", str(tmp_path / "res"))  # fmt: skip
    assert rc == 2 and "compiled for image processor settings" in err and not (tmp_path / "res").exists()
