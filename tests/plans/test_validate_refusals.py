"""Every refusal of ``plans/plan/validate.py`` has a forged plan that reaches it and only it (#42 acceptance 4).

``refusals()`` reads validate.py with ``ast`` and lists its ``raise`` sites, each named by a stable id: the
function and the literal text of the raised call's arguments (``{}`` for a formatted part, ``*`` for a
non-literal argument), e.g. ``validate_header:tasks.name|named twice|*``. ``CASES`` maps each id to a forgery
of a real compiled plan (arith, 2 docs, generate_until): its raw header map and record maps with one thing
changed, the doc and request hashes recomputed unless the rule is about them. Each case runs the validator
as a reader does (``PlanHeader.from_dict``, ``validate_header``, then ``checked`` over the records and its
``finish``) and must raise at its own site: the traceback's innermost frame in validate.py is on the lines of
that ``raise``. A raise site without a case (a new rule without a test) fails
``test_every_refusal_has_a_case``.
"""

from __future__ import annotations

import ast
import copy
import hashlib
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from types import TracebackType
from typing import Any

import pytest

from lmeval.plans.errors import PlanError
from lmeval.plans.plan import canonical_bytes, validate
from lmeval.plans.plan.records import CONFIG_COPIES, PlanHeader, instance_id_for, request_hash_of
from tests.hostile.corpus import env
from tests.hostile.forge import Maps, raw_plan

SOURCE = Path(validate.__file__).resolve()
Head = dict[str, Any]


@dataclass(frozen=True)
class Site:
    id: str
    func: str
    lines: range  # the raise statement's lines


def _literal(node: ast.expr) -> str:
    if isinstance(node, ast.Constant) and type(node.value) is str:
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(str(v.value) if isinstance(v, ast.Constant) else "{}" for v in node.values)
    return "*"


def refusals() -> list[Site]:
    """Every ``raise`` in validate.py (a bare re-raise has no call and is named by its function alone)."""
    tree = ast.parse(SOURCE.read_text(encoding="utf-8"))
    sites: list[Site] = []

    def visit(node: ast.AST, func: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef):
                visit(child, func or child.name)  # a nested helper (``bad`` in ``_gen_kwargs``) is its caller's
            elif isinstance(child, ast.Raise):
                exc = child.exc
                args = exc.args if isinstance(exc, ast.Call) else []
                sid = f"{func}:" + "|".join(_literal(a) for a in args)
                sites.append(Site(sid, func, range(child.lineno, (child.end_lineno or child.lineno) + 1)))
            else:
                visit(child, func)

    visit(tree, "")
    return sites


# ------------------------------------------------------------------------------------------------ forging


def _insts(objs: Maps) -> Maps:
    return [o for o in objs if o.get("kind") == "instance"]


def _docs(objs: Maps) -> Maps:
    return [o for o in objs if o.get("kind") == "doc"]


def _rehash(objs: Maps) -> None:
    """Doc and request hashes recomputed from the edited content (what a forger who knows the format does)."""
    keys = ("request_type", "context", "continuation", "generation_kwargs", "context_ids", "continuation_ids")
    for o in objs:
        if o.get("kind") == "instance":
            try:
                args: list[Any] = [o.get(k) for k in keys]
                o["request_hash"] = request_hash_of(*args)
            except (TypeError, ValueError):
                pass
        elif isinstance(o.get("doc"), dict):
            try:
                o["doc_hash"] = hashlib.sha256(canonical_bytes(o["doc"])).hexdigest()
            except (TypeError, ValueError):
                pass


def _set_task(t: dict[str, Any], key: str, value: Any) -> None:
    """A task summary's field and, where the summary copies it (``CONFIG_COPIES``), its config's value too."""
    t[key] = value
    if key in CONFIG_COPIES:
        t["config"][CONFIG_COPIES[key]] = copy.deepcopy(value)


def _second_task(head: Head, objs: Maps, name: str = "b") -> Maps:
    """A copy of the plan's task named ``name`` in the header; its records (ids recomputed) returned."""
    t = copy.deepcopy(head["tasks"][0])
    _set_task(t, "name", name)
    head["tasks"].append(t)
    head["n_docs"] += t["n_docs"]
    head["n_instances"] += t["n_instances"]
    recs = copy.deepcopy(objs)
    for o in recs:
        o["task"] = name
        if o["kind"] == "instance":
            o["instance_id"] = instance_id_for(name, o["doc_id"], o["idx"])
    return recs


