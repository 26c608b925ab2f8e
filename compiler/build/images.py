"""A document's images: lm-eval 0.4.13's ``doc_to_image`` (a field name, a list of them, a template, a
``!function``) evaluated, and each image it gives read, decoded as lm-eval sees it and bounded
(``imagedecode``) into a ``plans.MediaInfo`` with the bytes the plan carries.

An image value is what a Hugging Face ``Image`` feature holds undecoded: a map ``{"bytes": ..., "path": ...}``
(bytes as they are, else ``path``), or a path string. With local data (``run.data_dir``) a path is relative
to the task's data folder (``<data_dir>/<local_name>/``) and may not leave it. Every image is checked before
it enters a plan, one line naming file, task, field and doc id when it fails: at most ``MAX_IMAGE_BYTES``
encoded, at most ``MAX_IMAGES_PER_INSTANCE`` per document, and ``imagedecode``'s checks.

A document whose ``doc_to_image`` gives nothing (None: PISA's text-only questions; or a list whose entries are
all None: a chartqa row whose image is null) shows no image: lm-eval's request carries ``visual=None`` (which
its hf-multimodal, vllm-vlm and API models cannot iterate) or ``visual=[]``; the plan's Instance has no
``media`` and is a text request, its prompt as built (an ``<image>`` placeholder in it stays text).

lm-eval's few-shot sampler drops a candidate equal to the document (``x != doc`` over rows whose images
``datasets`` decoded): ``same_doc`` compares two rows that way, image values by what Pillow's ``Image.__eq__``
compares of their decoded images rather than by their paths.
"""

from __future__ import annotations

import ast
import hashlib
from pathlib import Path, PurePosixPath
from typing import Any

from lmeval.compiler.build.imagedecode import Decoded, Where, decode
from lmeval.compiler.build.render import Renderer
from lmeval.compiler.tasks import FunctionRef
from lmeval.plans import IMAGE_PLACEHOLDER, MAX_IMAGE_BYTES, MAX_IMAGES_PER_INSTANCE, MediaInfo, MediaRef, placements


def image_values(r: Renderer, spec: Any, doc: dict[str, Any], doc_id: int) -> list[Any]:
    """What lm-eval's ``ConfigurableTask.doc_to_image`` gives for ``doc``, as a list (None entries of a field
    list dropped, as lm-eval drops them)."""
    got = _one(r, spec, doc, doc_id)
    if got is None:
        return []
    return list(got) if isinstance(got, list | tuple) else [got]


def _one(r: Renderer, spec: Any, doc: dict[str, Any], doc_id: int) -> Any:
    if isinstance(spec, list):
        out = [_one(r, f, doc, doc_id) for f in spec]
        return [x for x in out if x is not None]
    if isinstance(spec, str):
        if spec in doc:
            return doc[spec]
        text = r._template(spec, "doc_to_image", doc, doc_id)
        try:
            return ast.literal_eval(text)
        except (SyntaxError, ValueError, TypeError):
            raise r._err("doc_to_image", doc_id, f"template renders {text[:60]!r}, not a Python literal") from None
        except (RecursionError, MemoryError):  # Python's parser gives up on deep nesting either way
            msg = f"template renders {text[:60]!r}, a literal nested too deeply"
            raise r._err("doc_to_image", doc_id, msg) from None
    if isinstance(spec, FunctionRef):
        return r._call(spec, "doc_to_image", doc, doc_id)
    return None


def image_bytes(value: Any, base: Path | None, where: Where) -> bytes:
    """The encoded bytes of one image value (see the module docstring)."""
    if isinstance(value, dict) and ("bytes" in value or "path" in value):
        data = value.get("bytes")
        if isinstance(data, bytes | bytearray):
            if len(data) > MAX_IMAGE_BYTES:
                raise where("doc_to_image", f"image of {len(data)} bytes is over {MAX_IMAGE_BYTES}")
            return bytes(data)
        value = value.get("path")
    if not isinstance(value, str) or not value:
        raise where("doc_to_image", f"not an image (a {{bytes, path}} map or a path), got {type(value).__name__}")
    if "\0" in value:
        raise where("doc_to_image", f"image path {value[:80]!r} has a NUL byte")
    rel = PurePosixPath(value)
    if base is None:
        raise where("doc_to_image", f"image path {value[:80]!r} needs local data (run.data_dir)")
    if rel.is_absolute() or ".." in rel.parts or "\\" in value:
        raise where("doc_to_image", f"image path {value[:80]!r} leaves the data folder")
    path = base / rel
    try:
        size = path.stat().st_size
        if not path.is_file():
            raise where("doc_to_image", f"image {value[:80]!r} is not a regular file")
        if size > MAX_IMAGE_BYTES:
            raise where("doc_to_image", f"image {value[:80]!r} of {size} bytes is over {MAX_IMAGE_BYTES}")
        return path.read_bytes()
    except OSError as e:
        raise where("doc_to_image", f"cannot read image {value[:80]!r}: {e.strerror or e}") from None


