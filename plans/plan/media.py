"""Images in a plan (``InstanceRecord.media``) and their bytes beside it: the rules both stages share.

An Instance that shows the model images lists them, in the order the model gets them, as ``MediaRef`` maps:
the sha256 of the image's encoded bytes (its identity: the original bytes, or, for an image EXIF turns, the
upright picture as PNG: compiler/build/imagedecode.py), its MIME type, width, height and byte count, the
sha256 of its decoded pixels (``pixels``, palette and transparency included: re-encoding differs across
Pillow/zlib versions, the pixels do not), and where it sits: ``placeholder`` is the index of the ``<image>``
placeholder it fills in the context (lm-eval's ``DEFAULT_IMAGE_PLACEHOLDER``; None when the prompt has fewer
placeholders than images, as lm-eval allows) and ``offset`` that placeholder's character offset in the
context; ``message`` is the index of the chat message holding it, when the Instance carries messages. An
Instance without images (a text request, or a document of an image task that has none) has no ``media``.

The bytes travel in a content-addressed companion folder that ``compile`` writes beside the plan,
``<plan file>.media/<sha256>`` (``media_dir``), one file per distinct image. ``execute`` checks, before it
runs anything, that every image the plan names is there and hashes to its name (``check_media``): a plan
copied without its folder, or with an image's bytes changed, is refused in one line naming the image and the
first Instance that uses it. The references are in the records, so the plan hash, the task hash and (being
what the model sees) the request hash cover every image's sha256; a plan without images has no ``media`` key
anywhere and keeps its bytes and hashes.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lmeval.common import file_sha256
from lmeval.plans.errors import PlanError
from lmeval.plans.limits import InputError, open_regular

IMAGE_PLACEHOLDER = "<image>"  # lm-eval 0.4.13's DEFAULT_IMAGE_PLACEHOLDER (models/hf_vlms.py)
MEDIA_SUFFIX = ".media"  # the companion folder: <plan file>.media/<sha256>
# bounds a compile enforces on every image (and readers on every reference): one line each when broken
MAX_IMAGES_PER_INSTANCE = 16
MAX_IMAGE_BYTES = 16 << 20  # encoded bytes of one image
MAX_IMAGE_PIXELS = 1 << 25  # width * height of one image (33.5 megapixels; Pillow's bomb check is at 179M)
MAX_IMAGE_SIDE = 16384
MIME_TYPES: dict[str, str] = {  # Pillow format name -> MIME type; the image formats a plan may carry
    "PNG": "image/png",
    "JPEG": "image/jpeg",
    "WEBP": "image/webp",
    "GIF": "image/gif",
    "BMP": "image/bmp",
}
_HEX64 = re.compile(r"[0-9a-f]{64}")
_KEYS = frozenset({"sha256", "mime", "width", "height", "size", "pixels", "placeholder", "offset", "message"})
_REQUIRED = ("sha256", "mime", "width", "height", "size", "pixels")


@dataclass(frozen=True)
class MediaInfo:
    """What identifies one image's content (the same for every Instance that uses it)."""

    sha256: str  # sha256 of the original encoded bytes: the image's identity and its companion file's name
    mime: str  # one of MIME_TYPES' values
    width: int
    height: int
    size: int  # encoded byte count
    pixels: str  # sha256 over the decoded pixels (mode, size, raw bytes: ``pixel_digest``)


@dataclass(frozen=True)
class MediaRef:
    """One image of one Instance and where it sits in the prompt."""

    info: MediaInfo
    placeholder: int | None = None  # the index of the <image> placeholder it fills, None beyond them
    offset: int | None = None  # that placeholder's character offset in the context
    message: int | None = None  # the index of the chat message holding it (Instances with messages)

    def to_dict(self) -> dict[str, Any]:
        i = self.info
        d: dict[str, Any] = {"sha256": i.sha256, "mime": i.mime, "width": i.width, "height": i.height,
                             "size": i.size, "pixels": i.pixels, "placeholder": self.placeholder,
                             "offset": self.offset}  # fmt: skip
        if self.message is not None:
            d["message"] = self.message
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> MediaRef:
        info = MediaInfo(*(d[k] for k in _REQUIRED))
        return cls(info, d.get("placeholder"), d.get("offset"), d.get("message"))