def _as_loglikelihood(head: Head, objs: Maps) -> None:
    """The task turned multiple_choice, its Instances loglikelihood requests with a continuation."""
    _set_task(head["tasks"][0], "output_type", "multiple_choice")
    for o in _insts(objs):
        o["request_type"] = "loglikelihood"
        o["continuation"] = " 1"
        o["generation_kwargs"] = None


Edit = Callable[[Head, Maps], Maps | None]


@dataclass(frozen=True)
class Case:
    edit: Edit
    rehash: bool = True
    only: str | None = None  # a per-task stream (``PlanReader.task``) rather than the whole plan's
    typed: Callable[[PlanHeader], PlanHeader] | None = None  # an edit of the typed header (see its case)


def head(path: tuple[Any, ...], value: Any) -> Case:
    def edit(h: Head, objs: Maps) -> None:
        node: Any = h
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = value

    return Case(edit)


def task(key: str, value: Any) -> Case:
    def edit(h: Head, objs: Maps) -> None:
        _set_task(h["tasks"][0], key, value)

    return Case(edit)


def _task_config_not_a_map(header: PlanHeader) -> PlanHeader:
    """Not reachable from a plan file: ``TaskSummary.from_dict`` refuses a config that is not a map first
    (``config_disagreement``, a "malformed plan header"); ``validate_header`` still guards a typed header
    built in code, so the case builds one."""
    return replace(header, tasks=[replace(header.tasks[0], config=[])])  # type: ignore[arg-type]


def inst(key: str, value: Any, *, rehash: bool = True) -> Case:
    def edit(h: Head, objs: Maps) -> None:
        _insts(objs)[1][key] = value

    return Case(edit, rehash)


def kwarg(key: str, value: Any) -> Case:
    def edit(h: Head, objs: Maps) -> None:
        _insts(objs)[1]["generation_kwargs"][key] = value

    return Case(edit)


def doc(key: str, value: Any, *, rehash: bool = True) -> Case:
    def edit(h: Head, objs: Maps) -> None:
        _docs(objs)[1][key] = value

    return Case(edit, rehash)


def _fn(f: Callable[[Head, Maps], Any], rehash: bool = True, only: str | None = None) -> Case:
    return Case(f, rehash, only)


def _group(**kw: Any) -> Case:
    def edit(h: Head, objs: Maps) -> None:
        h["groups"] = [{"name": "g", "subtasks": ["arith"], "aggregate_metric_list": [], **kw}]

    return Case(edit)


def _twice(h: Head, objs: Maps) -> None:
    h["tasks"].append(copy.deepcopy(h["tasks"][0]))


def _interleaved(h: Head, objs: Maps) -> Maps:
    b = _second_task(h, objs)
    return objs[:2] + b[:2] + objs[2:] + b[2:]  # arith, b, then arith again


def _other_task(h: Head, objs: Maps) -> Maps:
    _second_task(h, objs)
    return objs  # arith's records in the stream of task b


def _doc_again(h: Head, objs: Maps) -> None:
    objs.insert(2, copy.deepcopy(objs[0]))


def _inst_first(h: Head, objs: Maps) -> None:
    objs[0], objs[1] = objs[1], objs[0]


def _inst_again(h: Head, objs: Maps) -> None:
    objs.insert(2, copy.deepcopy(objs[1]))


def _kwargs_on_loglikelihood(h: Head, objs: Maps) -> None:
    _as_loglikelihood(h, objs)
    _insts(objs)[1]["generation_kwargs"] = {"until": ["\n"]}


def _no_doc_target(h: Head, objs: Maps) -> None:
    del _docs(objs)[1]["target"]


def _last_doc_dropped(h: Head, objs: Maps) -> Maps:
    return objs[:2]  # the header still says 2 docs and 2 Instances


NAN = float("nan")
V = "validate_header:"
M = "_check_model:"
D = "_doc:*|*|"
II = "_instance:*|*|"
T = "_token_ids:*|*|*|"
G = "_gen_kwargs:"

