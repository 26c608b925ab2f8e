"""Thumbnails of the images a plan's Instances show (plans/plan/media.py), for the sample browser: each image read
from the plan's companion folder (its sha256 checked), shrunk to at most ``THUMB`` pixels a side and embedded as
a PNG ``data:`` URI (the page's content policy allows images from ``data:`` only). An image that is missing or
altered, or that is not a regular file (a FIFO, a link to a device) or over the image size limit is shown as
such (``plans.read_image`` refuses it unread), never silently dropped, with one warning line on stderr: the rest
of the report is still written."""

from __future__ import annotations

import base64
import io
import sys
from typing import Any

from lmeval.plans import PlanError, read_image
from lmeval.report.inputs import DocView

THUMB = 96  # pixels, the longer side


def thumbnail(data: bytes) -> str:
    """A PNG data URI of ``data`` (an image the compiler already bounded) shrunk to ``THUMB`` a side."""
    from PIL import Image

    img: Any = Image.open(io.BytesIO(data))
    img.thumbnail((THUMB, THUMB))
    if img.mode not in ("RGB", "RGBA", "L", "LA", "P"):
        img = img.convert("RGB")
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def doc_thumbnails(plan_path: str, views: list[DocView | None]) -> list[Any] | None:
    """Per document, its first Instance's images as ``{sha, w, h, mime, size, src}`` (``src`` absent and
    ``problem`` set when the image cannot be read); None when no document shows an image."""
    cache: dict[str, dict[str, Any]] = {}
    out: list[Any] = []
    for v in views:
        insts = sorted(v.instances, key=lambda i: i.idx) if v is not None else []
        media = insts[0].media if insts and insts[0].media else None
        if media is None:
            out.append(None)
            continue
        row = []
        for m in media:
            sha = m["sha256"]
            if sha not in cache:
                entry: dict[str, Any] = {
                    "sha": sha[:12],
                    "w": m["width"],
                    "h": m["height"],
                    "mime": m["mime"],
                    "size": m["size"],
                }
                try:
                    entry["src"] = thumbnail(read_image(plan_path, sha))
                except PlanError as e:
                    entry["problem"] = str(e).removeprefix(f"{plan_path}: ")
                    print(f"WARNING: {e} (shown as unreadable in the report)", file=sys.stderr)
                cache[sha] = entry
            row.append(cache[sha])
        out.append(row)
    return out if any(x is not None for x in out) else None
