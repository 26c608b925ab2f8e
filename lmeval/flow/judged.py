"""``lmeval run``'s judge path (#62): a judge-graded task (task config ``judged_by``) is graded in the same command
when the user names a judge (``judge=MODEL``, a conf/model entry, and/or ``judge.KEY=VALUE``): per stage, the
task's judge for that turn is compiled over the stage's answers (``compiler.compile_judge``), executed beside the
stage (``ROOT/turnK.judge-NAME-HASH12/``), and graded into the stage's folder (``lmeval.flow.grading``); then
FastChat's summary (``scorer.single_summary``: turn means, the pooled overall, the category means) is written into
the last stage's results.json as the task's metrics (``turn1,judge``, ``overall,judge``, ...). Without a judge the
task's stand-in metrics are not shown, and one line says how to grade it."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lmeval.plans import JudgedBy, UserError, judged_by

# ``judge.KEY=VALUE`` with KEY a conf/model key sets the judge model's KEY; any other KEY is a judge config key
# (``judge.generation.max_gen_toks=64``, ``judge.limit=5``)
MODEL_KEYS = frozenset({
    "name", "path", "revision", "gguf_file", "package", "backend", "dtype", "max_model_len", "tensor_parallel_size",
    "add_bos_token", "prefix_token_id", "trust_remote_code", "engine", "batch_size",
})  # fmt: skip


@dataclass(frozen=True)
class JudgeChoice:
    """The judge a ``run`` command names: judge config overrides (``model=NAME``, ``model.KEY=V``, other keys) and
    what ``execute`` needs to find the judge model (``model=NAME``, ``model.KEY=V``)."""

    config: list[str]
    execute: list[str]


@dataclass(frozen=True)
class RunStage:
    turn: int
    plan: str
    results: str


def split_judge(overrides: Sequence[str]) -> tuple[list[str], JudgeChoice | None]:
    """The run's overrides without ``judge=``/``judge.*`` (they choose no config group of the plan), and the judge
    they name (None when none: no ``judge=`` and no ``judge.KEY`` of the model)."""
    rest: list[str] = []
    config: list[str] = []
    model: list[str] = []
    named = False
    for o in overrides:
        key, eq, value = o.lstrip("+").partition("=")
        if key == "judge" and eq:
            named = True
            model.insert(0, f"model={value}")
        elif key.startswith("judge.") and eq:
            sub = key[len("judge.") :]
            if sub.split(".", 1)[0] in MODEL_KEYS:
                model.append(f"model.{sub}={value}")
            else:
                config.append(f"{sub}={value}")
        else:
            rest.append(o)
    if not named and not model:
        if config:
            raise UserError(f"{config[0]!r}: a judge setting without a judge: add judge=MODEL (a conf/model entry) "
                            "or judge.path=DIR")  # fmt: skip
        return rest, None
    if not named:  # judge.path=DIR / judge.backend=... alone: a model of the defaults (conf/model/tiny.yaml's keys)
        model.insert(0, "model=tiny")
    return rest, JudgeChoice(config=[*model, *config], execute=model)


def graded_tasks(header: Any) -> dict[str, JudgedBy]:
    """The plan's judge-graded tasks: task -> its judges (``judged_by``)."""
    return {t.name: jb for t in header.tasks if (jb := judged_by(t.config)) is not None}


def how_to_grade(task: str, by: JudgedBy, first_stage: str) -> str:
    """The one line a run without a judge prints for a judge-graded task."""
    return (f"{task}: graded by a judge ({', '.join(by.judges)}), not scored by this run: add judge=MODEL (a "
            f"conf/model entry, or judge.path=DIR / judge.backend=openai-chat) to grade it here, or `lmeval judge "
            f"{first_stage} --judge {by.judges[0]} model=MODEL` per turn (docs/how-to/judges.md)")  # fmt: skip


def judge_view(run: Any, graded: set[str] | dict[str, Any], only: bool = False) -> Any:
    """A scored run as the console shows it: a judge-graded task keeps only its judge summary (``METRIC,judge``),
    never the stand-in metrics a task scores without its judge (exact match against a reference answer);
    ``only``: the judge-graded tasks alone (the summary table; the other tasks were shown with their stage). A
    judge-graded task without its summary yet is left out: the run says in one line how to grade it."""
    from lmeval.scorer import SUMMARY_FILTER

    keep = ("alias", "name", "sample_len", "sample_count")

    def only_summary(m: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in m.items() if k in keep or k.partition(",")[2] == SUMMARY_FILTER}

    results = {t: (only_summary(m) if t in graded else m) for t, m in run.results.items() if t in graded or not only}
    # a judge-graded task not graded yet has no row at all (its N/A flag would repeat the run's how-to-grade line)
    results = {t: m for t, m in results.items() if t not in graded or set(m) - set(keep)}
    iv = run.intervals
    if iv is not None:
        iv = dataclasses.replace(iv, metrics={t: m for t, m in iv.metrics.items() if t not in graded and not only})
    return dataclasses.replace(run, results=results, intervals=iv, **({"groups": {}} if only else {}))


