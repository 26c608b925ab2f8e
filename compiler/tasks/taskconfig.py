"""A task config resolved with lm-eval 0.4.13's TaskConfig / FewshotConfig defaults and checked.

Input: a plain dict (from an lm-eval YAML or a Hydra ``conf/task`` entry) whose functions are
``FunctionRef``s. Output: ``TaskConfig``, every field typed and defaulted the way lm-eval does it.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

from lmeval.compiler.errors import CompileError, fail
from lmeval.compiler.tasks.conversation import conversation_fields
from lmeval.compiler.tasks.functions import FunctionRef
from lmeval.plans import DEFAULT_METRICS as DEFAULT_METRICS  # the contract's (the scorer implements these)
from lmeval.plans import (
    JUDGED_BY,
    MAX_REPEATS,
    OUTPUT_TYPES,
    SampleScoresError,
    check_repeats,
    judged_by_problem,
    parse_sample_scores,
)

SAMPLERS = ("default", "first_n")
DEFAULT_MAX_GEN_TOKS = 256

TASK_FIELDS = (
    "task", "task_alias", "tag", "custom_dataset", "dataset_path", "dataset_name", "dataset_kwargs",
    "training_split", "validation_split", "test_split", "fewshot_split", "process_docs", "doc_to_text",
    "doc_to_target", "doc_to_image", "doc_to_audio", "unsafe_code", "doc_to_choice", "process_results",
    "use_prompt", "description", "target_delimiter", "fewshot_delimiter", "fewshot_config", "num_fewshot",
    "metric_list", "output_type", "generation_kwargs", "repeats", "filter_list", "should_decontaminate",
    "doc_to_decontamination_query", "gen_prefix", "metadata", "sample_scores", "format", "turns_field",
    "multiple_inputs",  # lm-eval 0.5 (#55): doc_to_text gives the contexts, doc_to_choice the one continuation
    "doc_to_messages", "doc_to_tools", "tool_parser", "doc_join",
    "judged_by",  # #62: a judge-graded task names its judges (plans/vocab/judging.py; `lmeval run ... judge=MODEL`)
    "doc_generation_kwargs",  # #62: true: a document's own "generation_kwargs" field wins (mt_bench_fastchat)
)  # fmt: skip
FEWSHOT_FIELDS = (
    "sampler", "split", "process_docs", "fewshot_indices", "samples", "doc_to_text", "doc_to_choice",
    "doc_to_target", "gen_prefix", "fewshot_delimiter", "target_delimiter",
)  # fmt: skip
# keys lm-eval's loader strips before building a task
_STRUCTURAL = ("group", "task_list", "include")

Field = str | int | list | dict | FunctionRef | None


@dataclass
class FewshotConfig:
    sampler: str = "default"
    split: str | None = None
    process_docs: FunctionRef | None = None
    fewshot_indices: list[int] | None = None
    samples: list[dict[str, Any]] | FunctionRef | None = None
    doc_to_text: Field = None
    doc_to_choice: Field = None
    doc_to_target: Field = None
    gen_prefix: str | None = None
    fewshot_delimiter: str = "\n\n"
    target_delimiter: str = " "


@dataclass
class TaskConfig:
    name: str
    source: str | None  # the YAML file it came from (for error messages)
    raw: dict[str, Any]  # the merged config as written (functions as FunctionRef)
    output_type: str = "generate_until"
    task_alias: str | None = None
    tag: Any = None
    custom_dataset: FunctionRef | None = None
    dataset_path: str | None = None
    dataset_name: str | None = None
    dataset_kwargs: dict[str, Any] | None = None
    training_split: str | None = None
    validation_split: str | None = None
    test_split: str | None = None
    fewshot_split: str | None = None
    process_docs: FunctionRef | None = None
    doc_to_text: Field = None
    doc_to_target: Field = None
    doc_to_choice: Field = None
    doc_to_image: Field = None  # images shown with the prompt (compiler/build/images.py, plans/plan/media.py)
    process_results: FunctionRef | str | None = None
    description: str = ""
    target_delimiter: str = " "
    fewshot_delimiter: str = "\n\n"
    fewshot: FewshotConfig = field(default_factory=FewshotConfig)
    num_fewshot: int | None = None
    metric_list: list[dict[str, Any]] | None = None
    generation_kwargs: dict[str, Any] | None = None
    repeats: int = 1
    sample_scores: list[str] | None = None  # every repeat scored (plans/vocab/samplescores.py)
    filter_list: list[dict[str, Any]] | None = None
    gen_prefix: str | None = None
    metadata: dict[str, Any] | None = None
    groups: list[str] = field(default_factory=list)
    preloaded: dict[str, list[dict[str, Any]]] | None = None  # split -> docs (JSONL task specs)
    per_doc_generation_kwargs: bool = False  # a doc's own "generation_kwargs" wins (JSONL task specs)
    # lm-eval 0.5's multiple-input contract (#55): doc_to_text -> the contexts, doc_to_choice -> [the one
    # continuation], doc_to_target -> the gold context's index (0.4's: index, contexts, continuation)
    multiple_inputs: bool = False
    # lmeval's conversation fields (compiler/tasks/conversation.py): a doc field holding the chat messages, one
    # holding the tools (JSON schemas), the reply parser's name, a split joined into each document
    doc_to_messages: str | None = None
    doc_to_tools: str | None = None
    tool_parser: str | None = None
    doc_join: dict[str, str] | None = None

    @property
    def version(self) -> Any:
        return (self.metadata or {}).get("version")


def _suggest(name: str, options: tuple[str, ...] | list[str]) -> str:
    close = difflib.get_close_matches(name, list(options), n=3, cutoff=0.6)
    return f" (did you mean {', '.join(close)}?)" if close else ""


def _check_str(value: Any, key: str, name: str, source: str | None, optional: bool = True) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise fail(f"must be a string, got {type(value).__name__} {value!r}", file=source, task=name, field=key)
    return value


def build_task_config(cfg: dict[str, Any], source: str | None, default_name: str | None = None) -> TaskConfig:
    """A ``TaskConfig`` from a task's YAML mapping, every field checked (one-line ``CompileError`` naming
    file, task and field), lm-eval's defaults filled in."""
    cfg = {k: v for k, v in cfg.items() if k not in _STRUCTURAL}
    name = cfg.get("task", default_name)
    if not isinstance(name, str) or not name:
        raise fail("a task config needs a 'task' name (a string)", file=source, field="task")
    for key in cfg:
        if key not in TASK_FIELDS:
            raise fail(f"unknown task config field{_suggest(key, TASK_FIELDS)}", file=source, task=name, field=key)
    for key in ("doc_to_audio", "use_prompt"):
        if cfg.get(key) is not None:
            raise fail("is not supported by lmeval (text and image tasks)", file=source, task=name, field=key)
    output_type = cfg.get("output_type", "generate_until")
    if output_type not in OUTPUT_TYPES:
        raise fail(
            f"unknown output_type {output_type!r}{_suggest(str(output_type), OUTPUT_TYPES)}; "
            f"expected one of {', '.join(OUTPUT_TYPES)}",
            file=source,
            task=name,
            field="output_type",
        )
    s = TaskConfig(name=name, source=source, raw=dict(cfg), output_type=output_type)
    mi = cfg.get("multiple_inputs", False)
    if not isinstance(mi, bool):
        raise _bad(s, f"must be true or false, got {mi!r}", "multiple_inputs")
    if mi and output_type != "multiple_choice":
        raise _bad(
            s, f"multiple inputs apply to multiple_choice tasks (this one is {output_type!r})", "multiple_inputs"
        )
    s.multiple_inputs = mi
    dgk = cfg.get("doc_generation_kwargs", False)
    if not isinstance(dgk, bool):
        raise _bad(s, f"must be true or false, got {dgk!r}", "doc_generation_kwargs")
    s.per_doc_generation_kwargs = dgk
    _strings(s, cfg)
    conversation_fields(s, cfg)
    _documents(s, cfg)
    _counts(s, cfg)
    _scoring_lists(s, cfg)
    s.generation_kwargs = _generation_kwargs(s, cfg)
    s.fewshot = _fewshot(s, cfg)
    return s