def pixel_digest(
    mode: str,
    width: int,
    height: int,
    raw: bytes,
    palette: tuple[str, bytes] | None = None,
    transparency: Any = None,
) -> str:
    """sha256 of decoded pixels: ``mode\\0width\\0height\\0`` then the raw pixel bytes (Pillow's ``tobytes``),
    then what gives those bytes their colours where the mode leaves it to the image: the palette (its mode and
    bytes) of a palette image and the transparency (``tRNS``: a palette's alphas, a transparent grey or RGB
    colour, GIF's transparent index). Without palette and transparency the digest is the first part alone, so an
    image without either keeps the digest it always had (the raw bytes' length is fixed by mode and size, so the
    suffix cannot be confused with pixels)."""
    h = hashlib.sha256(f"{mode}\0{width}\0{height}\0".encode())
    h.update(raw)
    if palette is not None:
        h.update(b"\0palette\0" + palette[0].encode() + b"\0" + palette[1])
    if transparency is not None:
        h.update(b"\0transparency\0" + repr(transparency).encode())
    return h.hexdigest()


def image_digest(img: Any) -> str:
    """``pixel_digest`` of a decoded (loaded) Pillow image: its mode, size, pixels, palette and transparency."""
    colours = img.getpalette(None) if img.mode in ("P", "PA") else None  # in the palette's own mode
    palette = (img.palette.mode, bytes(colours)) if colours is not None else None
    return pixel_digest(img.mode, img.width, img.height, img.tobytes(), palette, img.info.get("transparency"))


def placements(context: str, n_images: int) -> list[tuple[int | None, int | None]]:
    """(placeholder index, character offset) of each of ``n_images`` images of a context: the k-th image fills
    the k-th ``<image>`` placeholder; images beyond the placeholders get (None, None)."""
    out: list[tuple[int | None, int | None]] = []
    pos = 0
    for k in range(n_images):
        at = context.find(IMAGE_PLACEHOLDER, pos) if pos >= 0 else -1
        if at < 0:
            out.append((None, None))
            pos = -1
            continue
        out.append((k, at))
        pos = at + len(IMAGE_PLACEHOLDER)
    return out


def media_problem(value: Any, context: str) -> str | None:
    """Why ``value`` is not an Instance's media list (see the module docstring), or None."""
    if type(value) is not list or not value:
        return "not a non-empty list of images"
    if len(value) > MAX_IMAGES_PER_INSTANCE:
        return f"{len(value)} images, over {MAX_IMAGES_PER_INSTANCE}"
    for i, m in enumerate(value):
        if type(m) is not dict or not set(_REQUIRED) <= set(m) or not set(m) <= _KEYS:
            return f"image {i} is not a media reference map"
        if type(m["sha256"]) is not str or not _HEX64.fullmatch(m["sha256"]):
            return f"image {i}: sha256 is not 64 hex digits"
        if type(m["pixels"]) is not str or not _HEX64.fullmatch(m["pixels"]):
            return f"image {i}: pixels is not 64 hex digits"
        if m["mime"] not in MIME_TYPES.values():
            return f"image {i}: MIME type {str(m['mime'])[:40]!r} is not one of {', '.join(MIME_TYPES.values())}"
        for k, top in (("width", MAX_IMAGE_SIDE), ("height", MAX_IMAGE_SIDE), ("size", MAX_IMAGE_BYTES)):
            if type(m[k]) is not int or not 0 < m[k] <= top:
                return f"image {i}: {k} {str(m[k])[:20]} is not in 1..{top}"
        ph, off = m.get("placeholder"), m.get("offset")
        if ph is not None and (type(ph) is not int or ph < 0 or type(off) is not int):
            return f"image {i}: placeholder/offset not integers"
        if off is not None and context[off : off + len(IMAGE_PLACEHOLDER)] != IMAGE_PLACEHOLDER:
            return f"image {i}: no {IMAGE_PLACEHOLDER} placeholder at offset {off}"
    return None


