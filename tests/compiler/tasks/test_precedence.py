"""Lookup order for a task name (docs "lm-eval's task catalog by name"): ``run.include_path`` folders, then
``conf/task/``, then lm-eval's catalog; ``lm_eval:NAME`` names the catalog's entry. Every side of each clash
has different content (its prompt says where it came from), so the test sees which one won. The catalog is
a stand-in folder indexed by the real ``load_catalog`` (lm-eval's own arc_easy.yaml equals conf/task's)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import lmeval.compiler.tasks.select as task_selection
from lmeval.compiler.tasks.lm_eval_catalog import load_catalog
from lmeval.plans import read_plan
from tests.compiler.conftest import data_dir

TASK = """task: {name}
dataset_path: json
dataset_kwargs: {{data_files: {{test: {data}}}}}
test_split: test
output_type: multiple_choice
doc_to_text: "{where} {{{{q}}}}"
doc_to_target: 0
doc_to_choice: ["x", "y"]
"""


@pytest.fixture
def sides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    data = tmp_path / "docs.jsonl"
    data.write_text("".join(json.dumps({"q": f"q{i}"}) + "\n" for i in range(2)))
    cat_root, inc = tmp_path / "lm_eval_tasks", tmp_path / "include"
    for d, where, names in (
        (cat_root, "CATALOG", ("arc_easy", "zz_clash", "zz_cat")),
        (inc, "INCLUDE", ("arc_easy", "zz_clash")),
    ):
        (d / "sub").mkdir(parents=True)
        for n in names:
            (d / "sub" / f"{n}.yaml").write_text(TASK.format(name=n, data=data, where=where))
    cat = load_catalog(cat_root, tmp_path / "cache")
    monkeypatch.setattr(task_selection, "catalog", lambda: cat)
    return {"include": inc, "tmp": tmp_path}


def _prompts(sides: dict[str, Path], cli, *overrides: str) -> dict[str, str]:  # type: ignore[no-untyped-def]
    out = sides["tmp"] / "plan.msgpack"
    out.unlink(missing_ok=True)
    rc, _, err = cli("compile", *overrides, f"run.data_dir={data_dir()}", "run.limit=2", f"--out={out}")
    assert rc == 0, err
    plan = read_plan(out)
    return {i.task: i.context.split(" ", 1)[0] for i in plan.instances if i.doc_id == 0 and i.idx == 0}


def test_include_path_wins_over_conf_task_and_the_catalog(sides: dict[str, Path], cli) -> None:  # type: ignore[no-untyped-def]
    got = _prompts(sides, cli, f"run.include_path={sides['include']}", "run.tasks=[arc_easy,zz_clash,zz_cat]")
    assert got == {"arc_easy": "INCLUDE", "zz_clash": "INCLUDE", "zz_cat": "CATALOG"}


def test_conf_task_wins_over_the_catalog(sides: dict[str, Path], cli) -> None:  # type: ignore[no-untyped-def]
    # zz_cat makes the catalog needed, so both arc_easy entries are in reach
    got = _prompts(sides, cli, "run.tasks=[arc_easy,zz_clash,zz_cat]")
    assert got == {"arc_easy": "Question:", "zz_clash": "CATALOG", "zz_cat": "CATALOG"}


def test_lm_eval_qualifier_names_the_catalogs_entry(sides: dict[str, Path], cli) -> None:  # type: ignore[no-untyped-def]
    got = _prompts(sides, cli, f"run.include_path={sides['include']}", "run.tasks=[lm_eval:arc_easy]")
    assert got == {"arc_easy": "CATALOG"}