CASES: dict[str, Case] = {
    V + "lmeval_version|not a string": head(("lmeval_version",), 1),
    V + "config|not a map": head(("config",), []),
    V + "extra|not a map": head(("extra",), []),
    V + "plan_hash|not 64 hex digits": head(("plan_hash",), "0" * 63),
    V + "tasks|a plan has at least one task": head(("tasks",), []),
    V + "tasks.name|{} is not a task name": task("name", ""),
    V + "tasks.name|named twice|*": _fn(_twice),
    V + "output_type|{} is not one of {}|*": task("output_type", "generate"),
    V + "*|{} is not a non-negative 64-bit integer|*": task("num_fewshot", -1),
    V + "task_hash|not 64 hex digits|*": head(("tasks", 0, "task_hash"), "A" * 64),
    V + "data_fingerprint|not a string|*": head(("tasks", 0, "data_fingerprint"), 7),
    V + "*|not a list of maps|*": task("filter_list", ["strict-match"]),
    V + "groups|not a list of strings|*": head(("tasks", 0, "groups"), [1]),
    V + "config|not a map|*": Case(lambda h, objs: None, typed=_task_config_not_a_map),
    V + "groups.name|{} is not a group name or is named twice": _group(name=""),
    V + "groups.subtasks|not a list of strings|*": _group(subtasks=[1]),
    V + "groups.aggregate_metric_list|not a list of maps|*": _group(aggregate_metric_list=["mean"]),
    V + "*|{} is not a non-negative 64-bit integer": head(("n_docs",), -2),
    V + "*|{} but its tasks' {} add up to {}": head(("n_instances",), 3),
    M + "model.name|not a string": head(("model", "name"), 1),
    M + "model.backend|not a string": head(("model", "backend"), None),
    M + "model.{}|not a string": head(("model", "tokenizer_hash"), 1),
    M + "model.add_bos_token|not a boolean": head(("model", "add_bos_token"), 1),
    M + "model.engine|not a map": head(("model", "engine"), []),
    M + "model.token_rule.add_bos_token|not a boolean": head(("model", "token_rule", "add_bos_token"), "yes"),
    M + "model.token_rule.prefix_token_id|{} is not a token id": head(("model", "token_rule", "prefix_token_id"), -1),
    M + "model.token_rule|prefix_token_source or prefix_text is not a string": head(
        ("model", "token_rule", "prefix_text"), 1
    ),
    M + "model.token_rule.{}|not a list of token ids": head(("model", "token_rule", "special_suffix"), [2**32]),
    "check:*|*|task|not a task of the plan header": inst("task", "arithmetic"),
    "check:*|*|task|a record of another task in task {}'s span": _fn(_other_task, only="b"),
    "check:*|*|doc_id|not a non-negative 64-bit integer": doc("doc_id", -1),
    "check:*|*|task|records out of the order of the header's task spans": _fn(_interleaved),
    D + "doc_id|a second record of this doc": _fn(_doc_again),
    D + "doc|not a map": doc("doc", [1, 2]),
    D + "choices|not a list of strings": doc("choices", ["a", 1]),
    D + "target|missing": _fn(_no_doc_target),
    D + "fewshot_ids|not a list of non-negative integers": doc("fewshot_ids", [3, -1]),
    D + "doc|not canonical data": doc("doc", {"a": NAN}),
    D + "doc_hash|is not sha256 of the document (a forged or corrupted plan)": doc("doc_hash", "0" * 64, rehash=False),
    II + "doc_id|an Instance not preceded by its doc's record": _fn(_inst_first),
    II + "idx|{} is not a non-negative 64-bit integer": inst("idx", -1),
    II + "instance_id|{} is not the id of this task, doc and idx {}": inst("instance_id", "0" * 16),
    II + "instance_id|Instance {} twice": _fn(_inst_again),
    II + "request_type|{}, but a {} task asks {}": inst("request_type", "loglikelihood"),
    II + "context|not a string": inst("context", None),
    II + "continuation|a string exactly for loglikelihood requests": inst("continuation", " 181"),
    II + "generation_kwargs|set on a {} request": _fn(_kwargs_on_loglikelihood),
    II + "repeats|{} is not an integer in 1..{}": inst("repeats", 0),
    II + "messages|*": inst("messages", [{"role": "robot", "content": "Q: 1+1"}]),  # plans/plan/chatmessages.py
    II + "media|*": inst("media", [{"sha256": "x"}]),  # plans/plan/media.py
    II + "tools|*": inst("tools", [{"type": "function", "function": {}}]),  # plans/plan/toolcalls.py
    II + "generation_kwargs|not canonical data": kwarg("lmeval_extra", NAN),
    II + "request_hash|is not the hash of the request's content (a forged plan)": inst(
        "request_hash", "0" * 64, rehash=False
    ),
    T + "not a list of token ids": inst("context_ids", "443 30"),
    T + "token id {} is not an integer": inst("continuation_ids", [1, True]),
    T + "token id {} is outside any vocabulary (0..{})": inst("context_ids", [443, -30]),
    G + "|not a map": inst("generation_kwargs", [["until", "\n"]]),
    G + "until|not a string or a list of at most {} strings": kwarg("until", ["\n", 1]),
    G + "*|{} is not an integer in 0..{}": kwarg("max_gen_toks", -8),
    G + "*|{} is not a finite number": kwarg("temperature", NAN),
    G + "*|{} is not a 64-bit integer": kwarg("seed", 1.5),
    G + "do_sample|not a boolean": kwarg("do_sample", 0),
    "finish:{}: invalid plan: task {}: {} docs and {} Instances, its header summary says {} and {}": _fn(
        _last_doc_dropped
    ),
}


