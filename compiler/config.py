"""Hydra composition of ``conf/`` (Compose API: no run directory, no cwd change) and the run options."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from lmeval.common import CONF_DIR
from lmeval.compiler.build import DEFAULT_SEED_MODE, BuildOptions, Seeds, fewshot_seed, parse_seed, parse_seed_mode
from lmeval.compiler.errors import CompileError, fail
from lmeval.compiler.formats import Sweep, parse_sweep
from lmeval.compiler.runchecks import bad as _bad
from lmeval.compiler.runchecks import budget_options, format_option, statistics_options, strict_option
from lmeval.compiler.runchecks import is_int as _int
from lmeval.plans import (
    Reasoning,
    ReasoningError,
    Subsample,
    SubsampleError,
    canonical_reasoning,
    canonical_subsample,
    override_problem,
    parse_reasoning,
    secret_problem,
    value_problem,
)

RUN_KEYS = (
    "num_fewshot", "limit", "fewshot_random_seed", "apply_chat_template", "fewshot_as_multiturn",
    "system_instruction", "data_dir", "include_path", "tasks", "out", "seed", "gen_kwargs", "seed_mode",
    "reasoning", "chat_template_kwargs", "thinking_budget", "answer_budget", "strict_fields", "subsample",
    "sample_scores", "format", "sweep",
)  # fmt: skip
# Run options conf/run/default.yaml leaves out, so that a plan compiled at their default carries exactly the
# config it carried before they existed (its plan hash does not move); ``run.KEY=V`` adds them all the same.
OPTIONAL_RUN_KEYS = (
    "seed_mode", "reasoning", "chat_template_kwargs", "thinking_budget", "answer_budget", "strict_fields",
    "subsample", "sample_scores", "format", "sweep",
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
        "reasoning", "chat_template_kwargs", "thinking_budget", "answer_budget", "subsample", "sample_scores", "format",
        "sweep",
    ):  # fmt: skip
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


@dataclass
class RunConfig:
    num_fewshot: int | None = None
    limit: int | float | None = None
    fewshot_random_seed: int | None = 1234
    apply_chat_template: bool = False
    fewshot_as_multiturn: bool | None = None
    system_instruction: str | None = None
    data_dir: str | None = None
    include_path: str | list[str] | None = None
    tasks: list[str] | None = None
    out: str | None = None
    gen_kwargs: dict[str, Any] | None = None
    seeds: Seeds = Seeds(None, None, None, 1234)  # run.seed (compiler/build/seeds.py)
    seed_mode: str = DEFAULT_SEED_MODE  # run.seed_mode (compiler/build/seeds.py)
    reasoning: Reasoning | None = None  # run.reasoning (plans/vocab/reasoning.py): scoring only
    chat_template_kwargs: dict[str, Any] | None = None  # run.chat_template_kwargs: into the chat template
    thinking_budget: int | None = None  # run.thinking_budget: tokens of reasoning at most (plans/vocab/budgets.py)
    answer_budget: int | None = None  # run.answer_budget: tokens after the end marker at most
    strict_fields: bool = False  # run.strict_fields: a field rendering None is an error (compiler/build/nullfields.py)
    subsample: Subsample | None = None  # run.subsample (plans/vocab/subsample.py): a seeded, stratified subset
    sample_scores: list[str] | None = None  # run.sample_scores (plans/vocab/samplescores.py): every repeat scored
    format: str | None = None  # run.format (compiler/formats): every multiple-choice task in this prompt format
    sweep: Sweep | None = None  # run.sweep (compiler/formats/sweep.py): the variants NAME@sweep compiles

    @property
    def sampler_seed(self) -> int | None:
        """The few-shot sampler's seed the run uses (``run.fewshot_random_seed`` or ``run.seed``'s slot)."""
        return fewshot_seed(self.seeds, self.fewshot_random_seed)

    def options(self) -> BuildOptions:
        """What building the tasks needs: the fields both hold, with the seeds resolved (compiler/build/seeds.py)."""
        same = {f.name: getattr(self, f.name) for f in fields(BuildOptions) if f.name in _RUN_FIELDS}
        return BuildOptions(
            **same,
            fewshot_random_seed=fewshot_seed(self.seeds, self.fewshot_random_seed),
            python_seed=self.seeds.python,
            numpy_seed=self.seeds.numpy,
            fewshot_as_multiturn=bool(self.fewshot_as_multiturn),
        )


_DERIVED = {"fewshot_random_seed", "python_seed", "numpy_seed", "fewshot_as_multiturn"}  # set by options()
_RUN_FIELDS = {f.name for f in fields(RunConfig)} - _DERIVED


def run_config(raw: dict[str, Any]) -> RunConfig:
    for key in raw:
        if key not in RUN_KEYS:
            close = difflib.get_close_matches(key, RUN_KEYS, n=3, cutoff=0.6)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            raise fail(f"unknown run option{hint}", field=f"run.{key}")
    r = RunConfig()
    nf = raw.get("num_fewshot")
    if nf is not None and (not _int(nf) or nf < 0):
        raise _bad("num_fewshot", "a non-negative integer", nf)
    r.num_fewshot = nf
    lim = raw.get("limit")
    if lim is not None:
        if _int(lim) and lim > 0:
            pass
        elif isinstance(lim, float) and 0.0 < lim < 1.0:
            pass
        else:
            raise _bad("limit", "a positive integer (or a fraction between 0 and 1)", lim)
    r.limit = lim
    seed = raw.get("fewshot_random_seed", 1234)
    if seed is not None and not _int(seed):
        raise _bad("fewshot_random_seed", "an integer", seed)
    r.fewshot_random_seed = seed
    act = raw.get("apply_chat_template", False)
    if not isinstance(act, bool):
        raise _bad("apply_chat_template", "true or false", act)
    r.apply_chat_template = act
    fam = raw.get("fewshot_as_multiturn")
    if fam is not None and not isinstance(fam, bool):
        raise _bad("fewshot_as_multiturn", "true, false or null", fam)
    if fam is None and act:
        fam = True
    elif fam is True and not act:
        raise fail("fewshot_as_multiturn=true needs run.apply_chat_template=true", field="run.fewshot_as_multiturn")
    r.fewshot_as_multiturn = fam
    for key in ("system_instruction", "data_dir", "out"):
        v = raw.get(key)
        if v is not None and not isinstance(v, str):
            if key == "system_instruction" and isinstance(v, int | float):
                v = str(v)
            else:
                raise _bad(key, "a string", v)
        setattr(r, key, v)
    if r.data_dir is not None and not Path(r.data_dir).expanduser().is_dir():
        raise fail(f"data directory {r.data_dir!r} does not exist", field="run.data_dir")
    ip = raw.get("include_path")
    if ip is not None and not (isinstance(ip, str) or (isinstance(ip, list) and all(isinstance(p, str) for p in ip))):
        raise _bad("include_path", "a directory (or a list of them)", ip)
    r.include_path = ip
    tasks = raw.get("tasks")
    if isinstance(tasks, str):
        tasks = [t.strip() for t in tasks.split(",") if t.strip()]
    if tasks is not None and not (isinstance(tasks, list) and all(isinstance(t, str) for t in tasks)):
        raise _bad("tasks", "a list of task names", tasks)
    r.tasks = tasks
    gk = raw.get("gen_kwargs")
    if gk is not None and not isinstance(gk, dict):
        raise _bad("gen_kwargs", "a mapping", gk)
    r.gen_kwargs = gk
    r.seeds = parse_seed(raw.get("seed"))
    r.seed_mode = parse_seed_mode(raw.get("seed_mode"))
    try:
        r.reasoning = parse_reasoning(raw.get("reasoning"))
    except ReasoningError as e:
        raise CompileError(str(e)) from None
    ctk = raw.get("chat_template_kwargs")
    if ctk is not None and not (isinstance(ctk, dict) and all(isinstance(k, str) for k in ctk)):
        raise _bad("chat_template_kwargs", "a mapping (e.g. {enable_thinking: false})", ctk)
    if ctk and not r.apply_chat_template:
        raise fail("needs run.apply_chat_template=true", field="run.chat_template_kwargs")
    r.chat_template_kwargs = ctk or None
    r.thinking_budget, r.answer_budget = budget_options(raw, r.reasoning)
    r.strict_fields = strict_option(raw)
    r.subsample, r.sample_scores = statistics_options(raw, r.limit)
    r.format = format_option(raw)
    r.sweep = parse_sweep(raw.get("sweep"))
    fewshot_seed(r.seeds, r.fewshot_random_seed)  # a conflict is refused here, before anything is read
    return r


def execute_model_overrides(overrides: list[str], config: dict[str, Any]) -> list[str]:
    """What ``lmeval run`` hands ``execute`` for the plan it just compiled from ``overrides``: the
    overrides that choose the model (the plan holds no locations, ``model.path`` among them), and
    ``model.trust_remote_code=true`` when this user's own settings (``config``, the plan's composed
    config) set it: execute never takes it from a plan, but this plan was made by the same command."""
    model = [o for o in overrides if o.lstrip("+").split("=", 1)[0].split(".", 1)[0] == "model"]
    cfg = config.get("model") or {}
    trusted = isinstance(cfg, dict) and cfg.get("trust_remote_code") is True
    return [*model, *(["model.trust_remote_code=true"] if trusted else [])]
