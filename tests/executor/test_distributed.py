"""One plan on many engines (executor/pool/) on a two-node Ray cluster on loopback with logical GPUs
(``ray.cluster_utils.Cluster``, 4 GPUs per node, started once for the module): any worker count gives the
rows of a single-process run; a worker killed mid-chunk and a SIGKILLed driver lose and duplicate nothing; a
chunk that keeps failing stops the run with one line; two real vLLM engines give a single-process run's
results."""

from __future__ import annotations

import io
import re
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from lmeval.executor import execute, merge
from lmeval.executor.errors import ExecuteError
from lmeval.executor.pool.chunkstore import CHUNK_PART_RE
from lmeval.plans.results import part_files, read_manifest
from tests.executor.conftest import frame, run_cli
from tests.support import row_diffs

FAKE = ["model.backend=fake"]
SLOW = [*FAKE, "model.engine.delay_s=0.004"]  # per request: chunks take long enough to be killed mid-way
CHUNK = 8


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    import ray
    from ray.cluster_utils import Cluster

    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "num_gpus": 4, "include_dashboard": False})
    c.add_node(num_cpus=1, num_gpus=4)
    ray.init(address=c.address, include_dashboard=False, log_to_driver=False)
    try:
        yield c.address
    finally:
        ray.shutdown()
        c.shutdown()


@pytest.fixture(scope="module")
def reference(mixed_plan: Path, tmp_path_factory: pytest.TempPathFactory) -> pl.DataFrame:
    out = execute(str(mixed_plan), out=str(tmp_path_factory.mktemp("ref") / "r"), overrides=FAKE, progress=False)
    return frame(out)


def _chunk_parts(out: Path) -> list[Path]:
    return [p for p in part_files(out) if CHUNK_PART_RE.match(p.name)]


