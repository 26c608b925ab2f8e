"""lm-eval's installed catalog by name, and ``lmeval ls``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lmeval.compiler.config import CONF_DIR, catalog_names
from lmeval.compiler.tasks.lm_eval_catalog import catalog, listing


@pytest.fixture(scope="module")
def lmeval_taskmanager() -> dict[str, list[str]]:
    """lm-eval's own TaskManager names (in a subprocess: indexing takes seconds and imports torch)."""
    code = (
        "import json; from lm_eval.tasks import TaskManager; tm = TaskManager(); "
        "print(json.dumps({'groups': tm.all_groups, 'subtasks': tm.all_subtasks, 'tags': tm.all_tags}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/")
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_catalog_names_equal_lmeval_taskmanager(lmeval_taskmanager: dict[str, list[str]]) -> None:
    cat = catalog()
    assert cat is not None
    by_kind = {k: sorted(n for n, e in cat.index.entries.items() if e.kind == k) for k in ("task", "group", "tag")}
    assert by_kind["task"] == lmeval_taskmanager["subtasks"]
    assert by_kind["group"] == lmeval_taskmanager["groups"]
    assert by_kind["tag"] == lmeval_taskmanager["tags"]
    assert len(cat.index.entries) > 10_000


def test_ls_lists_conf_and_catalog_with_counts(lmeval_taskmanager: dict[str, list[str]], cli) -> None:
    rc, out, _ = cli("ls", "--json")
    assert rc == 0
    rows = [json.loads(line) for line in out.splitlines()]
    by_source: dict[str, list[dict]] = {}
    for r in rows:
        by_source.setdefault(r["source"], []).append(r)
    conf_files = sorted(p.stem for p in (CONF_DIR / "task").glob("*.yaml"))
    assert set(conf_files) <= {r["name"] for r in by_source["conf/task"]}
    assert {"humaneval", "mbpp"} <= set(conf_files)
    lm = by_source["lm-eval"]
    n_lm = sum(len(v) for v in lmeval_taskmanager.values())
    assert len(lm) == n_lm  # every lm-eval name once: plain, or lm_eval:NAME where conf/task shadows it
    arc = next(r for r in rows if r["name"] == "arc_easy")
    assert arc["source"] == "conf/task" and "lm_eval:arc_easy" in arc["note"]
    he = next(r for r in rows if r["name"] == "hellaswag")
    assert (he["kind"], he["output_type"], he["source"]) == ("task", "multiple_choice", "lm-eval")
    rc, out, _ = cli("ls", "groups", "mmlu_*")
    assert rc == 0 and "mmlu_humanities" in out and "hellaswag" not in out
    assert out.strip().splitlines()[-1].endswith("name(s)")


def test_task_override_spelled_as_users_expect() -> None:
    assert catalog_names(["+task=hellaswag"]) == ["run.tasks=[hellaswag]"]
    assert catalog_names(["'+task=[arc_easy,hellaswag]'".strip("'"), "run.tasks=[gsm8k]"]) == [
        "+task=[arc_easy]",
        "run.tasks=[gsm8k,hellaswag]",
    ]
    assert catalog_names(["+task=arc_chalenge"]) == ["+task=arc_chalenge"]  # unknown: Hydra's error says so


def test_compile_by_catalog_name(tmp_path: Path, cli) -> None:
    from tests.compiler.conftest import data_dir

    out = tmp_path / "p.msgpack"
    rc, _, err = cli(
        "compile", "+task=[lm_eval:winogrande,arc_easy]", f"run.data_dir={data_dir()}", "run.limit=2", f"--out={out}"
    )
    assert rc == 0, err
    from lmeval.plans import read_plan

    tasks = {t.name: t for t in read_plan(out).header.tasks}
    assert set(tasks) == {"winogrande", "arc_easy"}


def test_listing_marks_unsupported_python_tasks() -> None:
    rows = [r for r in listing(CONF_DIR / "task") if r.source == "lm-eval" and "Python class" in r.note]
    assert rows  # lm-eval's class-based tasks are listed (TaskManager counts them) but marked


