"""Hydra composition of ``conf/`` (Compose API: no run directory, no cwd change) and the run options."""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Any

from lmeval.common import CONF_DIR
from lmeval.compiler.build import DEFAULT_SEED_MODE
from lmeval.compiler.errors import CompileError, fail
from lmeval.plans import (
    ReasoningError,
    SubsampleError,
    canonical_reasoning,
    canonical_subsample,
    override_problem,
    secret_problem,
    value_problem,
)

# Run options conf/run/default.yaml leaves out, so that a plan compiled at their default carries exactly the
# config it carried before they existed (its plan hash does not move); ``run.KEY=V`` adds them all the same.
OPTIONAL_RUN_KEYS = (
    "seed_mode", "reasoning", "chat_template_kwargs", "thinking_budget", "answer_budget", "strict_fields",
    "subsample", "sample_scores", "format", "sweep", "store",
)  # fmt: skip
_OPTIONAL = re.compile(rf"^run\.({'|'.join(OPTIONAL_RUN_KEYS)})[.=]", re.S)


_TASK_SCORES = re.compile(r"^task\.[^.=]+\.(sample_scores|repeats)=", re.S)


def optional_run_keys(overrides: list[str]) -> list[str]:
    """``run.seed_mode=V`` as ``+run.seed_mode=V`` (the key is not in conf/run/default.yaml); also
    ``run.reasoning.end=...`` as ``+run.reasoning.end=...``; ``task.NAME.sample_scores=V`` as
    ``++task.NAME.sample_scores=V`` (and ``repeats``: set whether or not the task's YAML has the key)."""
    return [f"+{o}" if _OPTIONAL.match(o) else f"++{o}" if _TASK_SCORES.match(o) else o for o in overrides]


def _task_names(group: str) -> list[str]:
    return sorted(p.stem for p in (CONF_DIR / group).glob("*.yaml"))


def _hydra_error(e: Exception, overrides: list[str]) -> CompileError:
    msg = " ".join(str(e).split())
    low = msg.lower()
    if "could not find" in low or "could not load" in low:
        for group in ("task", "model", "run"):
            for ov in overrides:
                key, _, val = ov.lstrip("+~").partition("=")
                if key != group:
                    continue
                for name in val.strip("[]").split(","):
                    name = name.strip().strip("'\"")
                    if name and name not in _task_names(group):
                        close = difflib.get_close_matches(name, _task_names(group), n=5, cutoff=0.6)
                        hint = f"; did you mean {', '.join(close)}?" if close else ""
                        avail = "" if close else f"; available: {', '.join(_task_names(group))}"
                        return fail(f"unknown {group} {name!r} (no conf/{group}/{name}.yaml){hint}{avail}")
    return CompileError(f"bad configuration or override: {msg}")


_ONE_TASK = re.compile(r"^\+?task=([A-Za-z0-9_.-]+)$")
_TASK_KEY = re.compile(r"^(\+{0,2}|~)task\.([^.=]+)(.*)$", re.S)


def shorthand(overrides: list[str]) -> list[str]:
    """With a single ``+task=NAME``, ``task.KEY=V`` means ``task.NAME.KEY=V`` (e.g. ``task.path=tasks.jsonl``)."""
    names = [m.group(1) for o in overrides if (m := _ONE_TASK.match(o))]
    if len(names) != 1:
        return list(overrides)
    name = names[0]
    out = []
    for o in overrides:
        m = _TASK_KEY.match(o)
        if m and m.group(2) != name:
            o = f"{m.group(1)}task.{name}.{m.group(2)}{m.group(3)}"
        out.append(o)
    return out


_TASK_SELECT = re.compile(r"^\+task=(.+)$", re.S)
_NAME = re.compile(r"[A-Za-z0-9_.:-]+(@[A-Za-z0-9_+]+)?")  # NAME@FMT, NAME@FMT+LABELS+seedN
_RUN_TASKS = re.compile(r"^(\+{0,2})run\.tasks=(.*)$", re.S)