def media_hashes(media: list[dict[str, Any]] | None) -> list[str] | None:
    """The ordered image sha256s of an Instance's media (what its request hash covers), None without images."""
    return None if not media else [m["sha256"] for m in media]


def media_dir(plan_path: str | os.PathLike[str]) -> Path:
    """The companion folder of a plan file: ``<plan file>.media``."""
    p = Path(plan_path)
    return p.with_name(p.name + MEDIA_SUFFIX)


def write_media(plan_path: str | os.PathLike[str], blobs: dict[str, bytes]) -> Path | None:
    """Write each image (sha256 -> bytes) into the plan's companion folder, atomically file by file; an image
    already there with the right bytes is kept. None when there are no images (no folder is made)."""
    if not blobs:
        return None
    folder = media_dir(plan_path)
    folder.mkdir(parents=True, exist_ok=True)
    for sha, data in sorted(blobs.items()):
        if hashlib.sha256(data).hexdigest() != sha:
            raise PlanError(f"image {sha[:12]}: bytes do not hash to their name (a compiler bug)")
        target = folder / sha
        if target.is_file() and file_sha256(target) == sha:
            continue
        tmp = folder / f".{sha}.tmp{os.getpid()}"
        tmp.write_bytes(data)
        os.replace(tmp, target)
    return folder


def read_image(plan_path: str | os.PathLike[str], sha: str) -> bytes:
    """One image's bytes from the plan's companion folder, checked against its sha256 (``PlanError``)."""
    path = media_dir(plan_path) / sha
    if not _HEX64.fullmatch(sha):
        raise PlanError(f"{plan_path}: {sha[:40]!r} is not an image sha256")
    if not path.exists():  # (a dangling link too)
        raise PlanError(f"{plan_path}: image {sha[:12]} is missing from {path.parent}")
    try:  # a regular file only, never blocking on a FIFO nor reading a device a link leads to, and bounded
        with open_regular(path, max_bytes=MAX_IMAGE_BYTES, what="image file") as f:
            data = f.read(MAX_IMAGE_BYTES + 1)
    except (InputError, OSError) as e:
        why = str(e).removeprefix(f"{path}: ")
        raise PlanError(f"{plan_path}: image {sha[:12]} in {path.parent} cannot be read ({why})") from None
    if len(data) > MAX_IMAGE_BYTES:  # (grown since it was opened)
        raise PlanError(f"{plan_path}: image {sha[:12]} in {path.parent} is over {MAX_IMAGE_BYTES} bytes")
    if hashlib.sha256(data).hexdigest() != sha:
        raise PlanError(f"{plan_path}: image {sha[:12]} in {path.parent} has been altered (its bytes hash otherwise)")
    return data


def check_media(plan_path: str | os.PathLike[str], uses: dict[str, str]) -> None:
    """Every image a plan names (``uses``: sha256 -> the first Instance using it, as text) is in its companion
    folder with its bytes; else a one-line ``PlanError`` naming the image and that Instance."""
    folder = media_dir(plan_path)
    for sha, where in uses.items():
        path = folder / sha
        try:
            ok = path.is_file() and path.stat().st_size <= MAX_IMAGE_BYTES
            got = file_sha256(path) if ok else None
        except OSError:
            got = None
        if got is None:
            raise PlanError(f"{plan_path}: image {sha[:12]} of {where} is missing (expected {path})")
        if got != sha:
            raise PlanError(f"{plan_path}: image {sha[:12]} of {where} has been altered ({path} hashes to {got[:12]})")
