"""The smaller ones: a spec line whose task_id holds a lone surrogate, a task YAML with a boolean key, and
``run.include_path`` at the file-system root (compile and ``lmeval ls``)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.hostile.corpus import MINI_YAML, Base, Case, case, compile_task, spec_line, task_dir


@case("spec")
def spec_validate_task_id_lone_surrogate(tmp: Path, base: Base) -> Case:
    p = tmp / "spec.jsonl"
    p.write_text(json.dumps(spec_line()) + "\n" + json.dumps(spec_line(task_id="t\ud800")) + "\n", encoding="utf-8")
    return Case(["validate", str(p)], (f"{p}:2: ", "t\\ud800", "lone_surrogate"), rc=1)


@case("yaml")
def yaml_boolean_key(tmp: Path, base: Base) -> Case:
    d = task_dir(tmp, MINI_YAML + "true: 1\n")
    return Case(compile_task(d, "mini", base.data, tmp), (str(d / "t.yaml"), "mapping key is True"),
                absent=[tmp / "out.msgpack"])  # fmt: skip


@case("yaml")
def yaml_null_key_nested(tmp: Path, base: Base) -> Case:
    d = task_dir(tmp, MINI_YAML + "metadata:\n  ~: 1\n")
    return Case(compile_task(d, "mini", base.data, tmp), (str(d / "t.yaml"), "mapping key is None"),
                absent=[tmp / "out.msgpack"])  # fmt: skip


@case("overrides")
def override_include_path_is_root(tmp: Path, base: Base) -> Case:
    return Case(["compile", "run.include_path=/", "run.tasks=[mini]", "--out", str(tmp / "o.msgpack")],
                ("run.include_path '/'", "file-system root"), absent=[tmp / "o.msgpack"], timeout=60)  # fmt: skip


@case("overrides")
def ls_include_path_is_root(tmp: Path, base: Base) -> Case:
    return Case(["ls", "--include-path", "/"], ("run.include_path '/'", "file-system root"), timeout=60)
