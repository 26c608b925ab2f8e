"""Hostile images (#64's probes): an image path holding a NUL byte, and a ``doc_to_image`` template that renders a
literal nested too deeply for Python's parser (a RecursionError or MemoryError inside ``ast.literal_eval``).
Each is one line naming the task file, the task, ``doc_to_image`` and the doc id; nothing is written."""

from __future__ import annotations

import io
import json
from pathlib import Path

from tests.hostile.corpus import Base, Case, case, compile_task, task_dir

IMAGE_YAML = (
    "task: pics\ndataset_path: pics\ntest_split: test\noutput_type: generate_until\n"
    "doc_to_text: '<image>{{q}}'\ndoc_to_target: a\nmetric_list: [{metric: exact_match}]\n"
)


def _data(tmp: Path, image_path: str) -> Path:
    """``<tmp>/data/pics``: one 4x4 PNG and one row whose image value names ``image_path``."""
    from PIL import Image

    folder = tmp / "data" / "pics"
    (folder / "images").mkdir(parents=True)
    buf = io.BytesIO()
    Image.new("L", (4, 4)).save(buf, format="PNG")
    (folder / "images" / "x.png").write_bytes(buf.getvalue())
    row = {"img": {"bytes": None, "path": image_path}, "q": "what?", "a": "x"}
    (folder / "test.jsonl").write_text(json.dumps(row) + "\n")
    return tmp / "data"


def _case(tmp: Path, doc_to_image: str, image_path: str, *needles: str) -> Case:
    d = task_dir(tmp, IMAGE_YAML + f"doc_to_image: {doc_to_image}\n")
    out = tmp / "out.msgpack"
    return Case(
        compile_task(d, "pics", _data(tmp, image_path), tmp),
        (str(d / "t.yaml"), "task pics", "doc_to_image", "doc 0", *needles),
        absent=[out, out.with_name(out.name + ".media")],
    )


@case("images")
def image_path_with_nul_byte(tmp: Path, base: Base) -> Case:
    return _case(tmp, "[img]", "images/x.png\u0000.png", "NUL byte")


@case("images")
def image_template_nested_unary(tmp: Path, base: Base) -> Case:
    return _case(tmp, "\"{{ '-' * 100000 }}1\"", "images/x.png", "nested too deeply")


@case("images")
def image_template_nested_sum(tmp: Path, base: Base) -> Case:
    return _case(tmp, "\"1{{ '+1' * 100000 }}\"", "images/x.png", "nested too deeply")
