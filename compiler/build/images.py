"""A document's images: lm-eval 0.4.13's ``doc_to_image`` (a field name, a list of them, a template, a
``!function``) evaluated, and each image it gives read, probed and bounded into a ``plans.MediaInfo`` with its
bytes.

An image value is what a Hugging Face ``Image`` feature holds undecoded: a map ``{"bytes": ..., "path": ...}``
(bytes as they are, else ``path``), or a path string. With local data (``run.data_dir``) a path is relative
to the task's data folder (``<data_dir>/<local_name>/``) and may not leave it. Every image is checked before
it enters a plan, one line naming file, task, field and doc id when it fails: at most ``MAX_IMAGE_BYTES``
encoded and ``MAX_IMAGE_PIXELS`` decoded (checked from the header, before any pixel is decoded: a
decompression bomb is refused without the memory), a format of ``MIME_TYPES``, decoded whole (a truncated
image is refused), at most ``MAX_IMAGES_PER_INSTANCE`` per document.
"""

from __future__ import annotations

import ast
import hashlib
import io
import warnings
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

from lmeval.compiler.build.render import Renderer
from lmeval.compiler.tasks import FunctionRef
from lmeval.plans import (
    IMAGE_PLACEHOLDER,
    MAX_IMAGE_BYTES,
    MAX_IMAGE_PIXELS,
    MAX_IMAGE_SIDE,
    MAX_IMAGES_PER_INSTANCE,
    MIME_TYPES,
    MediaInfo,
    MediaRef,
    pixel_digest,
    placements,
)

Where = Callable[[str, str], Exception]  # (field, message) -> the one-line error to raise


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
        except (SyntaxError, ValueError):
            raise r._err("doc_to_image", doc_id, f"template renders {text[:60]!r}, not a Python literal") from None
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


def probe(data: bytes, name: str, where: Where) -> MediaInfo:
    """Check one image's bytes (format, size, pixel count before decoding, decoding whole) and describe it."""
    from PIL import Image, ImageFile

    ImageFile.LOAD_TRUNCATED_IMAGES = False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            img = Image.open(io.BytesIO(data), formats=list(MIME_TYPES))
            w, h = img.size
            if w * h > MAX_IMAGE_PIXELS or max(w, h) > MAX_IMAGE_SIDE:
                raise where(
                    "doc_to_image",
                    f"image {name} is {w}x{h} pixels, over the bound of {MAX_IMAGE_PIXELS} "
                    f"pixels or {MAX_IMAGE_SIDE} a side (a decompression bomb?)",
                )
            fmt = img.format or ""
            frames = int(getattr(img, "n_frames", 1))
            if frames > 1:
                raise where("doc_to_image", f"image {name} is animated ({frames} frames); one frame expected")
            img.load()
            raw = img.tobytes()
            mode = img.mode
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise where("doc_to_image", f"image {name} is a decompression bomb (over Pillow's pixel bound)") from None
    except Image.UnidentifiedImageError:
        raise where(
            "doc_to_image", f"{name} is not an image of a known format ({', '.join(MIME_TYPES.values())})"
        ) from None
    except (OSError, SyntaxError, ValueError) as e:
        raise where("doc_to_image", f"image {name} cannot be decoded (truncated or corrupt: {e})") from None
    mime = MIME_TYPES.get(fmt)
    if mime is None:
        raise where("doc_to_image", f"image {name} has format {fmt!r}, not one of {', '.join(MIME_TYPES)}")
    sha = hashlib.sha256(data).hexdigest()
    return MediaInfo(sha, mime, w, h, len(data), pixel_digest(mode, w, h, raw))


def doc_images(
    r: Renderer, spec: Any, doc: dict[str, Any], doc_id: int, base: Path | None, where: Where
) -> list[tuple[MediaInfo, bytes]]:
    """Each image of one document, in lm-eval's order, checked: (description, bytes)."""
    values = image_values(r, spec, doc, doc_id)
    if len(values) > MAX_IMAGES_PER_INSTANCE:
        raise where("doc_to_image", f"{len(values)} images, over the bound of {MAX_IMAGES_PER_INSTANCE} per request")
    out: list[tuple[MediaInfo, bytes]] = []
    for k, v in enumerate(values):
        data = image_bytes(v, base, where)
        label = repr(v["path"]) if isinstance(v, dict) and isinstance(v.get("path"), str) else f"#{k}"
        if isinstance(v, str):
            label = repr(v)
        out.append((probe(data, label[:80], where), data))
    return out


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