def catalog_names(overrides: list[str]) -> list[str]:
    """``+task=NAME`` / ``'+task=[a,b]'`` naming tasks that are not conf/task files but are in lm-eval's
    catalog (or ``lm_eval:NAME``) become ``run.tasks`` entries, so users spell them as they expect. Names
    found nowhere stay where they are (Hydra's error then suggests the close conf/task names)."""
    conf_names = set(_task_names("task"))
    out: list[str] = []
    moved: list[str] = []
    for o in overrides:
        m = _TASK_SELECT.match(o)
        if m:
            val = m.group(1).strip()
            inner = val[1:-1] if val.startswith("[") and val.endswith("]") else val
            items = [x.strip().strip("'\"") for x in inner.split(",") if x.strip()]
            if items and all(_NAME.fullmatch(x) for x in items) and any(x not in conf_names for x in items):
                from lmeval.compiler.tasks import QUALIFIER, catalog

                # NAME@FMT (compiler/formats) and GROUP::CHILD (lm-eval 0.5's paths): run.tasks entries whatever
                # NAME is (select_tasks formats it, walks the path)
                plain = [x for x in items if "@" not in x]
                cat = catalog() if any(x not in conf_names for x in plain) else None
                known = cat.index.entries if cat is not None else {}
                other = [
                    x
                    for x in items
                    if "@" in x or "::" in x or (x not in conf_names and (x.startswith(QUALIFIER) or x in known))
                ]
                if other and len(other) == len([x for x in items if x not in conf_names]):
                    moved += other
                    ours = [x for x in items if x in conf_names]
                    if ours:
                        out.append(f"+task=[{','.join(ours)}]")
                    continue
        out.append(o)
    if not moved:
        return out
    for i, o in enumerate(out):
        m2 = _RUN_TASKS.match(o)
        if m2:
            v = m2.group(2).strip()
            inner = v[1:-1] if v.startswith("[") and v.endswith("]") else v
            names = [x.strip() for x in inner.split(",") if x.strip()]
            out[i] = f"{m2.group(1)}run.tasks=[{','.join(names + moved)}]"
            return out
    return [*out, f"run.tasks=[{','.join(moved)}]"]


_CHECKED: dict[Path, tuple[int, int]] = {}


def check_conf_files(root: Path) -> None:
    """Every YAML under ``root`` within the input limits (``plans.limits``: a regular file, no alias
    bomb, 64-bit ints) before Hydra and OmegaConf, which expand aliases, read any of them."""
    from lmeval.compiler.tasks import load_yaml

    for path in sorted(root.glob("**/*.yaml")):
        try:
            st = path.stat()
        except OSError:
            continue
        if _CHECKED.get(path) != (st.st_mtime_ns, st.st_size):
            load_yaml(path)
            _CHECKED[path] = (st.st_mtime_ns, st.st_size)


def compose(overrides: list[str], memo: Path | None = None) -> dict[str, Any]:
    """The fully composed config (resolved, as plain data) for ``overrides``. ``memo``: the build cache's
    folder, where the composition is remembered (``compiler.cache.compose``; None: composed by Hydra)."""
    problem = override_problem(overrides)  # before Hydra, whose errors quote the override
    if problem:
        raise CompileError(problem)
    overrides = optional_run_keys(catalog_names(shorthand(overrides)))
    if memo is None:
        return _compose(overrides)
    from lmeval.compiler import cache as cc

    split = cc.split_slots(overrides)
    key = cc.compose_key(split[0], CONF_DIR) if split is not None else None
    if split is None or key is None:
        return _compose(overrides)
    memo_data = cc.load_composed(memo, key)
    data = cc.fill_slots(memo_data, split[1]) if memo_data is not None else None
    if data is None:
        data = _compose(overrides)
        blanked = cc.blank_slots(data, split[1])
        if blanked is not None:
            cc.store_composed(memo, key, blanked)
    return data