class ImageReader:
    """A task's images, each read and decoded once (by path, or by the sha256 of inline bytes)."""

    def __init__(self, base: Path | None) -> None:
        self.base = base  # the folder image paths are relative to (None without local data)
        self._seen: dict[tuple[str, str], Decoded] = {}

    def read(self, value: Any, k: int, where: Where) -> Decoded:
        """One image value (the ``k``-th of its document) decoded as lm-eval sees it (``imagedecode``)."""
        path = value.get("path") if isinstance(value, dict) else value
        inline = isinstance(value, dict) and isinstance(value.get("bytes"), bytes | bytearray)
        key = ("path", path) if isinstance(path, str) and not inline else None
        if key is not None and key in self._seen:
            return self._seen[key]
        data = image_bytes(value, self.base, where)
        if key is None:
            key = ("bytes", hashlib.sha256(data).hexdigest())
            if key in self._seen:
                return self._seen[key]
        got = decode(data, repr(path)[:80] if isinstance(path, str) else f"#{k}", where)
        self._seen[key] = got
        return got


def doc_images(
    r: Renderer, spec: Any, doc: dict[str, Any], doc_id: int, images: ImageReader, where: Where
) -> list[Decoded]:
    """Each image of one document, in lm-eval's order, checked and decoded as lm-eval sees it."""
    values = image_values(r, spec, doc, doc_id)
    if len(values) > MAX_IMAGES_PER_INSTANCE:
        raise where("doc_to_image", f"{len(values)} images, over the bound of {MAX_IMAGES_PER_INSTANCE} per request")
    return [images.read(v, k, where) for k, v in enumerate(values)]


def _is_image(value: Any) -> bool:
    """A Hugging Face ``Image`` value as local data holds it: ``{"bytes": ..., "path": ...}``."""
    return isinstance(value, dict) and value.keys() == {"bytes", "path"}


def same_doc(a: dict[str, Any], b: dict[str, Any], images: ImageReader, where: Where) -> bool:
    """Whether lm-eval's few-shot sampler finds two rows equal: equal fields, image values (alone or in a
    list) compared by what ``datasets`` decodes of them (two paths to the same picture are equal)."""
    if a == b:
        return True
    if a.keys() != b.keys():
        return False
    differ = [k for k in a if a[k] != b[k]]
    if not all(_images_apart(a[k], b[k]) for k in differ):  # a text field differs: no image need be decoded
        return False
    return all(_same_value(a[k], b[k], images, where) for k in differ)


def _images_apart(x: Any, y: Any) -> bool:
    """Whether two unequal values differ only in image values (which may still decode equal)."""
    if _is_image(x) and _is_image(y):
        return True
    if isinstance(x, list) and isinstance(y, list) and len(x) == len(y):
        return all(p == q or _images_apart(p, q) for p, q in zip(x, y, strict=True))
    return False


def _same_value(x: Any, y: Any, images: ImageReader, where: Where) -> bool:
    if x == y:
        return True
    if isinstance(x, list):
        return all(_same_value(p, q, images, where) for p, q in zip(x, y, strict=True))
    return images.read(x, 0, where).same == images.read(y, 0, where).same


def media_refs(context: str, messages: list[dict[str, str]] | None, infos: list[MediaInfo]) -> list[dict[str, Any]]:
    """The ``MediaRef`` maps of one request's images: the k-th image fills the k-th ``<image>`` placeholder of
    the context (lm-eval's placement), and, with chat messages, sits in the message holding that placeholder."""
    refs: list[dict[str, Any]] = []
    owners: list[int] = []
    for i, m in enumerate(messages or []):
        owners += [i] * m["content"].count(IMAGE_PLACEHOLDER)
    for k, (info, (ph, off)) in enumerate(zip(infos, placements(context, len(infos)), strict=True)):
        message = owners[k] if messages is not None and k < len(owners) else None
        refs.append(MediaRef(info, ph, off, message).to_dict())
    return refs
