"""The result store on the ``fake`` backend (#63 items 1-2): a plan run again in another folder computes nothing
and gives the same rows; a plan with one task's prompt changed runs only that task; identical requests in one
plan run once, and the same request asked with other repeats is another request. Counts come from the manifest
and from what reached the engine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from lmeval.executor.backends.fake import FakeBackend
from lmeval.executor.options import RunOptions
from lmeval.executor.run import run_plan
from lmeval.plans.results import read_manifest
from tests.executor import plantools as pt
from tests.executor.conftest import frame

FAKE = ["model.backend=fake"]


class Counting(FakeBackend):
    sent: list[Any] = []

    def score(self, inputs):  # type: ignore[no-untyped-def,override]
        Counting.sent.extend(x.key for x in inputs)
        return super().score(inputs)

    def generate(self, inputs):  # type: ignore[no-untyped-def,override]
        Counting.sent.extend(x.key for x in inputs)
        return super().generate(inputs)


def run(plan: Path, out: Path, store: Path | str | None) -> tuple[pl.DataFrame, list[str], dict[str, int]]:
    """Rows, engine inputs sent and manifest counts of one run with the result store ``store``."""
    Counting.sent = []
    opts = RunOptions(out=str(out), overrides=FAKE, progress=False, store=None if store is None else str(store))
    d = run_plan(str(plan), opts, backend_factory=lambda spec, md: Counting(spec, md))
    return frame(d), list(Counting.sent), read_manifest(d).stats


def subjects(changed: str | None) -> list[pt.Task]:
    """Two 'subjects' (arc_easy slices) and a generation task; ``changed`` gets a description line."""
    out: list[pt.Task] = []
    for k, name in enumerate(("subject_a", "subject_b")):
        prefix = "The following are questions about science.\n\n" if name == changed else ""
        out.append(pt.arc_easy(4, start=4 * k, name=name, prefix=prefix))
    out.append(pt.gsm8k(3, name="gen"))
    return out


def test_second_folder_computes_nothing_and_a_changed_subject_runs_alone(tmp_path: Path) -> None:
    plan, edited = tmp_path / "p.msgpack", tmp_path / "edited.msgpack"
    pt.build(plan, subjects(None))
    pt.build(edited, subjects("subject_b"))
    store = tmp_path / "store"
    first, sent1, stats1 = run(plan, tmp_path / "r1", store)
    assert len(sent1) == first.height and stats1["executed"] == first.height and stats1["stored"] == 0
    assert stats1["store_writes"] == first.height and set(first["source"]) == {"computed"}

    again, sent2, stats2 = run(plan, tmp_path / "elsewhere", store)
    assert sent2 == [] and stats2["executed"] == 0 and stats2["requests"] == 0
    assert stats2["stored"] == first.height and set(again["source"]) == {"stored"}
    assert again.drop("source").equals(first.drop("source"))  # identical answers, floats to the bit

    changed, sent3, stats3 = run(edited, tmp_path / "r3", store)
    b = changed.filter(pl.col("task") == "subject_b")
    assert stats3["executed"] == b.height == len(sent3) and stats3["stored"] == changed.height - b.height
    assert set(b["source"]) == {"computed"} and set(changed.filter(pl.col("task") != "subject_b")["source"]) == {
        "stored"
    }
    assert read_manifest(tmp_path / "r3").store["model_key"] == read_manifest(tmp_path / "r1").store["model_key"]


def test_store_off_computes_everything(tmp_path: Path) -> None:
    plan = tmp_path / "p.msgpack"
    pt.build(plan, subjects(None))
    first, _, _ = run(plan, tmp_path / "r1", "off")
    again, sent, stats = run(plan, tmp_path / "r2", "off")
    assert len(sent) == again.height and stats["stored"] == 0 and read_manifest(tmp_path / "r2").store == {"seed": 1234}


def test_default_store_follows_the_environment(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("LMEVAL_STORE_DIR", str(tmp_path / "envstore"))
    plan = tmp_path / "p.msgpack"
    pt.build(plan, subjects(None))
    run(plan, tmp_path / "r1", None)
    _, sent, _ = run(plan, tmp_path / "r2", None)
    assert sent == [] and (tmp_path / "envstore" / "answers.sqlite").is_file()


def _same_request_in_two_tasks(repeats_b: int) -> list[pt.Task]:
    a = pt.gsm8k(2, name="task_a")
    b = pt.gsm8k(2, name="task_b", repeats=repeats_b)
    return [a, b, pt.arc_easy(2, name="mc_a"), pt.arc_easy(2, name="mc_b")]


def test_a_request_repeated_across_two_tasks_executes_once(tmp_path: Path) -> None:
    plan = tmp_path / "p.msgpack"
    pt.build(plan, _same_request_in_two_tasks(1))
    rows, sent, stats = run(plan, tmp_path / "r", "off")
    assert sorted(set(rows["task"])) == ["mc_a", "mc_b", "task_a", "task_b"]
    assert len(sent) == rows.height // 2 and stats["requests"] == rows.height // 2 and stats["executed"] == rows.height
    a = rows.filter(pl.col("task").is_in(["task_a", "mc_a"])).sort("task", "doc_id", "idx")
    b = rows.filter(pl.col("task").is_in(["task_b", "mc_b"])).sort("task", "doc_id", "idx")
    cols = ["request_hash", "loglikelihood", "response", "responses"]
    assert a.select(cols).equals(b.select(cols))  # every Instance has its row, with the one answer


def test_the_same_request_with_other_repeats_is_another_request(tmp_path: Path) -> None:
    plan = tmp_path / "p.msgpack"
    pt.build(plan, _same_request_in_two_tasks(3))
    rows, sent, _ = run(plan, tmp_path / "r", "off")
    gen = rows.filter(pl.col("request_type") == "generate_until")
    assert gen.group_by("task").agg(pl.col("responses").list.len().max()).sort("task").rows() == [
        ("task_a", 1),
        ("task_b", 3),
    ]
    assert len([k for k in sent if k in set(gen["request_hash"])]) == 4  # both askings of both documents


def test_cache_ls_and_prune_bound_the_store(tmp_path: Path) -> None:
    from tests.support import cli_in_process as cli

    plan = tmp_path / "p.msgpack"
    pt.build(plan, subjects(None))
    store = tmp_path / "store"
    rows, _, _ = run(plan, tmp_path / "r1", store)
    rc, out, err = cli("cache", "ls", "--store", str(store))
    assert rc == 0, err
    assert f"entries: {rows.height} answers of 1 model setting(s)" in out and "on disk" in out
    rc, out, err = cli("cache", "prune", "--store", str(store), "--max-size", "2000")
    assert rc == 0, err
    left = int(out.split("; ")[1].split()[0])
    assert 0 < left < rows.height  # the least recently used went; the rest still serve
    _, sent, stats = run(plan, tmp_path / "r2", store)
    assert stats["stored"] == left and len(sent) == rows.height - left
    rc, out, err = cli("cache", "prune", "--store", str(store), "--older-than", "0s")
    assert rc == 0 and out.startswith(f"removed {rows.height} entries; 0 left"), (out, err)
    rc, out, err = cli("cache", "prune", "--store", str(store), "--all")
    assert rc == 0 and not (store / "answers.sqlite").exists()
    rc, out, err = cli("cache", "prune", "--store", str(store), "--max-size", "lots")
    assert rc == 2 and err.count("\n") == 1 and "--max-size 'lots'" in err


def _sampled_and_greedy(repeats: int) -> list[pt.Task]:
    sampled = pt.gsm8k(2, name="sampled", extra={"do_sample": True, "temperature": 0.8}, repeats=repeats)
    return [sampled, pt.gsm8k(2, name="greedy"), pt.arc_easy(2)]


def _reuse_run(plan: Path, out: Path, reuse: Path | None, *model: str) -> pl.DataFrame:
    Counting.sent = []
    opts = RunOptions(out=str(out), overrides=[*FAKE, *model], progress=False, store="off",
                      reuse=str(reuse) if reuse else None)  # fmt: skip
    return frame(run_plan(str(plan), opts, backend_factory=lambda spec, md: Counting(spec, md)))


def test_reuse_serves_a_sampled_generation_only_for_the_same_seed_and_repeats(tmp_path: Path) -> None:
    plan, more = tmp_path / "p.msgpack", tmp_path / "more.msgpack"
    pt.build(plan, _sampled_and_greedy(2))
    pt.build(more, _sampled_and_greedy(3))
    _reuse_run(plan, tmp_path / "r1", None)
    same = _reuse_run(plan, tmp_path / "same", tmp_path / "r1")
    assert set(same["source"]) == {"reused"}
    other_seed = _reuse_run(plan, tmp_path / "seed7", tmp_path / "r1", "model.seed=7")
    src = dict(other_seed.group_by("task").agg(pl.col("source").unique().sort()).rows())
    assert src == {"sampled": ["computed"], "greedy": ["reused"], "arc_easy": ["reused"]}
    other_repeats = _reuse_run(more, tmp_path / "n3", tmp_path / "r1")
    sampled = other_repeats.filter(pl.col("task") == "sampled")
    assert set(sampled["source"]) == {"computed"} and set(sampled["responses"].list.len()) == {3}


def test_answered_ids_names_what_an_execute_would_not_compute(tmp_path: Path) -> None:
    from lmeval.executor.instances import load_instances
    from lmeval.executor.storeuse import answered_ids

    plan, edited = tmp_path / "p.msgpack", tmp_path / "edited.msgpack"
    pt.build(plan, subjects(None))
    pt.build(edited, subjects("subject_b"))
    store = tmp_path / "store"
    header, instances = load_instances(str(edited), None)
    assert answered_ids(str(edited), header, instances, FAKE, str(store)) == set() and not store.exists()
    run(plan, tmp_path / "r1", store)
    got = answered_ids(str(edited), header, instances, FAKE, str(store))
    assert got == {i.instance_id for i in instances if i.task != "subject_b"}
    _, sent, stats = run(edited, tmp_path / "r2", store)
    assert stats["stored"] == len(got) and len(sent) == len(instances) - len(got)
