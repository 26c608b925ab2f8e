"""Compare our plans' Instances with lm-eval's, field for field, byte for byte.

Two routes build our side: (a) our own ``conf/task`` configs (``+task=NAME``), (b) lm-eval's own YAMLs
compiled through ``run.include_path=<lm_eval/tasks/DIR>`` + ``run.tasks=[NAME]``. Both are compared with the
same lm-eval reference (``lmeval_reference``), which drives the real lm-eval 0.4.13 in a subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tests.parity.lmeval_reference import (
    TASK_DIRS,
    RefResult,
    RefSpec,
    default_data_dir,
    lmeval_tasks_root,
    reference_instances,
)

REPO = Path(__file__).resolve().parents[2]
FIELDS = ("request_type", "context", "continuation", "generation_kwargs", "repeats")
ROUTES = ("conf", "lmeval_yaml")

MMLU_SUBJECTS = (
    "abstract_algebra",
    "anatomy",
    "high_school_european_history",
    "machine_learning",
    "world_religions",
)


@dataclass(frozen=True)
class Case:
    """One parity comparison: a reference spec, plus how our config names it (route a) when that differs."""

    ref: RefSpec
    conf_task: str | None = None  # our conf/task name (route a, `+task=`); default: ref.task
    conf_select: tuple[str, ...] = ()  # route a: select these members of a conf group (`run.tasks=[...]`)
    group_filter: tuple[str, ...] = ()  # compare only these tasks of what the conf task compiles
    routes: tuple[str, ...] = ROUTES
    note: str = ""

    @property
    def name(self) -> str:
        return self.ref.label()


def parity_cases(limit: int | None, model_path: str | None) -> list[Case]:
    """The acceptance set: arc_challenge 0/25-shot, arc_easy, gsm8k 5-shot, gsm8k_cot_llama (chat, multiturn),
    asdiv, mmlu (5 subjects, 5-shot), winogrande 5-shot, boolq; plus a single-turn chat case with a system
    instruction (the chat-template delimiter rule on a multiple-choice task), a non-default few-shot seed, and
    the whole mmlu group (57 subjects)."""
    cases = [
        Case(RefSpec("arc_challenge", num_fewshot=0, limit=limit)),
        Case(RefSpec("arc_challenge", num_fewshot=25, limit=limit)),
        Case(RefSpec("arc_easy", limit=limit)),
        Case(RefSpec("gsm8k", num_fewshot=5, limit=limit)),
        Case(
            RefSpec(
                "gsm8k_cot_llama",
                apply_chat_template=True,
                fewshot_as_multiturn=True,
                limit=limit,
                model_path=model_path,
            )
        ),
        Case(RefSpec("asdiv", limit=limit)),
        Case(
            RefSpec(
                "asdiv_cot_llama",
                apply_chat_template=True,
                fewshot_as_multiturn=True,
                limit=limit,
                model_path=model_path,
            )
        ),
        Case(RefSpec("piqa", limit=limit)),
    ]
    cases += [
        Case(RefSpec(f"mmlu_{s}", num_fewshot=5, limit=limit), conf_select=(f"mmlu_{s}",), group_filter=(f"mmlu_{s}",))
        for s in MMLU_SUBJECTS
    ]
    cases += [
        Case(RefSpec("winogrande", num_fewshot=5, limit=limit)),
        # lm-eval's boolq YAML (super_glue) reads the field `label`, absent from this google/boolq-schema data:
        # lm-eval renders the target as the literal text "label" (unscorable) and carries on; our compiler
        # rejects it (target not among the choices). So only route (a) is comparable.
        Case(
            RefSpec("boolq", limit=limit),
            routes=("conf",),
            note="route b n/a: lm-eval's YAML needs SuperGLUE `label`; data has google/boolq `answer`",
        ),
        Case(
            RefSpec(
                "arc_easy",
                num_fewshot=3,
                apply_chat_template=True,
                fewshot_as_multiturn=False,
                system_instruction="You are a careful science tutor.",
                limit=limit,
                model_path=model_path,
            )
        ),
    ]
    cases += [
        # a non-default few-shot seed moves the random sampler's picks
        Case(RefSpec("arc_challenge", num_fewshot=5, fewshot_seed=42, limit=limit)),
        # the whole mmlu group (57 subjects, lm-eval's group expansion); full runs only
        Case(RefSpec("mmlu", num_fewshot=5, limit=limit)),
    ]
    return cases


def ci_cases(model_path: str | None, limit: int = 40) -> list[Case]:
    """A subset that runs in about a minute: every feature of the full set, ``limit`` docs each."""
    keep = {
        "arc_challenge/25shot",
        "gsm8k/5shot",
        "gsm8k_cot_llama/chat-multiturn",
        "asdiv",
        "asdiv_cot_llama/chat-multiturn",
        "piqa",
        "mmlu_anatomy/5shot",
        "mmlu_high_school_european_history/5shot",
        "winogrande/5shot",
        "boolq",
        "arc_easy/3shot/chat-singleturn/sys",
        "arc_challenge/5shot/seed42",
    }
    return [c for c in parity_cases(limit, model_path) if c.name.rsplit("/limit", 1)[0] in keep]


# ------------------------------------------------------------------------------------------ our side


def overrides_for(case: Case, route: str, data_dir: Path) -> list[str]:
    spec = case.ref
    ov: list[str] = []
    if route == "conf" and case.conf_select:
        ov.append(f"run.tasks=[{','.join(case.conf_select)}]")
    elif route == "conf":
        ov.append(f"+task={case.conf_task or spec.task}")
    elif route == "lmeval_yaml":
        key = "mmlu" if spec.task.startswith("mmlu") else spec.task
        dirs = TASK_DIRS[key]
        inc = (
            str(lmeval_tasks_root() / dirs[0])
            if len(dirs) == 1
            else "[" + ",".join(str(lmeval_tasks_root() / d) for d in dirs) + "]"
        )
        ov += [f"run.include_path={inc}", f"run.tasks=[{spec.task}]"]
    else:
        raise ValueError(route)
    ov.append(f"run.data_dir={data_dir}")
    if spec.num_fewshot is not None:
        ov.append(f"run.num_fewshot={spec.num_fewshot}")
    if spec.limit is not None:
        ov.append(f"run.limit={spec.limit}")
    if spec.fewshot_seed != 1234:
        ov.append(f"run.fewshot_random_seed={spec.fewshot_seed}")
    if spec.apply_chat_template:
        ov += [
            "model=tiny",
            "run.apply_chat_template=true",
            f"run.fewshot_as_multiturn={'true' if spec.resolved_multiturn() else 'false'}",
        ]
    if spec.system_instruction is not None:
        ov.append(f"run.system_instruction={json.dumps(spec.system_instruction)}")
    return ov


def instance_dicts(records: Iterable[Any]) -> list[dict[str, Any]]:
    """lm-eval's Instance fields of every InstanceRecord (what ``lmeval show --jsonl`` prints)."""
    from lmeval.plans.plan import InstanceRecord

    out = [
        {
            "task": r.task,
            "doc_id": r.doc_id,
            "idx": r.idx,
            "request_type": r.request_type,
            "arguments": list(r.arguments),
            "repeats": r.repeats,
        }
        for r in records
        if isinstance(r, InstanceRecord)
    ]
    out.sort(key=lambda d: (d["task"], d["doc_id"], d["idx"]))
    return out


