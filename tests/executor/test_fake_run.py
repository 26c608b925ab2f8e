"""Executor behaviour that does not depend on the model, on the deterministic ``fake`` backend: results
layout, determinism, kill-and-resume, shards and merge, bad input, ``--reuse``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from lmeval.executor import execute, merge
from lmeval.executor.backends.fake import FakeBackend
from lmeval.executor.errors import ExecuteError
from lmeval.executor.options import RunOptions
from lmeval.executor.run import run_plan
from lmeval.plans.plan import read_plan, shard_of
from lmeval.plans.results import RESULT_COLUMNS, part_files, read_manifest
from tests.executor import plantools as pt
from tests.executor.conftest import REPO, frame, run_cli, snapshot

FAKE = ["model.backend=fake"]


@pytest.fixture(scope="module")
def reference(mixed_plan: Path, tmp_path_factory: pytest.TempPathFactory) -> pl.DataFrame:
    out = execute(str(mixed_plan), out=str(tmp_path_factory.mktemp("ref") / "r"), overrides=FAKE, progress=False)
    return frame(out)


def test_results_cover_the_plan_once_with_the_schema(mixed_plan: Path, reference: pl.DataFrame) -> None:
    plan = read_plan(mixed_plan)
    assert list(reference.columns) == list(RESULT_COLUMNS)
    assert sorted(reference["instance_id"].to_list()) == sorted(i.instance_id for i in plan.instances)
    by_type = {
        t: reference.filter(pl.col("request_type") == t)
        for t in ("loglikelihood", "generate_until", "loglikelihood_rolling")
    }
    ll = by_type["loglikelihood"]
    assert ll["loglikelihood"].null_count() == 0 and ll["is_greedy"].null_count() == 0
    assert ll["response"].null_count() == ll.height
    gen = by_type["generate_until"]
    assert gen["response"].null_count() == 0
    assert (gen["response"] == gen["responses"].list.first()).all()
    # the fake sometimes appends the first stop string and more: lm-eval's post-processing cuts it
    assert not gen["response"].str.contains("Question:").any()
    roll = by_type["loglikelihood_rolling"]
    assert roll["is_greedy"].null_count() == roll.height and roll["loglikelihood"].null_count() == 0
    req_hash = {i.instance_id: i.request_hash for i in plan.instances}
    assert all(req_hash[r["instance_id"]] == r["request_hash"] for r in reference.iter_rows(named=True))


def test_same_plan_twice_gives_identical_results(mixed_plan: Path, reference: pl.DataFrame, tmp_path: Path) -> None:
    out = execute(str(mixed_plan), out=str(tmp_path / "again"), overrides=FAKE, progress=False, part_size=7)
    assert frame(out).equals(reference)  # a test's own result store: computed again, the same bytes
    m = read_manifest(out)
    assert m.finished and m.n_instances == reference.height and m.stats["executed"] == reference.height


def test_cli_prints_results_dir_last_and_default_name(mixed_plan: Path, tmp_path: Path) -> None:
    r = run_cli("execute", str(mixed_plan), *FAKE, "--no-progress", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    last = r.stdout.strip().splitlines()[-1]
    plan_hash = read_plan(mixed_plan).header.plan_hash
    assert last == f"results/{plan_hash[:12]}-tiny"
    assert (tmp_path / last / "manifest.json").is_file()
    # rerunning a finished directory does nothing and prints the same path
    r2 = run_cli("execute", str(mixed_plan), *FAKE, "--no-progress", cwd=tmp_path)
    assert r2.returncode == 0 and r2.stdout.strip().splitlines()[-1] == last


# --------------------------------------------------------------------------------------- kill & resume


def _assert_resumed_equal(out: Path, reference: pl.DataFrame, before: int) -> None:
    df = frame(out)  # raises on a duplicated instance id
    assert df.drop("source").equals(reference.drop("source"))
    stats = read_manifest(out).stats
    assert stats["resumed"] == before
    # nothing already written was recomputed; what the killed run stored but had not written comes from the store
    assert stats["executed"] + stats["stored"] == reference.height - before
    assert set(df["source"]) <= {"computed", "stored"}


@pytest.mark.parametrize("fault", ["manifest:1", "part-tmp:1", "part:1", "part-tmp:4", "part:6"])
def test_sigkill_at_fault_points_then_resume(
    fault: str, mixed_plan: Path, reference: pl.DataFrame, tmp_path: Path
) -> None:
    out = tmp_path / "r"
    args = ("execute", str(mixed_plan), *FAKE, "--no-progress", "--part-size", "9", "--out", str(out))
    r = run_cli(*args, env={"LMEVAL_EXECUTOR_FAULT": fault})
    assert r.returncode == -signal.SIGKILL, (r.returncode, r.stderr)
    before = sum(pl.read_parquet(p).height for p in part_files(out))
    if fault.startswith("part-tmp"):
        assert list(out.glob(".part-*.tmp")), "the killed run left its temporary part behind"
    r = run_cli(*args)
    assert r.returncode == 0, r.stderr
    assert not list(out.glob(".part-*.tmp"))
    _assert_resumed_equal(out, reference, before)


def test_sigkill_mid_run_at_random_moments(mixed_plan: Path, reference: pl.DataFrame, tmp_path: Path) -> None:
    """A slow fake run killed from outside three times, at different moments, then finished."""
    out = tmp_path / "r"
    args = [
        sys.executable,
        "-m",
        "lmeval",
        "execute",
        str(mixed_plan),
        *FAKE,
        "model.engine.delay_s=0.01",
        "--no-progress",
        "--part-size",
        "5",
        "--out",
        str(out),
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("LMEVAL_EXECUTOR_FAULT", None)
    for wait_parts, extra_s in ((1, 0.0), (3, 0.013), (6, 0.029)):
        start = len(part_files(out)) if out.exists() else 0
        proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while (len(part_files(out)) if out.exists() else 0) < start + wait_parts:
            assert proc.poll() is None, "the run finished before it could be killed"
            assert time.monotonic() < deadline
            time.sleep(0.005)
        time.sleep(extra_s)
        proc.send_signal(signal.SIGKILL)
        assert proc.wait() == -signal.SIGKILL
    before = sum(pl.read_parquet(p).height for p in part_files(out))
    assert 0 < before < reference.height
    r = subprocess.run(args, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    _assert_resumed_equal(out, reference, before)


# ---------------------------------------------------------------------------------------- shards


def test_shards_merged_equal_unsharded(
    mixed_plan: Path, reference: pl.DataFrame, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    dirs = [execute(str(mixed_plan), overrides=FAKE, shard=f"{i}/3", progress=False) for i in range(3)]
    assert len({d.name for d in dirs}) == 3 and all(d.name.endswith(f"-shard{i}of3") for i, d in enumerate(dirs))
    for i, d in enumerate(dirs):
        ids = frame(d)["instance_id"].to_list()
        assert ids and all(shard_of(x, 3) == i for x in ids)
        assert read_manifest(d).shard == f"{i}/3"
    r = run_cli("merge", *map(str, dirs), "--out", str(tmp_path / "merged"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == str(tmp_path / "merged")
    # identical requests of two shards were computed once (the test's result store): the answers are the same
    assert frame(tmp_path / "merged").drop("source").equals(reference.drop("source"))
    m = read_manifest(tmp_path / "merged")
    assert m.shard is None and m.n_instances == reference.height


def test_merge_refuses_bad_shard_sets(mixed_plan: Path, tmp_path: Path) -> None:
    d = {
        i: execute(str(mixed_plan), out=str(tmp_path / f"s{i}"), overrides=FAKE, shard=f"{i}/3", progress=False)
        for i in range(3)
    }
    other = tmp_path / "other.msgpack"
    pt.build(other, [pt.arc_easy(5)])
    o0 = execute(str(other), out=str(tmp_path / "o0"), overrides=FAKE, shard="0/3", progress=False)
    dup = tmp_path / "s1copy"
    dup.mkdir()
    for p in d[1].iterdir():
        (dup / p.name).write_bytes(p.read_bytes())
    cases = {
        "missing": ([d[0], d[1]], "missing shard(s) 2/3"),
        "overlap": ([d[0], d[1], dup, d[2]], "overlaps"),
        "plans": ([d[0], d[1], o0], "merge only combines shards of one plan"),
    }
    for name, (dirs, msg) in cases.items():
        r = run_cli("merge", *map(str, dirs), "--out", str(tmp_path / f"m-{name}"))
        assert r.returncode == 2, (name, r.stderr)
        assert msg in r.stderr and len(r.stderr.strip().splitlines()) == 1
        assert not (tmp_path / f"m-{name}").exists()
    # an unfinished shard: its last part is gone
    part_files(d[2])[-1].unlink()
    with pytest.raises(ExecuteError, match="unfinished"):
        merge([str(x) for x in d.values()], str(tmp_path / "m-unfinished"))


# ------------------------------------------------------------------------------------------ bad input


def _expect_error(args: Sequence[str], msg: str, cwd: Path | None = None) -> None:
    r = run_cli("execute", *args, "--no-progress", cwd=cwd)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("lmeval execute: error:") and msg in lines[0], r.stderr
    assert "Traceback" not in r.stderr


def test_bad_inputs_exit_2_and_touch_nothing(mixed_plan: Path, tmp_path: Path, tiny_model: Path) -> None:
    good = tmp_path / "good"
    execute(str(mixed_plan), out=str(good), overrides=FAKE, progress=False)
    before = snapshot(good)
    data = mixed_plan.read_bytes()

    truncated = tmp_path / "truncated.msgpack"
    truncated.write_bytes(data[: len(data) - 200])
    from lmeval.plans.plan.io import recode_plan

    modified = tmp_path / "modified.msgpack"
    recode_plan(mixed_plan, modified, "none")  # the same plan, records stored uncompressed, then edited
    plain = modified.read_bytes()
    i = plain.rindex(b"Question:")
    modified.write_bytes(plain[:i] + b"Qvestion:" + plain[i + 9 :])
    from lmeval.plans.plan import canonical_bytes

    plan = read_plan(mixed_plan)
    hdr = plan.header.to_dict() | {"version": 99}
    head_len = len(canonical_bytes(plan.header.to_dict()))
    future = tmp_path / "future.msgpack"
    future.write_bytes(canonical_bytes(hdr) + data[head_len:])
    other_tok = tmp_path / "other-model"
    other_tok.mkdir()
    for f in tiny_model.iterdir():
        (other_tok / f.name).write_bytes(f.read_bytes())
    tj = (other_tok / "tokenizer.json").read_text()
    (other_tok / "tokenizer.json").write_text(tj.replace('"Question"', '"Qvestion"', 1))
    other_plan = tmp_path / "other.msgpack"
    pt.build(other_plan, [pt.arc_easy(3)])

    cases = [
        ([str(truncated), *FAKE, "--out", str(good)], "truncated or modified plan"),
        # an edited request no longer hashes to its request_hash: refused before the plan hash is
        # (plans/plan/validate.py)
        ([str(modified), *FAKE, "--out", str(good)], "request_hash: is not the hash of the request's content"),
        ([str(future), *FAKE, "--out", str(good)], "plan format version 99"),
        # into a fresh directory: only the tokenizer check can refuse it (not the results already in good)
        (
            [str(mixed_plan), *FAKE, f"model.path={other_tok}", "--out", str(tmp_path / "fresh")],
            f"the model's tokenizer ({other_tok}/tokenizer.json, sha256 ",
        ),
        ([str(other_plan), *FAKE, "--out", str(good)], "holds results of another plan"),
        ([str(mixed_plan), "model.backend=fake", "model.max_model_len=99", "--out", str(good)], "max_model_len"),
        ([str(mixed_plan), *FAKE, "--shard", "1/3", "--out", str(good)], "holds shard all"),
        ([str(mixed_plan), *FAKE, "--shard", "3/3"], "expected I/N"),
        ([str(mixed_plan), "model.backend=tpu"], "unknown backend"),
        ([str(mixed_plan), "run.limit=3"], "only takes model overrides"),
        ([str(mixed_plan), "model=nonexistent"], "no model config"),
        ([str(tmp_path / "missing.msgpack")], "cannot open plan"),
    ]
    for args, msg in cases:
        _expect_error(args, msg, cwd=tmp_path)
        assert snapshot(good) == before, args
    assert not (tmp_path / "results").exists() and not (tmp_path / "fresh").exists()


def test_model_override_loads_the_named_config(mixed_plan: Path, tmp_path: Path) -> None:
    out = execute(
        str(mixed_plan),
        out=str(tmp_path / "r"),
        overrides=["model=tiny", *FAKE, "model.max_model_len=512"],
        progress=False,
    )
    m = read_manifest(out)
    assert m.backend == "fake" and m.model["max_model_len"] == 512 and m.model["name"] == "tiny"


# ---------------------------------------------------------------------------------------------- reuse


class CountingFake(FakeBackend):
    sent: list[Any] = []

    def score(self, inputs):  # type: ignore[no-untyped-def,override]
        CountingFake.sent.extend(x.key for x in inputs)
        return super().score(inputs)

    def generate(self, inputs):  # type: ignore[no-untyped-def,override]
        CountingFake.sent.extend(x.key for x in inputs)
        return super().generate(inputs)


def _ten_tasks(changed: int | None) -> list[pt.Task]:
    tasks: list[pt.Task] = []
    for k in range(10):
        name = f"arc_part{k}"
        prefix = "Answer carefully.\n" if k == changed else ""
        if k == 9:
            tasks.append(pt.gsm8k(3, start=3 * k, name=name, extra={"max_gen_toks": 20 if k == changed else 24}))
        else:
            tasks.append(pt.arc_easy(3, start=3 * k, name=name, prefix=prefix))
    return tasks


def _run_counting(plan: Path, out: Path, reuse: Path | None = None) -> tuple[pl.DataFrame, list[str]]:
    """A run that counts what reaches the engine; ``--reuse`` alone (no result store: ``run.store=off``)."""
    CountingFake.sent = []
    opts = RunOptions(out=str(out), overrides=FAKE, reuse=str(reuse) if reuse else None, progress=False, part_size=8,
                      store="off")  # fmt: skip
    d = run_plan(str(plan), opts, backend_factory=lambda spec, md: CountingFake(spec, md))
    return frame(d), list(CountingFake.sent)


@pytest.mark.parametrize("changed", [3, 9])
def test_reuse_runs_only_changed_instances(changed: int, tmp_path: Path) -> None:
    v1, v2 = tmp_path / "v1.msgpack", tmp_path / "v2.msgpack"
    pt.build(v1, _ten_tasks(None))
    pt.build(v2, _ten_tasks(changed))
    old, _ = _run_counting(v1, tmp_path / "r1")
    full, sent_full = _run_counting(v2, tmp_path / "full")
    inc, sent = _run_counting(v2, tmp_path / "inc", reuse=tmp_path / "r1")
    n_changed = sum(len(i) for _, _, docs in [_ten_tasks(changed)[changed]] for _, i in docs)
    assert len(sent) == n_changed and len(sent_full) == full.height
    stats = read_manifest(tmp_path / "inc").stats
    assert stats["executed"] == n_changed and stats["reused"] == full.height - n_changed
    assert inc.drop("source").equals(full.drop("source"))  # each row says where its answer came from
    assert inc["source"].value_counts(sort=True).rows() == sorted(
        [("reused", full.height - n_changed), ("computed", n_changed)], key=lambda r: -r[1]
    )
    assert set(inc.filter(pl.col("task") == f"arc_part{changed}")["request_hash"]).isdisjoint(set(old["request_hash"]))


def test_scoring_only_change_reexecutes_nothing(tmp_path: Path) -> None:
    v1, v3 = tmp_path / "v1.msgpack", tmp_path / "v3.msgpack"
    tasks = _ten_tasks(None)
    h1 = pt.build(v1, tasks)
    h3 = pt.build(v3, tasks, extra_config={"scoring": {"bootstrap_iters": 10}})
    assert h1.plan_hash != h3.plan_hash
    old, _ = _run_counting(v1, tmp_path / "r1")
    new, sent = _run_counting(v3, tmp_path / "r3", reuse=tmp_path / "r1")
    assert sent == [] and new.drop("source").equals(old.drop("source"))
    assert set(new["source"]) == {"reused"} and set(old["source"]) == {"computed"}
    assert read_manifest(tmp_path / "r3").plan_hash == h3.plan_hash


def test_reuse_refuses_another_model(tmp_path: Path) -> None:
    v1 = tmp_path / "v1.msgpack"
    pt.build(v1, _ten_tasks(None))
    execute(str(v1), out=str(tmp_path / "r1"), overrides=FAKE, progress=False)
    with pytest.raises(ExecuteError, match="max_model_len"):
        execute(
            str(v1),
            out=str(tmp_path / "r2"),
            overrides=[*FAKE, "model.max_model_len=256"],
            reuse=str(tmp_path / "r1"),
            progress=False,
        )
    assert not (tmp_path / "r2").exists()


@pytest.mark.parametrize("change", ["backend", "path", "tokenizer_hash"])
def test_reuse_refuses_another_backend_model_path_or_tokenizer(change: str, tmp_path: Path, tiny_model: Path) -> None:
    """Answers are reused only from the same model: another backend, another model directory, or results
    whose manifest records another tokenizer are each refused before anything is written."""
    import json
    import shutil

    v1 = tmp_path / "v1.msgpack"
    pt.build(v1, _ten_tasks(None))
    execute(str(v1), out=str(tmp_path / "r1"), overrides=FAKE, progress=False)
    overrides = list(FAKE)
    if change == "backend":
        overrides = ["model.backend=hf"]
    elif change == "path":
        copy = tmp_path / "tiny-copy"
        shutil.copytree(tiny_model, copy)
        overrides.append(f"model.path={copy}")
    else:
        m = tmp_path / "r1" / "manifest.json"
        d = json.loads(m.read_text())
        d["model"]["tokenizer_hash"] = "f" * 64
        m.write_text(json.dumps(d))
    with pytest.raises(ExecuteError, match=f"--reuse .*model {change}="):
        execute(str(v1), out=str(tmp_path / "r2"), overrides=overrides, reuse=str(tmp_path / "r1"), progress=False)
    assert not (tmp_path / "r2").exists()


def test_equal_requests_run_once(tmp_path: Path) -> None:
    plan = tmp_path / "dup.msgpack"
    pt.build(plan, [pt.arc_easy(4, name="a"), pt.arc_easy(4, name="b")])
    df, sent = _run_counting(plan, tmp_path / "r")
    assert df.height == 32 and len(sent) == 16
    a = df.filter(pl.col("task") == "a").sort("doc_id", "idx")
    b = df.filter(pl.col("task") == "b").sort("doc_id", "idx")
    assert a["loglikelihood"].equals(b["loglikelihood"])


def test_progress_bar_runs_on_a_terminal(mixed_plan: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    buf = io.StringIO()
    buf.isatty = lambda: True  # type: ignore[method-assign]
    monkeypatch.setattr(sys, "stderr", buf)
    out = execute(str(mixed_plan), out=str(tmp_path / "r"), overrides=FAKE, progress=True, part_size=50)
    n = read_plan(mixed_plan).header.n_instances
    assert "tok/s" in buf.getvalue() and f"{n}/{n}" in buf.getvalue()
    assert frame(out).height == n