def judge_stages(
    stages: Sequence[RunStage], graded: dict[str, JudgedBy], choice: JudgeChoice, *, progress: bool, verbose: bool,
    part_size: int | None,
) -> list[str]:  # fmt: skip
    """Every stage graded by its turn's judges, then each task's FastChat summary into its last graded stage's
    results.json; returns those results folders (one table each)."""
    from lmeval.plans import add_metrics
    from lmeval.scorer import single_summary

    grades: dict[str, list[dict[int, Any]]] = {t: [] for t in graded}
    last: dict[str, str] = {}
    for stage in stages:
        for name, tasks in _judges_of(stage, graded).items():
            for tg in _judge_one(stage, name, tasks, choice, progress=progress, verbose=verbose, part_size=part_size):
                grades[tg.task].append(dict(tg.grades))
                last[tg.task] = stage.results
    out: list[str] = []
    for task, by in graded.items():
        if task not in last:
            continue
        cats = _categories(stages[0].plan, task, by.category_field)
        summary = single_summary(grades[task], cats)
        hib = {m.split(",")[0]: True for m in summary.metrics() if "_stderr," not in m and not m.startswith("graded,")}
        hib["unparsed"] = False
        add_metrics(last[task], {task: summary.metrics()}, hib)
        out += [] if last[task] in out else [last[task]]
    return out


def check_judges(graded: dict[str, JudgedBy], choice: JudgeChoice) -> None:
    """Before any model runs: every judge the graded tasks name loads with the chosen judge model (a missing judge
    or model entry, a bad override: one line), and grades single answers (pairwise needs a baseline)."""
    from lmeval.compiler import load_judge_config

    for task, by in graded.items():
        for name in by.judges:
            cfg = load_judge_config(name, choice.config)
            if cfg.mode != "single":
                raise UserError(f"task {task}: judge {name} is {cfg.mode}: it needs a baseline's answers, which "
                                f"`lmeval run` has none of; use `lmeval judge RUN --judge {name} --against "
                                "OTHER`")  # fmt: skip


def _judges_of(stage: RunStage, graded: dict[str, JudgedBy]) -> dict[str, list[str]]:
    """Judge name -> the stage's tasks it grades (the K-th judge of each graded task the stage holds)."""
    from lmeval.plans import read_header

    held = {t.name for t in read_header(stage.plan).tasks}
    out: dict[str, list[str]] = {}
    for task, by in graded.items():
        if task in held and stage.turn <= len(by.judges):
            out.setdefault(by.judges[stage.turn - 1], []).append(task)
    return out


def _judge_one(
    stage: RunStage, name: str, tasks: list[str], choice: JudgeChoice, *, progress: bool, verbose: bool,
    part_size: int | None,
) -> list[Any]:  # fmt: skip
    import sys

    from lmeval import executor
    from lmeval.compiler import compile_judge, load_judge_config, read_judged
    from lmeval.flow.grading import grade_into

    cfg = dataclasses.replace(load_judge_config(name, choice.config), tasks=tasks)
    compiled = compile_judge(cfg, read_judged(stage.results, stage.plan, cfg.tasks, cfg.limit))
    h = compiled.header
    results = Path(stage.results)
    where = results.parent / f"{results.name}.judge-{name}-{h.plan_hash[:12]}"
    plan = compiled.write(str(where.parent / f"{where.name}.msgpack"))
    print(f"turn {stage.turn}: judge {name} plan {h.plan_hash[:12]} -> {where}", file=sys.stderr)
    executor.execute(str(plan), out=str(where), overrides=choice.execute, progress=progress, verbose=verbose,
                     part_size=part_size)  # fmt: skip
    graded, lines = grade_into(str(where), stage.results, plan=str(plan), judged_plan=stage.plan)
    for line in lines:
        print(f"turn {stage.turn}: {line}", file=sys.stderr)
    return graded


def _categories(plan: str, task: str, field: str | None) -> dict[int, str] | None:
    if field is None:
        return None
    from lmeval.plans import read_plan

    return {d.doc_id: str(d.doc.get(field)) for d in read_plan(plan).docs if d.task == task and isinstance(d.doc, dict)}