def ours_via_compiler(overrides: list[str], workdir: Path) -> list[dict[str, Any]]:
    """Compile in-process, write the plan, read it back: the Instances as they are on disk."""
    from lmeval.compiler import compile_plan
    from lmeval.plans.plan import PlanReader, write_plan

    header, records = compile_plan(overrides)
    path = workdir / "plan.msgpack"
    write_plan(path, header, records)
    with PlanReader(path) as reader:
        return instance_dicts(reader)


def ours_via_cli(overrides: list[str], workdir: Path) -> list[dict[str, Any]]:
    """``lmeval compile ... run.out=PLAN`` then ``lmeval show PLAN --jsonl``, each its own process."""
    plan = workdir / "cli-plan.msgpack"
    lmeval = [sys.executable, "-m", "lmeval"]
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    c = subprocess.run(
        [*lmeval, "compile", *overrides, f"run.out={plan}"], cwd=REPO, env=env, capture_output=True, text=True
    )
    if c.returncode != 0:
        raise RuntimeError(f"lmeval compile failed ({c.returncode}): {c.stderr[-3000:]}")
    if c.stdout.strip().splitlines()[-1] != str(plan):
        raise RuntimeError(f"lmeval compile did not print the plan path last: {c.stdout[-500:]!r}")
    s = subprocess.run([*lmeval, "show", str(plan), "--jsonl"], cwd=REPO, env=env, capture_output=True, text=True)
    if s.returncode != 0:
        raise RuntimeError(f"lmeval show --jsonl failed ({s.returncode}): {s.stderr[-3000:]}")
    rows = [json.loads(line) for line in s.stdout.splitlines() if line.strip()]
    keep = ("task", "doc_id", "idx", "request_type", "arguments", "repeats")
    out = [{k: r[k] for k in keep} for r in rows]
    out.sort(key=lambda d: (d["task"], d["doc_id"], d["idx"]))
    return out