# ------------------------------------------------------------------------------------------------ running


@pytest.fixture(scope="module")
def genuine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Head, Maps]:
    p = tmp_path_factory.mktemp("refusals") / "arith.msgpack"
    r = subprocess.run([sys.executable, "-m", "lmeval", "compile", "+task=arith", "run.limit=2", "--out", str(p)],
                       env=env(), cwd=p.parent, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert r.returncode == 0, r.stderr
    return raw_plan(p)


def _validate(
    h: Head, objs: Maps, only: str | None = None, typed: Callable[[PlanHeader], PlanHeader] | None = None
) -> None:
    """What a reader runs: the typed header, its invariants, then the records in stream order."""
    header = PlanHeader.from_dict(h)
    if typed is not None:
        header = typed(header)
    validate.validate_header(header, "forged.msgpack")
    order = None if only is not None else [t["name"] for t in h["tasks"]]
    for _ in validate.checked(objs, header, "forged.msgpack", order, only):
        pass


def _raise_line(tb: TracebackType | None) -> int:
    """The line of the innermost frame in validate.py: where the refusal was raised."""
    line = -1
    while tb is not None:
        if Path(tb.tb_frame.f_code.co_filename).resolve() == SOURCE:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


SITES = {s.id: s for s in refusals()}


def test_refusal_ids_are_unique() -> None:
    ids = [s.id for s in refusals()]
    assert sorted(i for i in set(ids) if ids.count(i) > 1) == []


def test_every_refusal_has_a_case() -> None:
    """A new ``raise`` in validate.py without a forged plan here fails (and a case whose rule is gone too)."""
    assert sorted(set(SITES) - set(CASES)) == [], "refusals without a forged plan in CASES"
    assert sorted(set(CASES) - set(SITES)) == [], "cases for refusals validate.py no longer has"


def test_the_genuine_plan_is_accepted(genuine: tuple[Head, Maps]) -> None:
    h, objs = copy.deepcopy(genuine)
    _validate(h, objs)
    assert [o["kind"] for o in objs] == ["doc", "instance", "doc", "instance"]
    two = _second_task(h, objs)
    _validate(copy.deepcopy(h), objs + two)  # the two-task plans the cases start from are valid ones
    _validate(h, two, only="b")


@pytest.mark.parametrize("sid", sorted(CASES))
def test_forged_plan_reaches_its_refusal(genuine: tuple[Head, Maps], sid: str) -> None:
    case = CASES[sid]
    h, objs = copy.deepcopy(genuine)
    objs = case.edit(h, objs) or objs
    if case.rehash:
        _rehash(objs)
    with pytest.raises(PlanError) as e:
        _validate(h, objs, case.only, case.typed)
    site = SITES[sid]
    line = _raise_line(e.tb)
    got = next((s.id for s in SITES.values() if line in s.lines), f"line {line}")
    assert got == sid, f"{e.value}"
    assert "forged.msgpack: invalid plan" in str(e.value)
    assert site.lines