def _compose(overrides: list[str]) -> dict[str, Any]:
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import HydraException
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    check_conf_files(CONF_DIR)
    if GlobalHydra.instance().is_initialized():
        GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None, job_name="lmeval"):
            cfg = hydra_compose(config_name="config", overrides=list(overrides))
        data = OmegaConf.to_container(cfg, resolve=True)
    except (HydraException, OmegaConfBaseException) as e:
        raise _hydra_error(e, overrides) from None
    except ValueError as e:  # hydra's override grammar errors
        raise CompileError(f"bad override: {' '.join(str(e).split())}") from None
    assert isinstance(data, dict)
    run = data.get("run")
    if isinstance(run, dict) and "seed_mode" in run and run["seed_mode"] in (None, DEFAULT_SEED_MODE):
        del run["seed_mode"]  # the default is recorded by its absence: one plan for both spellings
    for key in (
        "reasoning",
        "chat_template_kwargs",
        "thinking_budget",
        "answer_budget",
        "subsample",
        "sample_scores",
        "format",
        "sweep",
    ):
        if isinstance(run, dict) and key in run and run[key] in (None, {}, 0, []):
            del run[key]  # unset is recorded by its absence (plans compiled before the keys existed)
    if isinstance(run, dict) and "subsample" in run:
        try:  # one spelling per meaning (a bad value is refused by run_config, naming its field)
            run["subsample"] = canonical_subsample(run["subsample"])
        except SubsampleError:
            pass
    if isinstance(run, dict) and "reasoning" in run:
        try:  # one spelling per meaning (a bad value is refused by run_config, naming its field)
            run["reasoning"] = canonical_reasoning(run["reasoning"])
        except ReasoningError:
            pass
    # what no plan can carry (plans.limits: 64-bit ints, ...), e.g. run.limit=99999999999999999999 or
    # task.arith.num_fewshot=...; named by its key
    for section, body in data.items():
        for key, value in body.items() if isinstance(body, dict) else [("", body)]:
            for sub, v in value.items() if section == "task" and isinstance(value, dict) else [("", value)]:
                beyond = value_problem(v)
                if beyond is not None:
                    raise fail(beyond[1], field=".".join(str(p) for p in (section, key, sub) if p))
    if secret_problem(data.get("model")):  # a conf/model YAML's key: the key is the user's, in the environment only
        raise CompileError(str(secret_problem(data.get("model"))))
    return data  # type: ignore[return-value]


def expand_sweep(overrides: list[str]) -> list[list[str]]:
    """One override list per combination of Hydra sweep values (``run.num_fewshot=0,5``, ``+task=a,b``)."""
    import itertools

    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    try:
        parsed = OverridesParser.create().parse_overrides(list(overrides))
    except HydraException as e:
        raise CompileError(f"bad override: {' '.join(str(e).split())}") from None
    axes: list[list[str]] = []
    for ov in parsed:
        if ov.is_sweep_override():
            key = ov.get_key_element()
            axes.append([f"{key}={v}" for v in ov.sweep_string_iterator()])
        else:
            axes.append([str(ov.input_line)])
    return [list(combo) for combo in itertools.product(*axes)]


def execute_model_overrides(overrides: list[str], config: dict[str, Any]) -> list[str]:
    """What ``lmeval run`` hands ``execute`` for the plan it just compiled from ``overrides``: the
    overrides that choose the model (the plan holds no locations, ``model.path`` among them), and
    ``model.trust_remote_code=true`` when this user's own settings (``config``, the plan's composed
    config) set it: execute never takes it from a plan, but this plan was made by the same command."""
    model = [o for o in overrides if o.lstrip("+").split("=", 1)[0].split(".", 1)[0] == "model"]
    cfg = config.get("model") or {}
    trusted = isinstance(cfg, dict) and cfg.get("trust_remote_code") is True
    return [*model, *(["model.trust_remote_code=true"] if trusted else [])]