def _bad(s: TaskConfig, message: str, field: str) -> CompileError:
    return fail(message, file=s.source, task=s.name, field=field)


def _strings(s: TaskConfig, cfg: dict[str, Any]) -> None:
    """Names, splits, delimiters and prefixes: strings (``dataset_name`` may be a number)."""
    name, source = s.name, s.source
    splits = ("training_split", "validation_split", "test_split", "fewshot_split")
    for key in ("task_alias", "dataset_path", "dataset_name", *splits):
        val = cfg.get(key)
        if val is not None and not isinstance(val, str):
            val = str(val) if isinstance(val, int | float) and key == "dataset_name" else val
        setattr(s, key, _check_str(val, key, name, source))
    s.tag = cfg.get("tag")
    for key in ("description", "target_delimiter", "fewshot_delimiter"):
        if key in cfg:
            val = cfg[key]
            if val is None:
                val = ""
            if not isinstance(val, str):
                raise _bad(s, f"must be a string, got {type(val).__name__}", key)
            setattr(s, key, val)
    s.gen_prefix = _check_str(cfg.get("gen_prefix"), "gen_prefix", name, source)


def _documents(s: TaskConfig, cfg: dict[str, Any]) -> None:
    """Where the documents come from and how a document becomes a prompt, target and choices."""
    for key in ("custom_dataset", "process_docs"):
        val = cfg.get(key)
        if val is not None and not isinstance(val, FunctionRef):
            raise _bad(s, "must be a '!function module.fn' reference", key)
        setattr(s, key, val)
    for key in ("doc_to_text", "doc_to_target", "doc_to_choice"):
        val = cfg.get(key)
        if val is not None and not isinstance(val, str | int | list | dict | FunctionRef) or isinstance(val, bool):
            raise _bad(s, f"must be a field name, a Jinja template or '!function', got {type(val).__name__}", key)
        setattr(s, key, val)
    img = cfg.get("doc_to_image")
    if img is not None and not (
        isinstance(img, str | FunctionRef) or (isinstance(img, list) and all(isinstance(x, str) for x in img))
    ):
        raise _bad(
            s,
            f"must be a field name, a list of them, a template or '!function', got {type(img).__name__}",
            "doc_to_image",
        )
    s.doc_to_image = img
    if s.doc_to_text is None and s.doc_to_messages is None:
        raise _bad(s, "missing (every task needs doc_to_text)", "doc_to_text")
    steps = s.doc_to_messages is not None and s.output_type == "loglikelihood"  # the reply is the last message
    if s.doc_to_target is None and s.output_type != "loglikelihood_rolling" and not steps:
        raise _bad(s, "missing (every task needs doc_to_target)", "doc_to_target")
    if s.output_type == "multiple_choice" and s.doc_to_choice is None:
        raise _bad(s, "missing: multiple_choice tasks need doc_to_choice", "doc_to_choice")
    s.process_results = cfg.get("process_results")
    s.dataset_kwargs = cfg.get("dataset_kwargs")
    if s.dataset_kwargs is not None and not isinstance(s.dataset_kwargs, dict):
        raise _bad(s, "must be a mapping", "dataset_kwargs")
    if s.custom_dataset is None and s.dataset_path is None:
        raise _bad(s, "missing: a task needs dataset_path (or custom_dataset)", "dataset_path")
    if s.test_split is None and s.validation_split is None:
        raise _bad(s, "a task needs test_split or validation_split to evaluate on", "test_split")


