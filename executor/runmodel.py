"""The model a run of a plan uses, resolved and checked in one place (``execute`` and the batch export/import):
the plan's model config with this run's overrides, the model's location, its images, its context length, its
tokenizer and the plan's token rule. Every check refuses in one line before anything is written."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from lmeval.common import ModelRef
from lmeval.executor.engineconf import model_facts
from lmeval.executor.errors import ExecuteError
from lmeval.executor.media import check_plan_media
from lmeval.executor.modelconf import (
    ModelSpec,
    check_token_rule,
    check_tokenizer,
    model_spec,
    resolve_model_config,
    resolve_model_ref,
    uses_plan_base_url,
)
from lmeval.plans import BackendEntry, InstanceRecord, PlanHeader, find_backend, unknown_backend


@dataclass(frozen=True)
class RunModel:
    spec: ModelSpec
    entry: BackendEntry  # the backend table's entry of spec.backend
    ref: ModelRef | None  # None: a model known by name (no local directory)
    tok_hash: str | None  # the local tokenizer's hash, checked against the plan's

    @property
    def model_dir(self) -> Path | None:
        return self.ref.dir if self.ref is not None else None


def resolve_run_model(
    plan_path: str,
    header: PlanHeader,
    overrides: Sequence[str],
    instances: Sequence[InstanceRecord],
    remote: bool = False,
) -> RunModel:
    """The model of ``header`` with ``overrides`` applied, checked against the plan. ``remote``: the model runs
    at a provider (a batch job), known by name: no local weights give its context length and its images are
    not checked here (the batch export refuses them)."""
    model_cfg = resolve_model_config(header, overrides)
    spec = replace(model_spec(model_cfg), plan_base_url=uses_plan_base_url(overrides, model_cfg))
    entry = find_backend(spec.backend)
    if entry is None:  # model_spec refuses it first
        raise ExecuteError(unknown_backend(spec.backend))
    ref = resolve_model_ref(spec, header, by_name=True if remote else None)
    model_dir = ref.dir if ref is not None else None
    if not remote:
        check_plan_media(plan_path, instances, spec.backend, model_dir, header.model.processor_hash)  # images there
        spec = with_context_length(spec, entry, model_dir)
    tok_hash = check_tokenizer(header, model_dir, plan_path)
    spec = check_token_rule(header, spec, plan_path)
    return RunModel(spec, entry, ref, tok_hash)


def with_context_length(spec: ModelSpec, entry: BackendEntry, model_dir: Path | None) -> ModelSpec:
    """``spec`` with ``max_model_len`` derived from the model's config when the user did not set it (backends
    that run local weights), so pre-flight, the engine and the manifest all use the same length."""
    if spec.max_model_len is not None or model_dir is None or not entry.needs_weights:
        return spec
    if spec.engine.get("max_model_len") is not None:  # set as model.engine.max_model_len
        return replace(spec, max_model_len=int(spec.engine["max_model_len"]))
    return replace(spec, max_model_len=model_facts(model_dir).max_model_len)


__all__ = ["RunModel", "resolve_run_model", "with_context_length"]