@pytest.mark.parametrize("workers", [1, 2, 4, 8])
def test_any_worker_count_gives_the_single_process_rows(
    workers: int,
    cluster: str,
    mixed_plan: Path,
    reference: pl.DataFrame,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bar = io.StringIO()
    bar.isatty = lambda: True  # type: ignore[method-assign]
    monkeypatch.setattr(sys, "stderr", bar)
    out = execute(
        str(mixed_plan), out=str(tmp_path / "r"), overrides=FAKE, progress=True, workers=workers, ray=cluster,
        chunk_size=CHUNK,
    )  # fmt: skip
    assert frame(out).equals(reference)
    n = reference.height
    assert f"executing on {workers} workers" in bar.getvalue() and f"{n}/{n}" in bar.getvalue()  # one bar
    m = read_manifest(out)
    ex = m.execution
    assert ex["workers"] == workers and ex["gpus_per_worker"] == 1 and ex["chunk_size"] == CHUNK
    assert ex["chunks"] == len(_chunk_parts(out)) == len(part_files(out)) > 2 * 8
    assert m.finished and m.stats["executed"] == reference.height and ex["retries"] == 0
    assert sum(ex["chunks_by_node"].values()) == ex["chunks"] == sum(w["chunks"] for w in ex["per_worker"])
    if workers == 8:  # 4 GPUs per node: eight one-GPU engines span both nodes
        assert len(ex["chunks_by_node"]) == 2


def test_two_nodes_run_shards_that_merge_exactly_once(
    cluster: str, mixed_plan: Path, reference: pl.DataFrame, tmp_path: Path
) -> None:
    """Slurm-style shards, each spread over both nodes (four two-GPU engines), merged: every Instance once."""
    dirs = [
        str(execute(str(mixed_plan), out=str(tmp_path / f"s{i}"), overrides=FAKE, progress=False, shard=f"{i}/2",
                    ray=cluster, workers=4, gpus_per_worker=2, chunk_size=CHUNK))
        for i in range(2)
    ]  # fmt: skip
    for d in dirs:
        assert len(read_manifest(d).execution["chunks_by_node"]) == 2
    merged = merge(dirs, str(tmp_path / "merged"))
    assert frame(merged).equals(reference)
    ids = pl.concat([pl.read_parquet(p, columns=["instance_id"]) for p in part_files(merged)])["instance_id"]
    assert ids.len() == ids.n_unique() == reference.height


def test_worker_killed_mid_chunk_loses_and_duplicates_nothing(
    cluster: str, mixed_plan: Path, reference: pl.DataFrame, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "killed"
    monkeypatch.setenv("LMEVAL_WORKER_FAULT", "worker-rows:5")  # SIGKILL a worker at its 5th answer...
    monkeypatch.setenv("LMEVAL_EXECUTOR_FAULT_ONCE", str(marker))  # ...once: the restarted worker runs on
    out = execute(
        str(mixed_plan), out=str(tmp_path / "r"), overrides=SLOW, progress=False, workers=4, ray=cluster,
        chunk_size=CHUNK,
    )  # fmt: skip
    assert marker.exists(), "no worker was killed"
    ex = read_manifest(out).execution
    assert ex["retries"] >= 1
    assert frame(out).equals(reference)
    assert read_manifest(out).stats["executed"] == reference.height


def test_a_chunk_that_keeps_killing_its_worker_stops_the_run(
    cluster: str, mixed_plan: Path, reference: pl.DataFrame, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "r"
    monkeypatch.setenv("LMEVAL_WORKER_FAULT", "chunk-5:1")  # every worker that starts chunk 5 dies
    with pytest.raises(ExecuteError) as e:
        execute(str(mixed_plan), out=str(out), overrides=FAKE, progress=False, workers=2, ray=cluster,
                chunk_size=CHUNK)  # fmt: skip
    msg = str(e.value)
    assert "\n" not in msg and "chunk 5 (" in msg and "failed 3 times" in msg and "died" in msg, msg
    kept = _chunk_parts(out)
    assert kept and not any(CHUNK_PART_RE.match(p.name).group(1) == "000005" for p in kept)  # type: ignore[union-attr]
    before = sum(pl.read_parquet(p).height for p in kept)
    monkeypatch.delenv("LMEVAL_WORKER_FAULT")
    execute(str(mixed_plan), out=str(out), overrides=FAKE, progress=False)  # a single process finishes it
    assert frame(out).equals(reference)
    stats = read_manifest(out).stats
    assert stats["resumed"] == before and stats["executed"] == reference.height - before


def test_driver_sigkilled_then_rerun_loses_and_duplicates_nothing(
    cluster: str, mixed_plan: Path, reference: pl.DataFrame, tmp_path: Path
) -> None:
    out = tmp_path / "r"
    args = ("execute", str(mixed_plan), *SLOW, "--no-progress", "--ray", cluster, "--workers", "4",
            "--chunk-size", str(CHUNK), "--out", str(out))  # fmt: skip
    r = run_cli(*args, env={"LMEVAL_EXECUTOR_FAULT": "chunk-part:3"})
    assert r.returncode == -signal.SIGKILL, (r.returncode, r.stderr[-3000:])
    assert len(_chunk_parts(out)) == 3
    before = sum(pl.read_parquet(p).height for p in part_files(out))
    r = run_cli(*args)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip().splitlines()[-1] == str(out)
    assert frame(out).equals(reference)
    stats = read_manifest(out).stats
    assert stats["resumed"] == before and stats["executed"] == reference.height - before


def test_bad_pool_requests_are_one_line_errors(cluster: str, mixed_plan: Path, tmp_path: Path) -> None:
    cases: list[tuple[dict[str, Any], str]] = [
        ({"workers": 9}, "needs 9 GPUs; the Ray cluster has 8"),
        ({"workers": 0}, "must be at least 1"),
        ({"workers": 2, "gpus_per_worker": 5.0}, "needs 10 GPUs"),
        ({"chunk_size": 8}, "apply to runs with --workers"),
    ]
    for kw, want in cases:
        ray = cluster if kw.get("workers", 1) != 1 else None
        with pytest.raises(ExecuteError, match=want):
            execute(str(mixed_plan), out=str(tmp_path / "r"), overrides=FAKE, progress=False, ray=ray, **kw)
        assert not (tmp_path / "r").exists()  # nothing written before the checks pass


def test_cli_workers_on_one_machine_start_and_stop_their_own_ray(
    mixed_plan: Path, reference: pl.DataFrame, tmp_path: Path
) -> None:
    out = tmp_path / "r"
    r = run_cli("execute", str(mixed_plan), *FAKE, "--workers", "2", "--no-progress", "--out", str(out))
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip().splitlines()[-1] == str(out)
    assert frame(out).equals(reference)
    ex = read_manifest(out).execution
    assert ex["workers"] == 2 and ex["ray_address"] == "local" and ex["gpus_per_worker"] == 0


def test_cli_without_a_cluster_is_a_one_line_error(mixed_plan: Path, tmp_path: Path) -> None:
    r = run_cli("execute", str(mixed_plan), *FAKE, "--ray", "127.0.0.1:1", "--out", str(tmp_path / "r"),
                timeout=120)  # fmt: skip
    assert r.returncode == 2, r.stderr[-2000:]
    assert "--ray 127.0.0.1:1: cannot connect to a Ray cluster" in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.vllm
def test_two_vllm_engines_give_the_single_process_results(cluster: str, mixed_plan: Path, tmp_path: Path) -> None:
    # no result store: both runs compute every answer (the second would otherwise take the first's)
    single = frame(execute(str(mixed_plan), out=str(tmp_path / "one"), progress=False, store="off"))
    out = execute(str(mixed_plan), out=str(tmp_path / "two"), progress=False, workers=2, ray=cluster, store="off")
    two = frame(out)
    # batch composition differs between one engine and two: docs "What repeats exactly"'s tolerance
    assert not row_diffs(two, single), row_diffs(two, single)[:5]
    m = read_manifest(out)
    assert m.numerics.workers == 2 and m.numerics.chunk_size == m.execution["chunk_size"]
    assert m.numerics.kernel_paths and all(p.vllm_kernels for p in m.numerics.kernel_paths)
    assert m.execution["workers"] == 2 and m.engine_args["kv_cache_memory_bytes"] == 1 << 30
    assert [w["chunks"] > 0 for w in m.execution["per_worker"]] == [True, True]  # both engines answered
    assert m.stats["executed"] == single.height


def test_bad_input_in_a_chunk_stops_the_run_with_the_single_process_message(
    cluster: str, mixed_plan: Path, tmp_path: Path
) -> None:
    """A request that cannot run (here: max_gen_toks does not fit the context) is not retried: the run stops
    with the message a single process gives."""
    bad = [*FAKE, "model.max_model_len=4"]
    with pytest.raises(ExecuteError) as single:
        execute(str(mixed_plan), out=str(tmp_path / "one"), overrides=bad, progress=False)
    with pytest.raises(ExecuteError) as pool:
        execute(str(mixed_plan), out=str(tmp_path / "two"), overrides=bad, progress=False, workers=2, ray=cluster,
                chunk_size=CHUNK)  # fmt: skip

    # the same message, for whichever gsm8k document's chunk came back first
    def doc_free(e: pytest.ExceptionInfo[ExecuteError]) -> str:
        return re.sub(r"doc \d+ instance [0-9a-f]+", "doc N", str(e.value))

    assert doc_free(pool) == doc_free(single) and "max_model_len=4" in str(pool.value)
    assert "\n" not in str(pool.value)


def test_a_worker_with_other_versions_is_refused(
    cluster: str, mixed_plan: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows are comparable only from the same code: a node whose lmeval (or vLLM, torch, transformers)
    differs from the driver's is refused before any of its rows are committed."""
    from lmeval import executor

    real = executor.run.versions
    monkeypatch.setattr(executor.run, "versions", lambda backend: {**real(backend), "lmeval": "0.0.0-driver"})
    out = tmp_path / "r"
    with pytest.raises(ExecuteError, match=r"worker on .*: lmeval .*, the driver has 0\.0\.0-driver"):
        execute(str(mixed_plan), out=str(out), overrides=FAKE, progress=False, workers=2, ray=cluster)
    assert not part_files(out)
