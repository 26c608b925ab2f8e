"""The model an execution runs: the plan's model config with command-line overrides applied.

The plan header's ``config["model"]`` (the resolved Hydra model config the plan was compiled with) is the
default. Overrides are applied in order with OmegaConf (never Hydra): ``model=NAME`` replaces the whole model
config by ``conf/model/NAME.yaml``; ``model.KEY=VALUE`` (dotted, ``+`` allowed) sets one key.

Code loading is the executing user's decision alone: ``trust_remote_code`` and the engine arguments that name
code to import (``executor.engineconf.CODE_LOADING_ARGS``) are dropped from the plan's model config and
count only when this run's own overrides (or a ``conf/model/NAME.yaml`` they select) set them.

Keys likewise (plans/apikeys.py): a plan's ``model.engine.api_key`` is dropped, one given in an override or a
model config is refused in one line (the key comes from ``$OPENAI_API_KEY``), and ``uses_plan_base_url`` says
whether the server an HTTP backend talks to is the plan's choice rather than this user's.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from lmeval.common import ModelRef, conf_dir, config_hash, model_name, parse_hub_id, resolve_model, tokenizer_hash
from lmeval.executor.engineconf import CODE_LOADING_ARGS
from lmeval.executor.errors import ExecuteError
from lmeval.plans import (
    DEFAULT_BACKEND,
    PlanHeader,
    Reasoning,
    TokenRule,
    UserError,
    find_backend,
    override_problem,
    parse_reasoning,
    secret_problem,
    unknown_backend,
    without_secrets,
)

MODEL_CONF_DIR = conf_dir("model")


@dataclass(frozen=True)
class ModelSpec:
    """A resolved model config: what to load and how."""

    name: str
    path: str | None
    backend: str
    dtype: str = "auto"
    max_model_len: int | None = None
    add_bos_token: bool | None = None  # None: the tokenizer's own default (plans/plan/tokenization.py)
    prefix_token_id: int | None = None  # None: BOS, else EOS
    engine: dict[str, Any] = field(default_factory=dict)
    batch_size: int | None = None
    max_gen_toks: int = 256
    seed: int = 1234
    revision: str | None = None  # model.revision (also model.path=org/name@revision)
    tensor_parallel_size: int | None = None
    trust_remote_code: bool = False  # only ever from the executing user (see the module docstring)
    raw: dict[str, Any] = field(default_factory=dict)  # the whole resolved model config
    token_rule: TokenRule | None = None  # the rule the plan's token ids were made with (check_token_rule)
    seeded_sampling: bool = False  # the run samples (seeded per request): engines may need settings for it
    reasoning: Reasoning | None = None  # the plan's run.reasoning: each response's reasoning tokens are counted
    plan_base_url: bool = False  # engine["base_url"] is the plan's, not this run's user's (plans/apikeys.py)

    def engine_args(self) -> dict[str, Any]:
        return without_secrets(self.engine)


def _conf_dir() -> Path:
    env = os.environ.get("LMEVAL_CONF_DIR")
    return Path(env) / "model" if env else MODEL_CONF_DIR


def load_named_config(name: str) -> dict[str, Any]:
    """``conf/model/<name>.yaml`` as a plain dict (Hydra's ``defaults``/``_self_`` keys dropped)."""
    from omegaconf import OmegaConf

    if not re.fullmatch(r"[A-Za-z0-9_.\-]+", name):
        raise ExecuteError(f"model={name}: not a model config name")
    path = _conf_dir() / f"{name}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in _conf_dir().glob("*.yaml"))
        raise ExecuteError(f"model={name}: no model config {path} (known: {', '.join(known) or 'none'})")
    try:
        cfg = OmegaConf.to_container(OmegaConf.load(path), resolve=True)
    except Exception as e:  # OmegaConf raises many types for bad YAML
        raise ExecuteError(f"{path}: cannot load model config ({type(e).__name__}: {e})") from None
    if not isinstance(cfg, dict):
        raise ExecuteError(f"{path}: model config is not a mapping")
    cfg.pop("defaults", None)
    return {str(k): v for k, v in cfg.items()}


def resolve_model_config(header: PlanHeader, overrides: Sequence[str]) -> dict[str, Any]:
    """The plan's model config with ``overrides`` applied, as a plain dict."""
    from omegaconf import OmegaConf

    base = header.config.get("model") if isinstance(header.config, dict) else None
    if not isinstance(base, dict):
        m = header.model
        base = {
            "name": m.name,
            "backend": m.backend,
            "add_bos_token": m.add_bos_token,
            "engine": dict(m.engine),
        }
    base = dict(base)
    if base.get("name") in (None, ""):
        base["name"] = header.model.name  # the name the compiler derived (tiny, the Hub name, the directory's)
    if base.get("path") in (None, "") and header.model.path:
        base["path"] = header.model.path  # a Hub id is identity, not a location: the plan keeps it
    problem = override_problem(overrides)  # before OmegaConf, whose errors quote the override
    if problem:
        raise ExecuteError(problem)
    cfg: Any = OmegaConf.create(without_code_loading(base))
    for ov in overrides:
        key, sep, value = ov.partition("=")
        key = key.strip().lstrip("+")
        if not sep or not key:
            raise ExecuteError(f"override {ov!r}: expected KEY=VALUE (e.g. model.backend=hf)")
        if key == "model":
            cfg = OmegaConf.create(load_named_config(value.strip()))
            continue
        if not key.startswith("model."):
            raise ExecuteError(f"override {ov!r}: execute only takes model overrides (model=NAME or model.KEY=VALUE)")
        try:
            dot = OmegaConf.from_dotlist([f"{key[len('model.') :]}={value}"])
        except Exception as e:
            raise ExecuteError(f"override {ov!r}: {e}") from None
        cfg = OmegaConf.merge(cfg, dot)
    out = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(out, dict)
    problem = secret_problem(out)
    if problem:
        raise ExecuteError(problem)
    return {str(k): v for k, v in out.items()}


def uses_plan_base_url(overrides: Sequence[str], model_cfg: dict[str, Any]) -> bool:
    """Whether ``model_cfg``'s ``engine.base_url`` is the plan's: set, and no override of this command chose
    the server (``model=NAME``, ``model.engine=...`` or ``model.engine.base_url=...``)."""
    engine = model_cfg.get("engine")
    if not isinstance(engine, dict) or not engine.get("base_url"):
        return False
    keys = {ov.partition("=")[0].strip().lstrip("+") for ov in overrides}
    return not keys & {"model", "model.engine", "model.engine.base_url"}


def without_code_loading(model_cfg: dict[str, Any]) -> dict[str, Any]:
    """A plan's model config minus everything that would make the executor import code, and any key."""
    out = {k: v for k, v in model_cfg.items() if k != "trust_remote_code"}
    engine = out.get("engine")
    if isinstance(engine, dict):
        out["engine"] = without_secrets({k: v for k, v in engine.items() if k not in CODE_LOADING_ARGS})
    return out


def model_spec(cfg: dict[str, Any]) -> ModelSpec:
    """Validate a resolved model config and turn it into a ``ModelSpec``."""
    backend = str(cfg.get("backend") or DEFAULT_BACKEND)
    if find_backend(backend) is None:
        raise ExecuteError(unknown_backend(backend))
    engine = cfg.get("engine") or {}
    if not isinstance(engine, dict):
        raise ExecuteError("model.engine: must be a mapping of engine arguments")
    mml = cfg.get("max_model_len")
    bs = cfg.get("batch_size")
    add_bos = cfg.get("add_bos_token")
    if add_bos is not None and not isinstance(add_bos, bool):
        raise ExecuteError(f"model.add_bos_token={add_bos!r}: must be true, false or null")
    prefix = cfg.get("prefix_token_id")
    if prefix is not None and (isinstance(prefix, bool) or not isinstance(prefix, int) or prefix < 0):
        raise ExecuteError(f"model.prefix_token_id={prefix!r}: must be a token id (an integer >= 0) or null")
    tp = cfg.get("tensor_parallel_size")
    trust = cfg.get("trust_remote_code")
    if trust is not None and not isinstance(trust, bool):
        raise ExecuteError(f"model.trust_remote_code={trust}: must be true or false")
    try:
        return ModelSpec(
            name=model_name(cfg.get("name"), cfg.get("path")),
            path=None if cfg.get("path") in (None, "") else str(cfg["path"]),
            backend=backend,
            dtype=str(cfg.get("dtype") or "auto"),
            max_model_len=None if mml in (None, "") else int(mml),
            add_bos_token=add_bos,
            prefix_token_id=prefix,
            engine=dict(engine),
            batch_size=None if bs in (None, "", "auto") else int(bs),
            max_gen_toks=int(cfg.get("max_gen_toks") or 256),
            seed=int(cfg["seed"]) if cfg.get("seed") is not None else 1234,
            revision=None if cfg.get("revision") in (None, "") else str(cfg["revision"]),
            tensor_parallel_size=None if tp in (None, "") else int(tp),
            trust_remote_code=bool(trust) or bool(engine.get("trust_remote_code")),
            raw=dict(cfg),
        )
    except (TypeError, ValueError) as e:
        raise ExecuteError(f"model config: bad value ({e})") from None


def resolve_model_ref(
    spec: ModelSpec, header: PlanHeader | None = None, by_name: bool | None = None
) -> ModelRef | None:
    """The model ``model.path`` names (a directory, a Hub id resolved through the Hugging Face cache, or
    the built-in tiny model when it is null). A Hub model runs at the revision the plan was compiled
    against unless the user names another. ``None`` for a model known by name (an HTTP backend's, or any
    when ``by_name``) whose path is not a local directory (a remote model)."""
    if by_name is None:
        entry = find_backend(spec.backend)
        by_name = entry is not None and entry.http
    package, gguf_file = spec.raw.get("package"), spec.raw.get("gguf_file")
    from_gguf = header is not None and (header.model.tokenizer or "").startswith("gguf-sha256:")
    if spec.path is None and not package and spec.name != "tiny" and not by_name:
        where = "model.path=FILE.gguf (or model=NAME)" if from_gguf else "model.path=DIR"
        raise ExecuteError(
            f"model {spec.name}: the plan does not say where the model lives (plans hold no machine paths); "
            f"pass {where}"
        )
    if from_gguf and not gguf_file and spec.path and parse_hub_id(spec.path, spec.revision) is not None:
        raise ExecuteError(
            f"model.path={spec.path}: the plan was compiled from a GGUF file of this Hub repo; "
            "pass model.gguf_file=NAME"
        )
    revision = spec.revision
    if revision is None and header is not None and header.model.revision and spec.path:
        if spec.path == header.model.path:  # the Hub id the plan was compiled for, with no revision named
            revision = header.model.revision
    if by_name and spec.path is not None and not Path(os.path.expanduser(spec.path)).is_dir():
        return None
    try:
        return resolve_model(spec.path, revision, gguf_file=gguf_file, package=package)
    except UserError as e:
        raise ExecuteError(str(e)) from None


def resolve_model_dir(spec: ModelSpec, header: PlanHeader | None = None) -> Path | None:
    """Where the weights and tokenizer live (``resolve_model_ref``'s directory)."""
    ref = resolve_model_ref(spec, header)
    return ref.dir if ref is not None else None


def check_tokenizer(header: PlanHeader, model_dir: Path | None, plan_path: str) -> str | None:
    """Refuse a model whose tokenizer differs from the one the plan's token ids were made with."""
    want = header.model.tokenizer_hash
    have = tokenizer_hash(model_dir)
    if want and have and want != have:
        raise ExecuteError(
            f"{plan_path}: the model's tokenizer ({model_dir}/tokenizer.json, sha256 {have[:12]}) differs "
            f"from the plan's ({header.model.tokenizer or header.model.name}, sha256 {want[:12]}); "
            f"recompile the plan for this model"
        )
    return have


def with_plan_reasoning(header: PlanHeader, spec: ModelSpec) -> ModelSpec:
    """``spec`` with the plan's ``run.reasoning`` (a bad one is the scorer's to refuse: then none)."""
    run = header.config.get("run") if isinstance(header.config, dict) else None
    try:
        fmt = parse_reasoning(run.get("reasoning") if isinstance(run, dict) else None)
    except ValueError:
        fmt = None
    return replace(spec, reasoning=fmt)


def check_token_rule(header: PlanHeader, spec: ModelSpec, plan_path: str) -> ModelSpec:
    """``spec`` with the plan's recorded token rule; refuses ``model.add_bos_token`` or
    ``model.prefix_token_id`` overrides that contradict the rule the plan's token ids were made with."""
    spec = with_plan_reasoning(header, spec)
    rule = header.model.token_rule
    if rule is None:
        return spec
    for key, planned, given in (
        ("add_bos_token", rule.add_bos_token, spec.add_bos_token),
        ("prefix_token_id", rule.prefix_token_id if rule.prefix_token_source == "override" else None,
         spec.prefix_token_id),
    ):  # fmt: skip
        if planned != given:
            raise ExecuteError(
                f"{plan_path}: model.{key}={_yaml(given)} but the plan's token ids were compiled with "
                f"{key}={_yaml(planned)}; recompile the plan with model.{key}={_yaml(given)}"
            )
    return replace(spec, token_rule=rule)


def _yaml(v: Any) -> str:
    return "null" if v is None else str(v).lower() if isinstance(v, bool) else str(v)


def model_identity(
    spec: ModelSpec, model_dir: Path | None, tok_hash: str | None, ref: ModelRef | None = None
) -> dict[str, Any]:
    """What makes two runs' answers interchangeable (used by the manifest, resume and ``--reuse``)."""
    revision = None
    if model_dir is not None:
        if model_dir.parent.name == "snapshots":  # a Hugging Face cache snapshot is named by its commit
            revision = model_dir.name
    hub_id = ref.hub_id if ref is not None else None
    return {
        "name": spec.name,
        "path": hub_id or (str(model_dir) if model_dir is not None else spec.path),
        "hub_id": hub_id,
        "backend": spec.backend,
        "dtype": spec.dtype,
        "max_model_len": spec.max_model_len,
        "add_bos_token": spec.add_bos_token,
        "tokenizer_hash": tok_hash,
        "config_hash": config_hash(model_dir),
        "revision": revision,
    }


REUSE_KEYS = ("name", "path", "backend", "dtype", "max_model_len", "add_bos_token", "tokenizer_hash", "config_hash")