def _counts(s: TaskConfig, cfg: dict[str, Any]) -> None:
    nf = cfg.get("num_fewshot")
    if nf is not None and (not isinstance(nf, int) or isinstance(nf, bool) or nf < 0):
        raise _bad(s, f"must be a non-negative integer, got {nf!r}", "num_fewshot")
    s.num_fewshot = nf
    rep = cfg.get("repeats", 1)
    if not isinstance(rep, int) or isinstance(rep, bool) or not 1 <= rep <= MAX_REPEATS:
        raise _bad(s, f"must be an integer in 1..{MAX_REPEATS}, got {rep!r}", "repeats")
    s.repeats = rep
    try:
        s.sample_scores = parse_sample_scores(cfg.get("sample_scores"), "sample_scores")
        if s.sample_scores is not None:
            check_repeats(s.sample_scores, rep, "sample_scores")
    except SampleScoresError as e:
        raise fail(str(e).split(": ", 1)[1], file=s.source, task=s.name, field="sample_scores") from None
    if s.sample_scores is not None and s.output_type != "generate_until":
        raise _bad(s, f"scores the repeats of generations; this task's output_type is {s.output_type}", "sample_scores")
    turns = cfg.get("turns_field")  # a multi-turn task (plans/plan/chain.py): the document field of its user turns
    if turns is not None:
        if not isinstance(turns, str) or not turns:
            raise _bad(s, f"must name a document field (a string), got {turns!r}", "turns_field")
        if s.output_type != "generate_until":
            raise _bad(s, f"a multi-turn task generates; this task's output_type is {s.output_type}", "turns_field")
        if rep != 1:
            raise _bad(s, f"a multi-turn task answers each turn once; repeats is {rep}", "turns_field")
    judged = cfg.get(JUDGED_BY)
    if judged is not None:
        problem = judged_by_problem(judged)
        if problem is not None:
            raise _bad(s, problem, JUDGED_BY)
        if s.output_type != "generate_until":
            raise _bad(s, f"a judge grades generations; this task's output_type is {s.output_type}", JUDGED_BY)