# ------------------------------------------------------------------------------------------ comparison


@dataclass
class Diff:
    task: str
    doc_id: int
    idx: int
    field: str
    ours: Any
    lmeval: Any

    def describe(self) -> str:
        return (
            f"task={self.task} doc_id={self.doc_id} idx={self.idx} field={self.field}\n"
            f"  ours:    {self.ours!r}\n  lm-eval: {self.lmeval!r}"
        )


@dataclass
class Outcome:
    case: str
    route: str
    n_ref: int = 0
    n_ours: int = 0
    matched: int = 0
    mismatched: int = 0
    missing: int = 0  # in lm-eval, not in ours
    extra: int = 0  # in ours, not in lm-eval
    first: Diff | None = None
    error: str | None = None
    diffs_by_field: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None and self.mismatched == self.missing == self.extra == 0 and self.n_ref > 0


def _fields(d: dict[str, Any]) -> dict[str, Any]:
    args = d["arguments"]
    out: dict[str, Any] = {"request_type": d["request_type"], "repeats": d["repeats"], "context": args[0]}
    if d["request_type"] == "generate_until":
        out["generation_kwargs"] = args[1] if len(args) > 1 else None
    elif len(args) > 1:
        out["continuation"] = args[1]
    if len(args) > 2:
        out["extra_arguments"] = args[2:]
    return out


def _canon(v: Any) -> str:
    """Byte-exact form of a field: strings as they are, everything else as sorted-key JSON."""
    return v if isinstance(v, str) else json.dumps(v, sort_keys=True, ensure_ascii=False)


def compare(ours: Sequence[dict[str, Any]], ref: Sequence[dict[str, Any]], case: str, route: str) -> Outcome:
    res = Outcome(case, route, n_ref=len(ref), n_ours=len(ours))
    key = lambda d: (d["task"], d["doc_id"], d["idx"])  # noqa: E731
    mine = {key(d): d for d in ours}
    theirs = {key(d): d for d in ref}
    for k in sorted(theirs.keys() | mine.keys()):
        a, b = mine.get(k), theirs.get(k)
        if a is None:
            res.missing += 1
            if res.first is None:
                res.first = Diff(*k, "instance", None, "<present>")
            continue
        if b is None:
            res.extra += 1
            if res.first is None:
                res.first = Diff(*k, "instance", "<present>", None)
            continue
        fa, fb = _fields(a), _fields(b)
        bad = [f for f in sorted(fa.keys() | fb.keys()) if _canon(fa.get(f)) != _canon(fb.get(f))]
        if bad:
            res.mismatched += 1
            for f in bad:
                res.diffs_by_field[f] = res.diffs_by_field.get(f, 0) + 1
            if res.first is None:
                f = next((x for x in FIELDS if x in bad), bad[0])
                res.first = Diff(*k, f, fa.get(f), fb.get(f))
        else:
            res.matched += 1
    return res