def test_index_cache_is_reused_and_rebuilt_when_a_yaml_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import lmeval.compiler.tasks.lm_eval_catalog as cat_mod

    root = tmp_path / "tasks"
    (root / "a").mkdir(parents=True)
    (root / "a" / "t1.yaml").write_text("task: t1\ntag: [tg]\noutput_type: multiple_choice\n")
    (root / "a" / "g.yaml").write_text("group: g1\ntask: [t1]\n")
    cache = tmp_path / "cache"
    calls: list[int] = []
    real = cat_mod.build_index

    def counting(dirs: list[Path]):  # type: ignore[no-untyped-def]
        calls.append(1)
        return real(dirs)

    monkeypatch.setattr(cat_mod, "build_index", counting)
    first = cat_mod.load_catalog(root, cache)
    assert sorted(first.index.entries) == ["g1", "t1", "tg"] and len(calls) == 1
    again = cat_mod.load_catalog(root, cache)
    assert len(calls) == 1  # read from the cache
    assert again.output_types["t1"] == "multiple_choice" and again.index.entries["tg"].members == ["t1"]
    (root / "a" / "t1.yaml").write_text("task: t2\noutput_type: generate_until\n")  # edited in place
    edited = cat_mod.load_catalog(root, cache)
    assert len(calls) == 2 and "t2" in edited.index.entries and "t1" not in edited.index.entries
    assert len(list(cache.glob("*.json"))) == 1  # the stale index is gone


def test_index_cache_key_is_path_size_and_mtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The documented key, exactly: a same-size edit with another mtime rebuilds (the mtime part), a size
    change with the mtime put back rebuilds (the size part), a renamed file rebuilds (the path part), and an
    edit that keeps size and mtime both is, as documented, not seen (the content is not hashed)."""
    import lmeval.compiler.tasks.lm_eval_catalog as cat_mod

    root = tmp_path / "tasks"
    (root / "a").mkdir(parents=True)
    f = root / "a" / "t.yaml"
    calls: list[int] = []
    real = cat_mod.build_index
    monkeypatch.setattr(cat_mod, "build_index", lambda dirs: calls.append(1) or real(dirs))
    cache = tmp_path / "cache"

    def edit(text: str, mtime_ns: int) -> list[str]:
        f.write_text(text)
        os.utime(f, ns=(mtime_ns, mtime_ns))
        return sorted(cat_mod.load_catalog(root, cache).index.entries)

    t0 = 1_700_000_000_000_000_000
    assert edit("task: t1\n", t0) == ["t1"] and len(calls) == 1
    assert edit("task: t2\n", t0 + 1_000_000) == ["t2"] and len(calls) == 2  # same size, later mtime
    assert edit("task: t3x\n", t0 + 1_000_000) == ["t3x"] and len(calls) == 3  # longer, mtime restored
    assert edit("task: t4x\n", t0 + 1_000_000) == ["t3x"] and len(calls) == 3  # same size and mtime: stale
    f.rename(root / "a" / "u.yaml")
    assert sorted(cat_mod.load_catalog(root, cache).index.entries) == ["t4x"] and len(calls) == 4


def test_dataset_not_under_data_dir_comes_from_the_hub(cli, tmp_path: Path) -> None:
    """run.data_dir serves the datasets it has; hellaswag (not in ../shared/data) goes to the Hub, which is
    offline here: one line saying so and where the local folder was looked for."""
    from tests.compiler.conftest import data_dir

    rc, _, err = cli(
        "compile",
        "run.tasks=[arc_easy,hellaswag]",
        f"run.data_dir={data_dir()}",
        "run.limit=2",
        f"--out={tmp_path / 'p.msgpack'}",
    )
    assert rc == 2
    line = err.strip()
    assert "\n" not in line and "task hellaswag" in line and "datasets library" in line
    assert "run.data_dir has no hellaswag/ folder" in line


def test_catalog_tag_members_are_lmevals_not_conf_tasks() -> None:
    """lm-eval's tag ai2_arc names arc_easy and arc_challenge, which conf/task also defines: inside a catalog
    group or tag, members resolve in the catalog (as in lm-eval's own index); by name alone, conf/task wins."""
    from lmeval.compiler.config import compose
    from lmeval.compiler.runconfig import run_config
    from lmeval.compiler.tasks.select import select_tasks
    from tests.compiler.conftest import data_dir

    cfg = compose(["run.tasks=[ai2_arc]", f"run.data_dir={data_dir()}"])
    sel = select_tasks(cfg, run_config(cfg["run"]))
    assert sorted(s.name for s in sel.tasks) == ["arc_challenge", "arc_easy"]
    assert all("/lm_eval/tasks/arc/" in str(s.source) for s in sel.tasks)