def _scoring_lists(s: TaskConfig, cfg: dict[str, Any]) -> None:
    ml = cfg.get("metric_list")
    if ml is not None:
        if not isinstance(ml, list) or not all(isinstance(m, dict) and "metric" in m for m in ml):
            raise _bad(s, "must be a list of mappings, each with a 'metric' key", "metric_list")
    s.metric_list = ml
    fl = cfg.get("filter_list")
    if fl is not None:
        if not isinstance(fl, list) or not all(isinstance(f, dict) and "name" in f and "filter" in f for f in fl):
            raise _bad(s, "must be a list of mappings with 'name' and 'filter'", "filter_list")
    s.filter_list = fl
    md = cfg.get("metadata")
    s.metadata = md if isinstance(md, dict) else ({"_metadata": md} if md is not None else None)


def _generation_kwargs(s: TaskConfig, cfg: dict[str, Any]) -> dict[str, Any] | None:
    """The task's generation kwargs (temperature a float, ``until`` the few-shot delimiter by default);
    lm-eval's greedy defaults for a generate_until task without any."""
    gk = cfg.get("generation_kwargs")
    if gk is None:
        if s.output_type != "generate_until":
            return None
        return {
            "temperature": 0.0,
            "do_sample": False,
            "max_gen_toks": DEFAULT_MAX_GEN_TOKS,
            "until": [s.fewshot_delimiter],
        }
    if not isinstance(gk, dict):
        raise _bad(s, "must be a mapping", "generation_kwargs")
    gk = dict(gk)
    if "temperature" in gk:
        try:
            gk["temperature"] = float(gk["temperature"])
        except (TypeError, ValueError):
            raise _bad(s, f"temperature must be a number, got {gk['temperature']!r}", "generation_kwargs") from None
    if "until" not in gk:
        gk["until"] = [s.fewshot_delimiter]
    return gk


def _fewshot(s: TaskConfig, cfg: dict[str, Any]) -> FewshotConfig:
    """``fewshot_config`` over the task's own fields (split, delimiters, doc_to_*), checked."""
    fc = cfg.get("fewshot_config") or {}
    if not isinstance(fc, dict):
        raise _bad(s, "must be a mapping", "fewshot_config")
    for key in fc:
        if key not in FEWSHOT_FIELDS:
            raise _bad(s, f"unknown fewshot_config field{_suggest(key, FEWSHOT_FIELDS)}", f"fewshot_config.{key}")
    merged: dict[str, Any] = {
        "split": s.fewshot_split,
        "process_docs": s.process_docs,
        "fewshot_delimiter": s.fewshot_delimiter,
        "target_delimiter": s.target_delimiter,
        "gen_prefix": s.gen_prefix,
        "doc_to_text": s.doc_to_text,
        "doc_to_choice": s.doc_to_choice,
        "doc_to_target": s.doc_to_target,
        **fc,
    }
    merged.setdefault("sampler", "default")
    sampler = merged["sampler"]
    if sampler not in SAMPLERS:
        raise _bad(
            s,
            f"unknown sampler {sampler!r}{_suggest(str(sampler), SAMPLERS)}; expected one of {', '.join(SAMPLERS)}",
            "fewshot_config.sampler",
        )
    samples = merged.get("samples")
    if samples is not None and not (
        isinstance(samples, FunctionRef) or (isinstance(samples, list) and all(isinstance(x, dict) for x in samples))
    ):
        raise _bad(s, "must be a list of documents or a '!function'", "fewshot_config.samples")
    idx = merged.get("fewshot_indices")
    if idx is not None and not (isinstance(idx, list) and all(isinstance(i, int) for i in idx)):
        raise _bad(s, "must be a list of integers", "fewshot_config.fewshot_indices")
    for key in ("fewshot_delimiter", "target_delimiter"):
        if merged[key] is None:
            merged[key] = s.fewshot_delimiter if key == "fewshot_delimiter" else s.target_delimiter
        if not isinstance(merged[key], str):
            raise _bad(s, "must be a string", f"fewshot_config.{key}")
    return FewshotConfig(**merged)