def first_difference_at(a: str, b: str) -> str:
    """Where two strings part: offset and a window of each, for readable reports."""
    n = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    lo = max(0, n - 60)
    return f"offset {n}: ours …{a[lo : n + 60]!r} vs lm-eval …{b[lo : n + 60]!r}"


def run_cases(
    cases: Sequence[Case],
    routes: Sequence[str] = ROUTES,
    *,
    data_dir: Path | None = None,
    via: str = "compiler",
    use_cache: bool = True,
) -> tuple[list[Outcome], list[RefResult]]:
    """Reference all cases in ONE lm-eval subprocess, compile ours per case and route, compare."""
    data = data_dir or default_data_dir()
    refs = reference_instances([c.ref for c in cases], data, use_cache=use_cache)
    build = ours_via_compiler if via == "compiler" else ours_via_cli
    outcomes: list[Outcome] = []
    compiled: dict[tuple[str, ...], list[dict[str, Any]] | Exception] = {}  # e.g. route (a) mmlu, once
    with tempfile.TemporaryDirectory(prefix="lmeval-parity-") as tmp:
        for case, ref in zip(cases, refs, strict=True):
            for route in routes:
                if route not in case.routes:
                    continue
                ov = tuple(overrides_for(case, route, data))
                if ov not in compiled:
                    try:
                        compiled[ov] = build(list(ov), Path(tmp))
                    except Exception as e:  # a compile failure is a parity failure, reported, not raised
                        compiled[ov] = e
                got = compiled[ov]
                if isinstance(got, Exception):
                    outcomes.append(
                        Outcome(
                            case.name,
                            route,
                            n_ref=len(ref.instances),
                            error=f"{type(got).__name__}: {got}".splitlines()[0][:400],
                        )
                    )
                    continue
                ours = got
                if case.group_filter:
                    ours = [d for d in ours if d["task"] in case.group_filter]
                outcomes.append(compare(ours, ref.instances, case.name, route))
    return outcomes, refs


def table(outcomes: Sequence[Outcome]) -> str:
    lines = [
        "| case | route | lm-eval instances | ours | match | mismatch | missing | extra | status |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for o in outcomes:
        status = (
            "OK"
            if o.ok
            else (
                "ERROR: " + o.error
                if o.error
                else "DIFF " + ", ".join(f"{k}×{v}" for k, v in sorted(o.diffs_by_field.items()))
            )
        )
        lines.append(
            f"| {o.case} | {o.route} | {o.n_ref} | {o.n_ours} | {o.matched} | {o.mismatched} | "
            f"{o.missing} | {o.extra} | {status} |"
        )
    return "\n".join(lines)


def first_diffs(outcomes: Sequence[Outcome]) -> str:
    out = []
    for o in outcomes:
        if o.first is not None:
            d = o.first
            extra = ""
            if isinstance(d.ours, str) and isinstance(d.lmeval, str):
                extra = "\n  " + first_difference_at(d.ours, d.lmeval)
            out.append(f"### {o.case} [{o.route}]\n{d.describe()}{extra}")
    return "\n\n".join(out)


def with_limit(cases: Sequence[Case], limit: int | None) -> list[Case]:
    return [replace(c, ref=replace(c.ref, limit=limit)) for c in cases]
