"""The cases of the hostile-input corpus, by family (see ``corpus.py``)."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

from tests.hostile.corpus import (
    FAKE,
    MINI_YAML,
    Base,
    Case,
    case,
    compile_task,
    copytree,
    data_dir_with,
    forge_plan,
    forged_manifest,
    manifest_case,
    mount_shell,
    nested,
    row_case,
    spec_file,
    spec_line,
    task_dir,
)

# ---------------------------------------------------------------------------- templates (Jinja sandbox)


def _template_case(tmp: Path, base: Base, template: str) -> Case:
    d = task_dir(tmp, MINI_YAML.replace('doc_to_text: "Q: {{question}}\\nA:"', f"doc_to_text: {json.dumps(template)}"))
    marker = tmp / "pwned"
    return Case(
        compile_task(d, "mini", base.data, tmp),
        (str(d / "t.yaml"), "task mini", "doc_to_text", "sandbox"),
        absent=[tmp / "out.msgpack", marker],
    )


@case("jinja")
def jinja_cycler_globals_popen(tmp: Path, base: Base) -> Case:
    return _template_case(tmp, base, f"{{{{ cycler.__init__.__globals__.os.popen('touch {tmp}/pwned').read() }}}}")


@case("jinja")
def jinja_joiner_globals(tmp: Path, base: Base) -> Case:
    return _template_case(tmp, base, "{{ joiner.__init__.__globals__.os.system('id') }}")


@case("jinja")
def jinja_str_class_subclasses(tmp: Path, base: Base) -> Case:
    return _template_case(tmp, base, "{{ ''.__class__.__mro__[1].__subclasses__() }}")


@case("jinja")
def jinja_lipsum_globals(tmp: Path, base: Base) -> Case:
    return _template_case(tmp, base, "{{ lipsum.__globals__['os'].getcwd() }}")


@case("jinja")
def jinja_format_attribute_walk(tmp: Path, base: Base) -> Case:
    return _template_case(tmp, base, "{{ '{0.__class__.__init__.__globals__}'.format(question) }}")


@case("jinja")
def jinja_huge_range(tmp: Path, base: Base) -> Case:
    c = _template_case(tmp, base, "{% for i in range(10**12) %}x{% endfor %}")
    return replace(c, needles=c.needles[:-1] + ("range",))


# ------------------------------------------------------------------------------------------- task YAMLs

_BOMB = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"{c}: &{c} [{','.join([f'*{p}'] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True)
)


@case("yaml")
def yaml_alias_bomb(tmp: Path, base: Base) -> Case:
    d = task_dir(tmp, MINI_YAML + _BOMB)
    return Case(compile_task(d, "mini", base.data, tmp), (str(d / "t.yaml"), "more than"), absent=[tmp / "out.msgpack"])


@case("yaml")
def yaml_alias_bomb_in_include(tmp: Path, base: Base) -> Case:
    d = task_dir(tmp, "include: _base.yaml\n" + MINI_YAML, extra={"_base.yaml": "dataset_name: null\n" + _BOMB})
    return Case(compile_task(d, "mini", base.data, tmp), ("_base.yaml", "more than"), absent=[tmp / "out.msgpack"])


@case("yaml")
def yaml_int_beyond_64_bits(tmp: Path, base: Base) -> Case:
    d = task_dir(tmp, MINI_YAML + "num_fewshot: 99999999999999999999999\n")
    return Case(compile_task(d, "mini", base.data, tmp), (str(d / "t.yaml"), "64-bit"), absent=[tmp / "out.msgpack"])


@case("yaml")
def yaml_nested_too_deep(tmp: Path, base: Base) -> Case:
    d = task_dir(tmp, MINI_YAML + f"metadata: {{deep: {nested(200)}}}\n")
    return Case(
        compile_task(d, "mini", base.data, tmp), (str(d / "t.yaml"), "nested deeper"), absent=[tmp / "out.msgpack"]
    )


@case("yaml")
def yaml_not_utf8(tmp: Path, base: Base) -> Case:
    d = task_dir(tmp, "")
    (d / "t.yaml").write_bytes(MINI_YAML.encode() + b"description: \xff\xfe\n")
    return Case(compile_task(d, "mini", base.data, tmp), ("t.yaml",), absent=[tmp / "out.msgpack"])


@case("yaml")
def yaml_top_level_list(tmp: Path, base: Base) -> Case:
    d = task_dir(tmp, "include: _base.yaml\n" + MINI_YAML, extra={"_base.yaml": "- a\n- b\n"})
    return Case(compile_task(d, "mini", base.data, tmp), ("_base.yaml", "mapping"), absent=[tmp / "out.msgpack"])


@case("yaml")
def yaml_include_dev_zero(tmp: Path, base: Base) -> Case:
    d = task_dir(tmp, "include: /dev/zero\n" + MINI_YAML)
    return Case(compile_task(d, "mini", base.data, tmp), (str(d / "t.yaml"), "/dev/zero"), absent=[tmp / "out.msgpack"])


@case("yaml")
def yaml_include_fifo(tmp: Path, base: Base) -> Case:
    d = task_dir(tmp, "include: _pipe.yaml\n" + MINI_YAML)
    os.mkfifo(d / "_pipe.yaml")
    return Case(compile_task(d, "mini", base.data, tmp), ("_pipe.yaml",), absent=[tmp / "out.msgpack"], timeout=30)


@case("yaml")
def yaml_file_too_large(tmp: Path, base: Base) -> Case:
    d = task_dir(tmp, MINI_YAML + "description: '" + "x" * (5 << 20) + "'\n")
    return Case(compile_task(d, "mini", base.data, tmp), ("t.yaml", "limit"), absent=[tmp / "out.msgpack"])


@case("yaml")
def yaml_include_path_is_dev_zero(tmp: Path, base: Base) -> Case:
    return Case(
        ["compile", "run.include_path=/dev/zero", "run.tasks=[mini]", "--out", str(tmp / "o.msgpack")],
        ("/dev/zero", "include_path"),
        absent=[tmp / "o.msgpack"],
    )


# ------------------------------------------------------------------------------------------- data rows


@case("data")
def data_int_beyond_2_64(tmp: Path, base: Base) -> Case:
    return row_case(tmp, base, '{"question": "q", "answer": 18446744073709551616}', "64-bit")


@case("data")
def data_negative_int_beyond_64_bits(tmp: Path, base: Base) -> Case:
    return row_case(tmp, base, '{"question": "q", "answer": -9223372036854775809}', "64-bit")


@case("data")
def data_int_with_5000_digits(tmp: Path, base: Base) -> Case:
    return row_case(tmp, base, '{"question": "q", "answer": ' + "9" * 5000 + "}", "")


@case("data")
def data_nesting_100k_deep(tmp: Path, base: Base) -> Case:
    return row_case(tmp, base, '{"question": "q", "answer": "1", "x": ' + nested(100_000) + "}", "nested deeper")


@case("data")
def data_nesting_990_deep(tmp: Path, base: Base) -> Case:
    return row_case(tmp, base, '{"question": "q", "answer": "1", "x": ' + nested(990) + "}", "nested deeper")


@case("data")
def data_lone_surrogate(tmp: Path, base: Base) -> Case:
    return row_case(tmp, base, '{"question": "q\\ud800", "answer": "1"}', "surrogate")


@case("data")
def data_lone_surrogate_in_key(tmp: Path, base: Base) -> Case:
    return row_case(tmp, base, '{"question": "q", "answer": "1", "\\udfff": 1}', "surrogate")


@case("data")
def data_line_too_long(tmp: Path, base: Base) -> Case:
    return row_case(tmp, base, '{"question": "' + "x" * (17 << 20) + '", "answer": "1"}', "longer than")


@case("data")
def data_row_not_an_object(tmp: Path, base: Base) -> Case:
    return row_case(tmp, base, "[1, 2]", "object")


@case("data")
def data_row_malformed(tmp: Path, base: Base) -> Case:
    return row_case(tmp, base, '{"question": ', "malformed")


@case("data")
def data_file_not_utf8(tmp: Path, base: Base) -> Case:
    data = data_dir_with(tmp, b'{"question": "\xff", "answer": "1"}\n')
    return Case(compile_task(base.tasks, "mini", data, tmp), ("test.jsonl", "UTF-8"), absent=[tmp / "out.msgpack"])


@case("data")
def data_file_is_a_directory(tmp: Path, base: Base) -> Case:
    data = tmp / "data"
    (data / "mini" / "test.jsonl").mkdir(parents=True)
    return Case(compile_task(base.tasks, "mini", data, tmp), ("test.jsonl", "directory"), absent=[tmp / "out.msgpack"])


@case("data")
def data_file_is_dev_zero(tmp: Path, base: Base) -> Case:
    data = tmp / "data"
    (data / "mini").mkdir(parents=True)
    (data / "mini" / "test.jsonl").symlink_to("/dev/zero")
    return Case(
        compile_task(base.tasks, "mini", data, tmp), ("test.jsonl", "character device"), absent=[tmp / "out.msgpack"]
    )


@case("data")
def data_file_is_a_fifo(tmp: Path, base: Base) -> Case:
    data = tmp / "data"
    (data / "mini").mkdir(parents=True)
    os.mkfifo(data / "mini" / "test.jsonl")
    return Case(
        compile_task(base.tasks, "mini", data, tmp), ("test.jsonl", "FIFO"), absent=[tmp / "out.msgpack"], timeout=30
    )


@case("data")
def data_dir_is_dev_zero(tmp: Path, base: Base) -> Case:
    return Case(compile_task(base.tasks, "mini", Path("/dev/zero"), tmp), ("/dev/zero",), absent=[tmp / "out.msgpack"])


# ------------------------------------------------------------------- JSONL spec: validate == compile


def _validate(p: Path, rule: str) -> Case:
    return Case(["validate", str(p)], (f"{p}:2: ", rule), rc=1)


def _compile_spec(tmp: Path, p: Path, rule: str) -> Case:
    return Case(
        ["compile", "+task=jsonl", f"task.jsonl.path={p}", "--out", str(tmp / "o.msgpack")],
        (f"{p}:2", rule),
        absent=[tmp / "o.msgpack"],
    )


_SPEC_BAD = {
    "int": (json.dumps(spec_line(task_id="t2", metadata={"n": 1 << 64})), "integer_out_of_range"),
    "negint": (json.dumps(spec_line(task_id="t2", metadata={"n": -(1 << 63) - 1})), "integer_out_of_range"),
    "surrogate": (json.dumps(spec_line(task_id="t2", prompt="a\ud800b")), "lone_surrogate"),
    "deep990": (
        json.dumps(spec_line(task_id="t2"))[:-1] + ', "metadata": {"d": ' + nested(990) + "}}",
        "nesting_too_deep",
    ),  # fmt: skip
    "deep100k": (
        json.dumps(spec_line(task_id="t2"))[:-1] + ', "metadata": {"d": ' + nested(100_000) + "}}",
        "nesting_too_deep",
    ),  # fmt: skip
    "long": (json.dumps(spec_line(task_id="t2", prompt="x" * (1 << 20))), "line_too_long"),
}


def _spec_pair(kind: str) -> None:
    line, rule = _SPEC_BAD[kind]

    def v(tmp: Path, base: Base) -> Case:
        return _validate(spec_file(tmp, line), rule)

    def c(tmp: Path, base: Base) -> Case:
        return _compile_spec(tmp, spec_file(tmp, line), rule)

    v.__name__ = f"spec_validate_{kind}"
    c.__name__ = f"spec_compile_{kind}"
    case("spec")(v)
    case("spec")(c)


for _kind in _SPEC_BAD:
    _spec_pair(_kind)


@case("spec")
def spec_validate_dev_zero(tmp: Path, base: Base) -> Case:
    return Case(["validate", "/dev/zero"], ("/dev/zero", "character device"), timeout=20)


@case("spec")
def spec_validate_fifo(tmp: Path, base: Base) -> Case:
    os.mkfifo(tmp / "p.jsonl")
    return Case(["validate", str(tmp / "p.jsonl")], ("p.jsonl", "FIFO"), timeout=20)


@case("spec")
def spec_validate_directory(tmp: Path, base: Base) -> Case:
    return Case(["validate", str(tmp)], (str(tmp), "directory"))


@case("spec")
def spec_compile_dev_zero(tmp: Path, base: Base) -> Case:
    return Case(
        ["compile", "+task=jsonl", "task.jsonl.path=/dev/zero", "--out", str(tmp / "o.msgpack")],
        ("/dev/zero", "character device"),
        absent=[tmp / "o.msgpack"],
        timeout=30,
    )


# ------------------------------------------------------------------------------------ run overrides


def _arith(tmp: Path, *over: str, out: bool = True) -> list[str]:
    return ["compile", "+task=arith", "run.limit=3", *over, *(["--out", str(tmp / "o.msgpack")] if out else [])]


@case("overrides")
def override_limit_beyond_2_64(tmp: Path, base: Base) -> Case:
    return Case(_arith(tmp, "run.limit=99999999999999999999"), ("run.limit",), absent=[tmp / "o.msgpack"])


@case("overrides")
def override_limit_negative(tmp: Path, base: Base) -> Case:
    return Case(_arith(tmp, "run.limit=-3"), ("run.limit",), absent=[tmp / "o.msgpack"])


@case("overrides")
def override_num_fewshot_beyond_2_64(tmp: Path, base: Base) -> Case:
    return Case(_arith(tmp, "run.num_fewshot=99999999999999999999"), ("run.num_fewshot",), absent=[tmp / "o.msgpack"])


@case("overrides")
def override_fewshot_seed_beyond_2_64(tmp: Path, base: Base) -> Case:
    return Case(
        _arith(tmp, "run.fewshot_random_seed=99999999999999999999"),
        ("run.fewshot_random_seed",),
        absent=[tmp / "o.msgpack"],
    )


@case("overrides")
def override_seed_beyond_2_64(tmp: Path, base: Base) -> Case:
    return Case(_arith(tmp, "run.seed=-99999999999999999999"), ("run.seed",), absent=[tmp / "o.msgpack"])


@case("overrides")
def override_gen_kwargs_int_beyond_2_64(tmp: Path, base: Base) -> Case:
    return Case(
        _arith(tmp, "run.gen_kwargs={max_gen_toks:99999999999999999999}"), ("gen_kwargs",), absent=[tmp / "o.msgpack"]
    )


@case("overrides")
def override_out_is_a_directory(tmp: Path, base: Base) -> Case:
    d = tmp / "exists"
    d.mkdir()
    (d / "keep.txt").write_text("mine")
    return Case(_arith(tmp, f"run.out={d}", out=False), (str(d), "directory"), keep=[d])


@case("overrides")
def override_out_under_proc(tmp: Path, base: Base) -> Case:
    return Case(_arith(tmp, "run.out=/proc/lmeval-hostile/plan.msgpack", out=False), ("/proc/lmeval-hostile",))


@case("overrides")
def override_out_is_a_fifo(tmp: Path, base: Base) -> Case:
    os.mkfifo(tmp / "pipe")
    return Case(_arith(tmp, "--out", str(tmp / "pipe"), out=False), (str(tmp / "pipe"), "FIFO"))


@case("overrides")
def compile_out_read_only(tmp: Path, base: Base) -> Case:
    d = tmp / "ro"
    d.mkdir()
    (d / "old.msgpack").write_bytes(base.plan.read_bytes())
    argv = _arith(tmp, "run.limit=2", "--out", str(d / "old.msgpack"), out=False)
    return Case(argv, (str(d / "old.msgpack"),), keep=[d], shell=mount_shell(d, "ro", ["lmeval", *argv]))


@case("overrides")
def compile_out_disk_full(tmp: Path, base: Base) -> Case:
    d = tmp / "full"
    d.mkdir()
    (d / "old.msgpack").write_bytes(b"an older plan")
    argv = _arith(tmp, "--out", str(d / "old.msgpack"), out=False)
    return Case(argv, (str(d / "old.msgpack"),), keep=[d], shell=mount_shell(d, "full", ["lmeval", *argv]))


# ----------------------------------------------------------------------------------------- plans


def _execute(tmp: Path, plan: Path | str, *extra: str) -> list[str]:
    return ["execute", str(plan), FAKE, "--out", str(tmp / "r"), "--no-progress", *extra]


@case("plans")
def plan_is_dev_zero(tmp: Path, base: Base) -> Case:
    return Case(_execute(tmp, "/dev/zero"), ("/dev/zero",), absent=[tmp / "r"], timeout=30)


@case("plans")
def plan_is_a_directory(tmp: Path, base: Base) -> Case:
    return Case(_execute(tmp, tmp), (str(tmp),), absent=[tmp / "r"])


@case("plans")
def plan_is_a_fifo(tmp: Path, base: Base) -> Case:
    os.mkfifo(tmp / "p.msgpack")
    return Case(_execute(tmp, tmp / "p.msgpack"), ("p.msgpack",), absent=[tmp / "r"], timeout=30)


@case("plans")
def plan_truncated(tmp: Path, base: Base) -> Case:
    p = tmp / "p.msgpack"
    p.write_bytes(base.plan.read_bytes()[:-7])
    return Case(_execute(tmp, p), (str(p),), absent=[tmp / "r"])


@case("plans")
def plan_garbage(tmp: Path, base: Base) -> Case:
    p = tmp / "p.msgpack"
    p.write_bytes(os.urandom(4096))
    return Case(_execute(tmp, p), (str(p),), absent=[tmp / "r"])


def _oov(tmp: Path, base: Base, backend: str, token: int) -> Case:
    def edit(rec):  # type: ignore[no-untyped-def]
        ids = list(rec.context_ids or [])
        return replace(rec, context_ids=[token, *ids[1:]]) if rec.doc_id == 1 else rec

    p = forge_plan(base.plan, tmp / "forged.msgpack", edit)
    argv = ["execute", str(p), f"model.backend={backend}", "--out", str(tmp / "r"), "--no-progress"]
    return Case(argv, (str(p), "token id", str(token), "vocabulary"), absent=[tmp / "r" / "manifest.json"], timeout=120)


@case("plans")
def plan_token_id_beyond_vocab_vllm(tmp: Path, base: Base) -> Case:
    return _oov(tmp, base, "vllm", 10**9)


@case("plans")
def plan_token_id_beyond_vocab_hf(tmp: Path, base: Base) -> Case:
    return _oov(tmp, base, "hf", 123456789)


@case("plans")
def plan_negative_token_id_hf(tmp: Path, base: Base) -> Case:
    return _oov(tmp, base, "hf", -5)


@case("plans")
def execute_shard_not_a_number(tmp: Path, base: Base) -> Case:
    return Case(_execute(tmp, base.plan, "--shard", "x/3"), ("x/3",), absent=[tmp / "r"])


@case("plans")
def execute_shard_out_of_range(tmp: Path, base: Base) -> Case:
    return Case(_execute(tmp, base.plan, "--shard", "3/3"), ("3/3",), absent=[tmp / "r"])


@case("plans")
def execute_out_is_a_file(tmp: Path, base: Base) -> Case:
    f = tmp / "r"
    f.write_text("mine")
    return Case(_execute(tmp, base.plan), (str(f),), keep=[f])


@case("plans")
def execute_out_under_proc(tmp: Path, base: Base) -> Case:
    argv = ["execute", str(base.plan), FAKE, "--out", "/proc/lmeval-hostile/r", "--no-progress"]
    return Case(argv, ("/proc/lmeval-hostile",))


@case("plans")
def execute_out_read_only(tmp: Path, base: Base) -> Case:
    r = tmp / "r"
    r.mkdir()
    (r / "note.txt").write_text("mine")
    argv = _execute(tmp, base.plan)
    return Case(argv, (str(r),), keep=[r], shell=mount_shell(r, "ro", ["lmeval", *argv]))


@case("plans")
def execute_out_disk_full(tmp: Path, base: Base) -> Case:
    r = tmp / "r"
    r.mkdir()
    (r / "note.txt").write_text("mine")
    argv = _execute(tmp, base.plan)
    return Case(argv, (str(r),), keep=[r], shell=mount_shell(r, "full", ["lmeval", *argv]))


@case("plans")
def execute_resume_disk_full(tmp: Path, base: Base) -> Case:
    r = copytree(base.results, tmp / "r")
    for part in r.glob("part-*.parquet"):
        part.unlink()  # a killed run: manifest, no rows yet
    argv = _execute(tmp, base.plan)
    return Case(argv, (str(r),), keep=[r], shell=mount_shell(r, "full", ["lmeval", *argv]))


@case("plans")
def execute_reuse_manifest_is_a_list(tmp: Path, base: Base) -> Case:
    src = copytree(base.results, tmp / "old")
    (src / "manifest.json").write_text("[]")
    return Case(
        _execute(tmp, base.plan, "--reuse", str(src)),
        (str(src / "manifest.json"), "object"),
        keep=[src],
        absent=[tmp / "r"],
    )


# ----------------------------------------------------------------------------- results directories


@case("results")
def manifest_is_a_list(tmp: Path, base: Base) -> Case:
    return manifest_case(tmp, base, b"[1, 2]", "object")


@case("results")
def manifest_is_null(tmp: Path, base: Base) -> Case:
    return manifest_case(tmp, base, b"null", "object")


@case("results")
def manifest_not_utf8(tmp: Path, base: Base) -> Case:
    return manifest_case(tmp, base, b'{"plan_hash": "\xff\xfe"}', "UTF-8")


@case("results")
def manifest_is_a_directory(tmp: Path, base: Base) -> Case:
    c = manifest_case(tmp, base, None, "directory")
    m = Path(c.argv[1]) / "manifest.json"
    m.unlink()
    m.mkdir()
    return c


@case("results")
def manifest_is_dev_zero(tmp: Path, base: Base) -> Case:
    c = manifest_case(tmp, base, None, "character device")
    m = Path(c.argv[1]) / "manifest.json"
    m.unlink()
    m.symlink_to("/dev/zero")
    return c


@case("results")
def manifest_plan_hash_is_a_number(tmp: Path, base: Base) -> Case:
    return manifest_case(tmp, base, forged_manifest(base, plan_hash=5), "plan_hash")


@case("results")
def manifest_n_instances_is_a_string(tmp: Path, base: Base) -> Case:
    return manifest_case(tmp, base, forged_manifest(base, n_instances="4"), "n_instances")


@case("results")
def manifest_model_is_a_list(tmp: Path, base: Base) -> Case:
    return manifest_case(tmp, base, forged_manifest(base, model=["tiny"]), "model")


@case("results")
def manifest_stats_value_is_a_string(tmp: Path, base: Base) -> Case:
    return manifest_case(tmp, base, forged_manifest(base, stats={"executed": "many"}), "stats")


@case("results")
def manifest_shard_x_of_3(tmp: Path, base: Base) -> Case:
    return manifest_case(tmp, base, forged_manifest(base, shard="x/3"), "shard")


@case("results")
def manifest_missing_plan_hash(tmp: Path, base: Base) -> Case:
    m = json.loads(forged_manifest(base))
    del m["plan_hash"]
    return manifest_case(tmp, base, json.dumps(m).encode(), "plan_hash")


@case("results")
def manifest_nested_100k_deep(tmp: Path, base: Base) -> Case:
    return manifest_case(
        tmp, base, forged_manifest(base)[:-1] + b', "x": ' + nested(100_000).encode() + b"}", "nested deeper"
    )


@case("results")
def manifest_int_beyond_2_64(tmp: Path, base: Base) -> Case:
    return manifest_case(tmp, base, forged_manifest(base, n_instances=1 << 70), "64-bit")


@case("results")
def manifest_too_large(tmp: Path, base: Base) -> Case:
    return manifest_case(tmp, base, forged_manifest(base, pad="x" * (17 << 20)), "limit")


@case("results")
def merge_shard_x_of_3(tmp: Path, base: Base) -> Case:
    return manifest_case(tmp, base, forged_manifest(base, shard="x/3"), "shard", cmd="merge")


@case("results")
def merge_manifest_is_null(tmp: Path, base: Base) -> Case:
    return manifest_case(tmp, base, b"null", "object", cmd="merge")


@case("results")
def execute_resume_manifest_is_a_list(tmp: Path, base: Base) -> Case:
    return manifest_case(tmp, base, b"[]", "object", cmd="execute")


@case("results")
def execute_resume_manifest_wrong_types(tmp: Path, base: Base) -> Case:
    return manifest_case(tmp, base, forged_manifest(base, backend=None, n_instances=[1]), "backend", cmd="execute")


@case("results")
def score_results_read_only(tmp: Path, base: Base) -> Case:
    r = copytree(base.results, tmp / "r")
    argv = ["score", str(r), "--plan", str(base.plan), "--quiet"]
    return Case(argv, (str(r),), keep=[r], shell=mount_shell(r, "ro", ["lmeval", *argv]))


@case("results")
def score_results_disk_full(tmp: Path, base: Base) -> Case:
    r = copytree(base.results, tmp / "r")
    argv = ["score", str(r), "--plan", str(base.plan), "--quiet"]
    return Case(argv, (str(r),), keep=[r], shell=mount_shell(r, "full", ["lmeval", *argv]))


@case("results")
def score_results_is_a_file(tmp: Path, base: Base) -> Case:
    f = tmp / "r"
    f.write_text("not a dir")
    return Case(["score", str(f), "--plan", str(base.plan), "--quiet"], (str(f),), keep=[f])


@case("results")
def score_plan_is_dev_zero(tmp: Path, base: Base) -> Case:
    r = copytree(base.results, tmp / "r")
    return Case(["score", str(r), "--plan", "/dev/zero", "--quiet"], ("/dev/zero",), keep=[r], timeout=30)
