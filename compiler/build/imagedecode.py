"""One image's bytes decoded as lm-eval 0.4.13 sees them, checked and bounded: what a plan records of it, the
bytes the plan carries, and what lm-eval's few-shot sampler compares of it.

lm-eval gets a document's images from the ``datasets`` ``Image`` feature, whose ``decode_example`` opens the
file, loads it and, when the image has an EXIF Orientation tag (any value), applies Pillow's
``ImageOps.exif_transpose``: a photo taken sideways is turned upright, and its width and height swap. A plan
records the image as the model gets it, so such an image (its pixels moved by the tag: orientations 2 to 8) is
carried as that upright picture, encoded losslessly as PNG (no EXIF left to turn it twice): its ``sha256``,
MIME type, size and ``pixels`` are the PNG's, and every backend (local or HTTP) shows the upright pixels. An
image whose tag moves nothing (Orientation 1, or a value outside 1..8) keeps its own bytes.

Checks, one line each naming file, task, field and doc id (the ``Where`` the caller gives): at most
``MAX_IMAGE_PIXELS`` decoded (from the header, before any pixel is decoded: a decompression bomb is refused
without the memory), a format of ``MIME_TYPES``, one frame, decoded whole (a truncated image is refused), and
an upright re-encoding at most ``MAX_IMAGE_BYTES``.
"""

from __future__ import annotations

import hashlib
import io
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lmeval.plans import MAX_IMAGE_BYTES, MAX_IMAGE_PIXELS, MAX_IMAGE_SIDE, MIME_TYPES, MediaInfo, image_digest

Where = Callable[[str, str], Exception]  # (field, message) -> the one-line error to raise
_ORIENTATION = 0x0112  # the EXIF Orientation tag (PIL.ExifTags.Base.Orientation)


@dataclass(frozen=True)
class Decoded:
    """One image as a plan carries it and as lm-eval's few-shot sampler compares it."""

    info: MediaInfo  # what the plan records (of ``data``)
    data: bytes  # the bytes the plan carries: the original, or the upright PNG of an EXIF-rotated image
    same: tuple[Any, ...]  # what Pillow's ``Image.__eq__`` compares of the image ``datasets`` decodes


def decode(data: bytes, name: str, where: Where) -> Decoded:
    """Check one image's bytes and describe it as lm-eval sees it (see the module docstring)."""
    from PIL import ImageOps

    img = _open(data, name, where)
    orientation = img.getexif().get(_ORIENTATION)
    try:
        seen = img if orientation is None else ImageOps.exif_transpose(img)  # datasets' decode_example
    except (OSError, SyntaxError, ValueError, TypeError, KeyError) as e:
        raise where("doc_to_image", f"image {name}: its EXIF orientation cannot be applied ({e})") from None
    pixels = image_digest(seen)
    same = _same(seen, pixels)
    if orientation not in range(2, 9):  # no tag, or one that moves no pixel: the image's own bytes
        return Decoded(_info(data, img, pixels, name, where), data, same)
    png = _png(seen, name, where)
    upright = _open(png, name, where)
    return Decoded(_info(png, upright, image_digest(upright), name, where), png, same)


def _open(data: bytes, name: str, where: Where) -> Any:
    """The image of ``data``, loaded, after the bound and format checks."""
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
            frames = int(getattr(img, "n_frames", 1))
            if frames > 1:
                raise where("doc_to_image", f"image {name} is animated ({frames} frames); one frame expected")
            img.load()
            img.getexif()  # parsed here, where a corrupt EXIF block is one line
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise where("doc_to_image", f"image {name} is a decompression bomb (over Pillow's pixel bound)") from None
    except Image.UnidentifiedImageError:
        raise where(
            "doc_to_image", f"{name} is not an image of a known format ({', '.join(MIME_TYPES.values())})"
        ) from None
    except (OSError, SyntaxError, ValueError, TypeError, KeyError, EOFError) as e:
        raise where("doc_to_image", f"image {name} cannot be decoded (truncated or corrupt: {e})") from None
    return img


def _info(data: bytes, img: Any, pixels: str, name: str, where: Where) -> MediaInfo:
    mime = MIME_TYPES.get(img.format or "")
    if mime is None:
        raise where("doc_to_image", f"image {name} has format {img.format!r}, not one of {', '.join(MIME_TYPES)}")
    return MediaInfo(hashlib.sha256(data).hexdigest(), mime, img.width, img.height, len(data), pixels)


def _same(seen: Any, pixels: str) -> tuple[Any, ...]:
    """What Pillow's ``Image.__eq__`` compares of the image ``datasets`` decodes: its class (the format's own, or
    Pillow's plain ``Image`` once an Orientation tag made it transpose), info, palette, and mode, size and pixels
    (``pixels``: their ``image_digest``)."""
    return (type(seen).__name__, dict(seen.info), seen.getpalette(), pixels)


def _png(img: Any, name: str, where: Where) -> bytes:
    """The upright image encoded as PNG (lossless; its transparency kept, no EXIF)."""
    buf = io.BytesIO()
    try:
        img.save(buf, format="PNG")
    except (OSError, KeyError, ValueError) as e:
        raise where(
            "doc_to_image",
            f"image {name} ({img.mode}) has an EXIF orientation but cannot be stored upright as PNG: {e}",
        ) from None
    if buf.tell() > MAX_IMAGE_BYTES:
        size = buf.tell()
        raise where("doc_to_image", f"image {name} upright (EXIF orientation) is {size} bytes, over {MAX_IMAGE_BYTES}")
    return buf.getvalue()
