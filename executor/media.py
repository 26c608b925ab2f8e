"""A plan's images before anything runs: every image its Instances show must be in the plan's companion folder
with its bytes (``plans.check_media``), and the backend must be one that shows images to the model; otherwise
one line naming the image and the first Instance using it (or the backend), before any engine starts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from lmeval.common import processor_hash
from lmeval.executor.errors import ExecuteError
from lmeval.plans import (
    IMAGE_PLACEHOLDER,
    InstanceRecord,
    PlanError,
    backend_names,
    check_media,
    find_backend,
    read_image,
)


def image_backends() -> tuple[str, ...]:
    """The backends that send an Instance's images (the table's ``sends_images``)."""
    return tuple(n for n in backend_names() if (e := find_backend(n)) is not None and e.sends_images)


def media_uses(instances: Sequence[InstanceRecord]) -> dict[str, str]:
    """Each image sha256 the Instances show -> the first Instance showing it, as an error names it."""
    uses: dict[str, str] = {}
    for inst in instances:
        for m in inst.media or ():
            uses.setdefault(m["sha256"], f"Instance {inst.instance_id} (task {inst.task} doc {inst.doc_id})")
    return uses


def check_plan_media(
    plan_path: str,
    instances: Sequence[InstanceRecord],
    backend: str,
    model_dir: Path | None = None,
    processor: str | None = None,
) -> None:
    """Refuse a plan whose images are missing or altered, or a backend that cannot show them (one line)."""
    uses = media_uses(instances)
    if not uses:
        return
    for inst in instances:
        if inst.media and inst.request_type != "generate_until":
            raise ExecuteError(
                f"{plan_path}: Instance {inst.instance_id} (task {inst.task} doc {inst.doc_id}): "
                f"{inst.request_type} requests with images are not run yet (generate_until only)"
            )
    first = next(iter(uses.values()))
    entry = find_backend(backend)
    if entry is not None and entry.needs_weights:
        _refuse_placeholders_without_images(plan_path, instances, backend)
    if entry is not None and entry.needs_weights and model_dir is not None:
        from lmeval.executor.backends import is_vision_model

        if not is_vision_model(model_dir):
            raise ExecuteError(f"{plan_path}: {first} shows images, but {model_dir} is not a vision-language "
                               "model (its config.json has no vision_config)")  # fmt: skip
        here = processor_hash(model_dir)
        if processor is not None and here != processor:
            raise ExecuteError(
                f"{plan_path}: the plan was compiled for image processor settings {processor[:12]}, but "
                f"{model_dir} has {str(here)[:12]} (preprocessor_config.json / processor_config.json differ)"
            )
    if entry is None or not entry.sends_images:
        raise ExecuteError(
            f"{plan_path}: {first} shows images, which model.backend={backend} cannot send "
            f"(image backends: {', '.join(image_backends())})"
        )
    try:
        check_media(plan_path, uses)
    except PlanError as e:
        raise ExecuteError(str(e)) from None


def _refuse_placeholders_without_images(plan_path: str, instances: Sequence[InstanceRecord], backend: str) -> None:
    """A local model cannot run a prompt whose ``<image>`` placeholder has no image (a document of an image task
    whose ``doc_to_image`` gave none: PISA's text-only questions): the placeholder becomes the model's image token
    with nothing to fill it. lm-eval's hf-multimodal cannot run it either (its request's ``visual`` is None)."""
    for inst in instances:
        if not inst.media and inst.request_type == "generate_until" and IMAGE_PLACEHOLDER in inst.context:
            raise ExecuteError(
                f"{plan_path}: Instance {inst.instance_id} (task {inst.task} doc {inst.doc_id}) shows no image "
                f"but its prompt has an {IMAGE_PLACEHOLDER} placeholder, which model.backend={backend} cannot run "
                "(nor can lm-eval's hf-multimodal); a chat endpoint (openai-chat) runs it as text"
            )


def with_images(job: Any, plan_path: str, inst: InstanceRecord) -> Any:
    """A generation job whose input carries the Instance's images (refs and bytes, each checked again)."""
    try:
        images = tuple(read_image(plan_path, m["sha256"]) for m in inst.media or ())
    except PlanError as e:
        raise ExecuteError(f"{e} (Instance {inst.instance_id})") from None
    return replace(job, input=replace(job.input, media=tuple(inst.media or ()), images=images))
