"""The run options (``run.*`` of the composed config, conf/run/): the keys (``RUN_KEYS``), their typed record
(``RunConfig``) and ``run_config``, which checks each one, naming its field: the seeds (compiler/build/seeds.py),
the budgets (plans/vocab/budgets.py), the statistics options (``run.subsample``, ``run.sample_scores``), the prompt
format and the sweep (compiler/formats). Hydra's composition of them is ``compiler/config.py``."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from lmeval.compiler.build import DEFAULT_SEED_MODE, BuildOptions, Seeds, fewshot_seed, parse_seed, parse_seed_mode
from lmeval.compiler.errors import CompileError, fail
from lmeval.compiler.formats import Sweep, parse_sweep
from lmeval.plans import (
    MAX_GEN_TOKS,
    Reasoning,
    ReasoningError,
    SampleScoresError,
    Subsample,
    SubsampleError,
    parse_reasoning,
    parse_sample_scores,
    parse_subsample,
)

RUN_KEYS = (
    "num_fewshot", "limit", "fewshot_random_seed", "apply_chat_template", "fewshot_as_multiturn",
    "system_instruction", "data_dir", "include_path", "tasks", "out", "seed", "gen_kwargs", "seed_mode",
    "reasoning", "chat_template_kwargs", "thinking_budget", "answer_budget", "strict_fields", "subsample",
    "sample_scores", "format", "sweep", "store",
)  # fmt: skip


def bad(key: str, want: str, got: Any) -> CompileError:
    return fail(f"must be {want}, got {got!r}", field=f"run.{key}")


def is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def statistics_options(raw: dict[str, Any], limit: int | float | None) -> tuple[Subsample | None, list[str] | None]:
    """``run.subsample`` (plans/vocab/subsample.py; not with ``run.limit``) and ``run.sample_scores``."""
    try:
        sub = parse_subsample(raw.get("subsample"))
        scores = parse_sample_scores(raw.get("sample_scores"), "run.sample_scores")
    except (SubsampleError, SampleScoresError) as e:
        raise CompileError(str(e)) from None
    if sub is not None and limit is not None:
        raise fail("run.limit takes the first documents; run.subsample a random subset: set one", field="run.subsample")
    return sub, scores


def budget_options(raw: dict[str, Any], reasoning: Reasoning | None) -> tuple[int | None, int | None]:
    """``run.thinking_budget`` and ``run.answer_budget`` (plans/vocab/budgets.py); 0 or null is none."""
    got: list[int | None] = []
    for key in ("thinking_budget", "answer_budget"):
        v = raw.get(key)
        if v is not None and (not is_int(v) or not 0 <= v <= MAX_GEN_TOKS):
            raise bad(key, f"a number of tokens (an integer in 0..{MAX_GEN_TOKS})", v)
        got.append(v or None)
    thinking, answer = got
    if answer and not thinking:
        raise fail(
            "needs run.thinking_budget (the answer budget counts from the end marker)", field="run.answer_budget"
        )
    if thinking and reasoning is None:
        raise fail("needs run.reasoning (its first end marker is the one forced)", field="run.thinking_budget")
    return thinking, answer


def format_option(raw: dict[str, Any]) -> str | None:
    """``run.format`` (compiler/formats): one of the prompt formats, OLMES' or lm-eval 0.5's, or None."""
    from lmeval.plans import LM_EVAL_05, OLMES, format_names, prompt_format

    fmt = raw.get("format")
    if fmt is not None and (not isinstance(fmt, str) or prompt_format(fmt) is None):
        olmes, lm_eval = ", ".join(format_names(OLMES)), ", ".join(format_names(LM_EVAL_05))
        raise bad("format", f"one of {olmes} (OLMES) or {lm_eval} (lm-eval 0.5)", fmt)
    return fmt if isinstance(fmt, str) else None


def strict_option(raw: dict[str, Any]) -> bool:
    """``run.strict_fields`` (compiler/build/nullfields.py): true or false."""
    strict = raw.get("strict_fields", False)
    if not isinstance(strict, bool):
        raise bad("strict_fields", "true or false", strict)
    return strict


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
    store: str | None = None  # run.store: the result store's folder or "off" (executor/ANSWERSTORE.md; a location)

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
    if nf is not None and (not is_int(nf) or nf < 0):
        raise bad("num_fewshot", "a non-negative integer", nf)
    r.num_fewshot = nf
    lim = raw.get("limit")
    if lim is not None:
        if is_int(lim) and lim > 0:
            pass
        elif isinstance(lim, float) and 0.0 < lim < 1.0:
            pass
        else:
            raise bad("limit", "a positive integer (or a fraction between 0 and 1)", lim)
    r.limit = lim
    seed = raw.get("fewshot_random_seed", 1234)
    if seed is not None and not is_int(seed):
        raise bad("fewshot_random_seed", "an integer", seed)
    r.fewshot_random_seed = seed
    act = raw.get("apply_chat_template", False)
    if not isinstance(act, bool):
        raise bad("apply_chat_template", "true or false", act)
    r.apply_chat_template = act
    fam = raw.get("fewshot_as_multiturn")
    if fam is not None and not isinstance(fam, bool):
        raise bad("fewshot_as_multiturn", "true, false or null", fam)
    if fam is None and act:
        fam = True
    elif fam is True and not act:
        raise fail("fewshot_as_multiturn=true needs run.apply_chat_template=true", field="run.fewshot_as_multiturn")
    r.fewshot_as_multiturn = fam
    for key in ("system_instruction", "data_dir", "out", "store"):
        v = raw.get(key)
        if key == "store" and v is False:  # YAML's off
            v = "off"
        if v is not None and not isinstance(v, str):
            if key == "system_instruction" and isinstance(v, int | float):
                v = str(v)
            else:
                raise bad(key, "a string", v)
        setattr(r, key, v)
    if r.data_dir is not None and not Path(r.data_dir).expanduser().is_dir():
        raise fail(f"data directory {r.data_dir!r} does not exist", field="run.data_dir")
    ip = raw.get("include_path")
    if ip is not None and not (isinstance(ip, str) or (isinstance(ip, list) and all(isinstance(p, str) for p in ip))):
        raise bad("include_path", "a directory (or a list of them)", ip)
    r.include_path = ip
    tasks = raw.get("tasks")
    if isinstance(tasks, str):
        tasks = [t.strip() for t in tasks.split(",") if t.strip()]
    if tasks is not None and not (isinstance(tasks, list) and all(isinstance(t, str) for t in tasks)):
        raise bad("tasks", "a list of task names", tasks)
    r.tasks = tasks
    gk = raw.get("gen_kwargs")
    if gk is not None and not isinstance(gk, dict):
        raise bad("gen_kwargs", "a mapping", gk)
    r.gen_kwargs = gk
    r.seeds = parse_seed(raw.get("seed"))
    r.seed_mode = parse_seed_mode(raw.get("seed_mode"))
    try:
        r.reasoning = parse_reasoning(raw.get("reasoning"))
    except ReasoningError as e:
        raise CompileError(str(e)) from None
    ctk = raw.get("chat_template_kwargs")
    if ctk is not None and not (isinstance(ctk, dict) and all(isinstance(k, str) for k in ctk)):
        raise bad("chat_template_kwargs", "a mapping (e.g. {enable_thinking: false})", ctk)
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
