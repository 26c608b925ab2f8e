"""The smaller ones: a spec line whose task_id holds a lone surrogate, a task YAML with a boolean key,
``run.include_path`` at the file-system root (compile and ``lmeval ls``), and data rows missing the field the
prompt names (or null in it) under ``run.strict_fields=true``."""

from __future__ import annotations

import json
from pathlib import Path

from tests.hostile.corpus import MINI_YAML, Base, Case, case, compile_task, data_dir_with, spec_line, task_dir


@case("spec")
def spec_validate_task_id_lone_surrogate(tmp: Path, base: Base) -> Case:
    p = tmp / "spec.jsonl"
    p.write_text(json.dumps(spec_line()) + "\n" + json.dumps(spec_line(task_id="t\ud800")) + "\n", encoding="utf-8")
    return Case(["validate", str(p)], (f"{p}:2: ", "t\\ud800", "lone_surrogate"), rc=1)


@case("yaml")
def yaml_boolean_key(tmp: Path, base: Base) -> Case:
    d = task_dir(tmp, MINI_YAML + "true: 1\n")
    return Case(
        compile_task(d, "mini", base.data, tmp),
        (str(d / "t.yaml"), "mapping key is True"),
        absent=[tmp / "out.msgpack"],
    )


@case("yaml")
def yaml_null_key_nested(tmp: Path, base: Base) -> Case:
    d = task_dir(tmp, MINI_YAML + "metadata:\n  ~: 1\n")
    return Case(
        compile_task(d, "mini", base.data, tmp),
        (str(d / "t.yaml"), "mapping key is None"),
        absent=[tmp / "out.msgpack"],
    )


@case("overrides")
def override_include_path_is_root(tmp: Path, base: Base) -> Case:
    return Case(
        ["compile", "run.include_path=/", "run.tasks=[mini]", "--out", str(tmp / "o.msgpack")],
        ("run.include_path '/'", "file-system root"),
        absent=[tmp / "o.msgpack"],
        timeout=60,
    )


@case("overrides")
def ls_include_path_is_root(tmp: Path, base: Base) -> Case:
    return Case(["ls", "--include-path", "/"], ("run.include_path '/'", "file-system root"), timeout=60)


@case("data")
def data_prompt_field_missing_or_null_strict(tmp: Path, base: Base) -> Case:
    rows = [{"question": "1 + 1", "answer": "2"}, {"answer": "3"}, {"question": None, "answer": "4"}]
    data = data_dir_with(tmp, [json.dumps(r) for r in rows])
    d = task_dir(tmp, MINI_YAML)
    argv = [*compile_task(d, "mini", data, tmp), "run.strict_fields=true"]
    needles = (
        str(data / "mini" / "test.jsonl"),
        "task mini",
        "field doc_to_text",
        "'question'",
        "in 2 document(s), first doc 1",
        "run.strict_fields",
    )
    return Case(argv, needles, absent=[tmp / "out.msgpack"])
