"""Forged-but-consistent plans (``tests/hostile/forge.py``): every header and record field edited, every hash
recomputed, so only ``plans/plan/validate.py`` can refuse them. Each is run through ``lmeval execute`` (the fake
backend); a few through ``show`` and ``diff``, the other plan readers."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from tests.hostile.corpus import DATA, FAKE, Base, Case, case, copytree, lmeval
from tests.hostile.forge import HeaderEdit, Maps, RecordEdit, forge

_MC_LOCK = threading.Lock()


def mc_plan(tmp: Path) -> Path:
    """A multiple-choice plan (arc_easy, 2 docs), compiled once per corpus run next to the cases."""
    p = tmp.parent / "arc.msgpack"
    with _MC_LOCK:
        if not p.exists():
            r = lmeval(
                "compile", "+task=arc_easy", "run.limit=2", f"run.data_dir={DATA}", "--out", str(p), cwd=tmp.parent
            )
            assert r.returncode == 0, r.stderr
    return p


def _insts(objs: Maps) -> Maps:
    return [o for o in objs if o.get("kind") == "instance"]


def _docs(objs: Maps) -> Maps:
    return [o for o in objs if o.get("kind") == "doc"]


def _set_inst(key: str, value: Any, which: int = 1) -> RecordEdit:
    def edit(objs: Maps) -> None:
        _insts(objs)[which][key] = value

    return edit


def _set_doc(key: str, value: Any, which: int = 1) -> RecordEdit:
    def edit(objs: Maps) -> None:
        _docs(objs)[which][key] = value

    return edit


def _del_doc(key: str) -> RecordEdit:
    def edit(objs: Maps) -> None:
        del _docs(objs)[1][key]

    return edit


def _set_head(path: tuple[Any, ...], value: Any) -> HeaderEdit:
    def edit(head: dict[str, Any]) -> None:
        node: Any = head
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = value

    return edit


def _task_field(key: str, value: Any) -> HeaderEdit:
    return _set_head(("tasks", 0, key), value)


def _run(tmp: Path, plan: Path, needles: tuple[str, ...], cmd: str = "execute", other: Path | None = None) -> Case:
    if cmd == "execute":
        argv = ["execute", str(plan), FAKE, "--out", str(tmp / "r"), "--no-progress"]
    elif cmd == "show":
        argv = ["show", str(plan)]
    else:
        argv = ["diff", str(other), str(plan)]
    return Case(argv, (str(plan), *needles), absent=[tmp / "r"], timeout=120)


def _family(
    name: str,
    plan: str,
    needles: tuple[str, ...],
    records: RecordEdit | None = None,
    header: HeaderEdit | None = None,
    rehash: bool = True,
    cmd: str = "execute",
    after: HeaderEdit | None = None,
) -> None:
    def build(tmp: Path, base: Base) -> Case:
        src = base.plan if plan == "gen" else mc_plan(tmp)
        p = forge(src, tmp / "forged.msgpack", records=records, header=header, rehash=rehash, after=after)
        return _run(tmp, p, needles, cmd, src)

    build.__name__ = f"forged_{name}"
    case("forged")(build)


def _last_doc_to(task: str) -> RecordEdit:
    def edit(objs: Maps) -> None:
        i = objs.index(_docs(objs)[-1])
        for o in objs[i:]:
            o["task"] = task

    return edit


def _swap_ids(objs: Maps) -> None:
    a, b = _insts(objs)[0], _insts(objs)[1]
    a["instance_id"], b["instance_id"] = b["instance_id"], a["instance_id"]


def _collide_hash(objs: Maps) -> None:
    _insts(objs)[1]["request_hash"] = _insts(objs)[0]["request_hash"]


def _drop_docs(objs: Maps) -> Maps:
    return [o for o in objs if o.get("kind") != "doc"]


def _duplicate_doc(objs: Maps) -> Maps:
    doc = _docs(objs)[1]
    i = objs.index(doc)
    return [*objs[: i + 1], dict(doc), *objs[i + 1 :]]


def _duplicate_instance(objs: Maps) -> Maps:
    inst = _insts(objs)[1]
    i = objs.index(inst)
    return [*objs[: i + 1], dict(inst), *objs[i + 1 :]]


def _no_tasks(head: dict[str, Any]) -> None:
    head["tasks"], head["extra"]["spans"] = [], {}


def _two_tasks(objs: Maps) -> Maps:
    """arith and a copy named ``arit2`` (same name length: every record of the copy has the same size)."""
    from lmeval.plans.plan import instance_id_for

    copy = [dict(o, task="arit2") for o in objs]
    for o in copy:
        if o["kind"] == "instance":
            o["instance_id"] = instance_id_for("arit2", o["doc_id"], o["idx"])
    return objs + copy


def _two_task_header(swap: bool) -> HeaderEdit:
    def edit(head: dict[str, Any]) -> None:
        t = dict(head["tasks"][0], name="arit2", config=dict(head["tasks"][0]["config"], task="arit2"))
        head["tasks"].append(t)
        sp = head["extra"]["spans"]
        if swap:
            sp["arith"], sp["arit2"] = sp["arit2"], sp["arith"]

    return edit


_BIG = 10**9
# (name, plan, needles, record edit, header edit, rehash) -- the plan: "gen" (arith, generate_until) or "mc"
_FORGED: list[tuple[str, str, tuple[str, ...], RecordEdit | None, HeaderEdit | None, bool]] = [
    # header fields
    ("h_format", "gen", ("lmeval-plan",), None, _set_head(("format",), "other"), True),
    ("h_version", "gen", ("version",), None, _set_head(("version",), 99), True),
    ("h_model_path", "gen", ("model.path",), None, _set_head(("model", "path"), 5), True),
    ("h_model_tokenizer", "gen", ("model.tokenizer",), None, _set_head(("model", "tokenizer"), [1]), True),
    (
        "h_model_chat_template_hash",
        "gen",
        ("model.chat_template_hash",),
        None,
        _set_head(("model", "chat_template_hash"), 1),
        True,
    ),  # fmt: skip
    ("h_model_revision", "gen", ("model.revision",), None, _set_head(("model", "revision"), 1), True),
    ("h_model_config_hash", "gen", ("model.config_hash",), None, _set_head(("model", "config_hash"), 1), True),
    ("h_lmeval_version", "gen", ("lmeval_version",), None, _set_head(("lmeval_version",), 5), True),
    ("h_config", "gen", ("config",), None, _set_head(("config",), [1]), True),
    ("h_model_name", "gen", ("model.name",), None, _set_head(("model", "name"), 5), True),
    (
        "h_model_processor_hash",
        "gen",
        ("model.processor_hash",),
        None,
        _set_head(("model", "processor_hash"), 1),
        True,
    ),  # a vision-language model's processor settings (#54)
    ("h_model_backend", "gen", ("model.backend",), None, _set_head(("model", "backend"), None), True),
    ("h_model_tokenizer_hash", "gen", ("model.tokenizer_hash",), None, _set_head(("model", "tokenizer_hash"), 7), True),
    (
        "h_model_add_bos_token",
        "gen",
        ("model.add_bos_token",),
        None,
        _set_head(("model", "add_bos_token"), "yes"),
        True,
    ),
    ("h_model_engine", "gen", ("model.engine",), None, _set_head(("model", "engine"), [1]), True),
    (
        "h_model_token_rule",
        "gen",
        ("prefix_token_id",),
        None,
        _set_head(("model", "token_rule", "prefix_token_id"), -1),
        True,
    ),  # fmt: skip
    ("h_model_not_a_map", "gen", ("model",), None, _set_head(("model",), "tiny"), True),
    ("h_no_tasks", "gen", ("tasks",), lambda objs: [], _no_tasks, True),
    (
        "h_task_name_twice",
        "gen",
        ("arith",),
        _two_tasks,
        lambda h: (_two_task_header(False)(h), _set_head(("tasks", 1, "name"), "arith")(h)) and None,
        True,
    ),  # fmt: skip
    ("h_task_output_type", "gen", ("output_type",), None, _task_field("output_type", "bogus"), True),
    ("h_task_n_docs_negative", "gen", ("n_docs",), None, _task_field("n_docs", -1), True),
    ("h_task_n_docs_string", "gen", ("n_docs",), None, _task_field("n_docs", "4"), True),
    ("h_task_n_instances_wrong", "gen", ("n_instances",), None, _task_field("n_instances", 7), True),
    ("h_task_num_fewshot", "gen", ("num_fewshot",), None, _task_field("num_fewshot", -3), True),
    ("h_task_task_hash", "gen", ("task_hash",), None, _task_field("task_hash", "zz"), True),
    ("h_task_data_fingerprint", "gen", ("data_fingerprint",), None, _task_field("data_fingerprint", 5), True),
    ("h_task_metric_list", "gen", ("metric_list",), None, _task_field("metric_list", "acc"), True),
    ("h_task_filter_list", "gen", ("filter_list",), None, _task_field("filter_list", {"a": 1}), True),
    ("h_task_groups", "gen", ("groups",), None, _task_field("groups", [1]), True),
    ("h_task_config", "gen", ("config",), None, _task_field("config", [1]), True),
    ("h_groups", "gen", ("groups",), None, _set_head(("groups",), [{"name": 5, "subtasks": []}]), True),
    ("h_n_docs", "gen", ("n_docs",), None, _set_head(("n_docs",), 3), True),
    ("h_n_instances", "gen", ("n_instances",), None, _set_head(("n_instances",), "4"), True),
    ("h_extra", "gen", ("spans",), None, _set_head(("extra",), "x"), True),
    ("h_spans_swapped", "gen", ("order",), _two_tasks, _two_task_header(True), True),
    # doc record fields
    ("d_task_other", "gen", ("task spans",), _last_doc_to("arit2"), None, True),
    ("d_doc_id_negative", "gen", ("doc_id",), _set_doc("doc_id", -1), None, True),
    ("d_doc_id_string", "gen", ("doc_id",), _set_doc("doc_id", "1"), None, True),
    ("d_doc_list", "gen", ("doc", "not a map"), _set_doc("doc", [1]), None, True),
    ("d_target_missing", "gen", ("target",), _del_doc("target"), None, True),
    ("d_choices", "mc", ("choices",), _set_doc("choices", [1, 2]), None, True),
    ("d_fewshot_ids", "gen", ("fewshot_ids",), _set_doc("fewshot_ids", ["a"]), None, True),
    ("d_doc_hash", "gen", ("doc_hash",), _set_doc("doc_hash", "0" * 64), None, False),
    ("d_kind", "gen", ("kind",), _set_doc("kind", "weird"), None, True),
    ("d_no_doc_records", "gen", ("preceded by its doc",), _drop_docs, None, True),
    ("d_duplicated", "gen", ("doc_id", "second record"), _duplicate_doc, None, True),
    # instance record fields
    ("i_instance_id_not_hex", "gen", ("instance_id", "'zz'"), _set_inst("instance_id", "zz"), None, True),
    ("i_instance_id_forged", "gen", ("instance_id",), _set_inst("instance_id", "0123456789abcdef"), None, True),
    ("i_instance_ids_swapped", "gen", ("instance_id",), _swap_ids, None, True),
    ("i_task", "gen", ("task spans",), _set_inst("task", "arit2", -1), None, True),
    ("i_doc_id", "gen", ("doc_id",), _set_inst("doc_id", 3), None, True),
    ("i_idx_negative", "gen", ("idx",), _set_inst("idx", -1), None, True),
    ("i_idx_string", "gen", ("idx",), _set_inst("idx", "0"), None, True),
    ("i_request_type_other", "gen", ("request_type",), _set_inst("request_type", "loglikelihood"), None, True),
    ("i_request_type_bogus", "mc", ("request_type",), _set_inst("request_type", "bogus"), None, True),
    ("i_context_none", "gen", ("context",), _set_inst("context", None), None, True),
    ("i_continuation_on_generate", "gen", ("continuation",), _set_inst("continuation", "x"), None, True),
    ("i_continuation_none", "mc", ("continuation",), _set_inst("continuation", None), None, True),
    ("i_generation_kwargs_list", "gen", ("generation_kwargs",), _set_inst("generation_kwargs", ["until"]), None, True),
    (
        "i_generation_kwargs_until",
        "gen",
        ("generation_kwargs.until",),
        _set_inst("generation_kwargs", {"until": 5}),
        None,
        True,
    ),  # fmt: skip
    (
        "i_generation_kwargs_max_gen_toks",
        "gen",
        ("generation_kwargs.max_gen_toks",),
        _set_inst("generation_kwargs", {"max_gen_toks": 10**12}),
        None,
        True,
    ),  # fmt: skip
    (
        "i_generation_kwargs_temperature",
        "gen",
        ("generation_kwargs.temperature",),
        _set_inst("generation_kwargs", {"temperature": "hot"}),
        None,
        True,
    ),  # fmt: skip
    (
        "i_generation_kwargs_on_loglikelihood",
        "mc",
        ("generation_kwargs",),
        _set_inst("generation_kwargs", {}),
        None,
        True,
    ),
    (
        "i_messages_bad_role",
        "gen",
        ("messages", "robot"),
        _set_inst("messages", [{"role": "robot", "content": "Q"}]),
        None,
        True,
    ),  # plans/plan/chatmessages.py
    (
        "i_messages_on_loglikelihood",
        "mc",
        ("messages", "set on a"),
        _set_inst("messages", [{"role": "user", "content": "Q"}]),
        None,
        True,
    ),
    (
        "i_media_not_images",
        "gen",
        ("media", "image 0 is not a media reference map"),
        _set_inst("media", [{"sha256": "x"}]),
        None,
        True,
    ),  # plans/plan/media.py (#54)
    (
        "i_tools_without_messages",
        "gen",
        ("tools", "without messages"),
        _set_inst("tools", [{"type": "function", "function": {"name": "f"}}]),
        None,
        True,
    ),  # plans/plan/toolcalls.py
    ("i_repeats_zero", "gen", ("repeats",), _set_inst("repeats", 0), None, True),
    ("i_repeats_negative", "gen", ("repeats",), _set_inst("repeats", -2), None, True),
    ("i_repeats_1e9", "gen", ("repeats",), _set_inst("repeats", _BIG), None, True),
    ("i_repeats_float", "gen", ("repeats",), _set_inst("repeats", 1e9), None, True),
    ("i_context_ids_strings", "gen", ("context_ids", "'a'"), _set_inst("context_ids", ["a", "b"]), None, True),
    ("i_context_ids_none_in", "gen", ("context_ids", "None"), _set_inst("context_ids", [1, None]), None, True),
    ("i_context_ids_not_list", "gen", ("context_ids",), _set_inst("context_ids", "12"), None, True),
    ("i_context_ids_bool", "gen", ("context_ids",), _set_inst("context_ids", [True]), None, True),
    ("i_context_ids_huge", "gen", ("context_ids", "vocabulary"), _set_inst("context_ids", [1 << 40]), None, True),
    ("i_continuation_ids", "mc", ("continuation_ids",), _set_inst("continuation_ids", [0.5]), None, True),
    ("i_request_hash_forged", "gen", ("request_hash",), _set_inst("request_hash", "0" * 64), None, False),
    ("i_request_hash_colliding", "gen", ("request_hash",), _collide_hash, None, False),
    ("i_request_hash_stale", "gen", ("request_hash",), _set_inst("context_ids", [5, 6, 7]), None, False),
    ("i_kind", "gen", ("kind",), _set_inst("kind", "nope"), None, True),
    ("i_duplicated", "gen", ("instance_id", "twice"), _duplicate_instance, None, True),
]

for _n, _plan, _needles, _rec, _head, _re in _FORGED:
    _family(_n, _plan, _needles, _rec, _head, _re)

_family("h_plan_hash_empty", "gen", ("plan_hash",), after=_set_head(("plan_hash",), ""))
# the other plan readers refuse them too
_family("show_request_hash", "gen", ("request_hash",), _set_inst("request_hash", "0" * 64), None, False, cmd="show")
_family("diff_instance_id", "gen", ("instance_id",), _set_inst("instance_id", "zz"), None, True, cmd="diff")


@case("forged")
def forged_reuse_stale_request_hash(tmp: Path, base: Base) -> Case:
    """``--reuse`` of a run whose plan's token ids were edited but kept their request hashes: the old plan is
    refused (its hashes are recomputed), so no answer is copied to an Instance it does not answer."""
    old = copytree(base.results, tmp / "old")
    plan = forge(base.plan, old / "plan.msgpack", records=_set_inst("context_ids", [5, 6, 7]), rehash=False)
    from lmeval.plans.plan import open_layout

    f, layout = open_layout(str(plan))
    f.close()
    m = json.loads((old / "manifest.json").read_text(encoding="utf-8"))
    m.update(plan_path=str(plan), plan_hash=layout.raw["plan_hash"])
    (old / "manifest.json").write_text(json.dumps(m), encoding="utf-8")
    argv = ["execute", str(base.plan), FAKE, "--out", str(tmp / "r"), "--no-progress", "--reuse", str(old)]
    return Case(argv, (str(plan), "request_hash"), keep=[old], absent=[tmp / "r"], timeout=120)
