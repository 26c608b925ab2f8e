"""Same configs + data → byte-identical plans in separate processes with different PYTHONHASHSEED."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from lmeval.compiler.config import CONF_DIR

REPO = CONF_DIR.parent


def _compile(out: Path, seed: str, data: Path) -> None:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    cmd = [
        sys.executable,
        "-m",
        "lmeval",
        "compile",
        "+task=[arith,arc_easy,boolq,winogrande]",
        f"run.data_dir={data}",
        "run.limit=8",
        "run.num_fewshot=2",
        f"--out={out}",
    ]
    subprocess.run(cmd, check=True, env=env, cwd=REPO, capture_output=True)


def test_byte_identical_across_processes(tmp_path: Path, data: Path) -> None:
    a, b = tmp_path / "a.msgpack", tmp_path / "b.msgpack"
    _compile(a, "1", data)
    _compile(b, "4242", data)
    assert a.read_bytes() == b.read_bytes()


def test_cli_file_equals_plans_writer_bytes(tmp_path: Path, data: Path) -> None:
    """The CLI writes the sealed record bytes directly (doc records from the compiler's own doc bytes);
    they equal what plans.io writes when it encodes every record itself."""
    from lmeval.compiler.pipeline import compile_located
    from lmeval.plans.plan.io import plan_bytes, write_sealed

    c = compile_located(
        ["+task=[arith,arc_easy,winogrande,gsm8k]", f"run.data_dir={data}", "run.limit=5", "run.num_fewshot=2"]
    )
    header, records, blobs = c.header, c.records, c.blobs
    assert header.n_docs == 20
    out = write_sealed(tmp_path / "p.msgpack", header, blobs)
    assert out.read_bytes() == plan_bytes(header, records)[1]


def _spec_request_hash(r: object) -> str:
    """The request hash as plans/FORMAT.md specifies it, computed with msgpack and hashlib directly (not with
    lmeval's encoder): sha256 over a map of the six request fields in sorted key order, floats as float64."""
    import hashlib

    import msgpack

    fields = {
        "context": r.context,  # type: ignore[attr-defined]
        "context_ids": r.context_ids,  # type: ignore[attr-defined]
        "continuation": r.continuation,  # type: ignore[attr-defined]
        "continuation_ids": r.continuation_ids,  # type: ignore[attr-defined]
        "generation_kwargs": r.generation_kwargs,  # type: ignore[attr-defined]
        "request_type": r.request_type,  # type: ignore[attr-defined]
    }

    def canon(v: object) -> object:
        if isinstance(v, dict):
            return {k: canon(v[k]) for k in sorted(v)}
        if isinstance(v, (list, tuple)):
            return [canon(x) for x in v]
        return v

    return hashlib.sha256(msgpack.packb(canon(fields), use_bin_type=True, use_single_float=False)).hexdigest()


def test_request_hashes_follow_the_format_spec(data: Path) -> None:
    from lmeval import compiler
    from lmeval.plans.plan import InstanceRecord, request_hash_of

    for ov in (["+task=arc_easy", "run.num_fewshot=2"], ["+task=gsm8k"], ["+task=winogrande"]):
        _, records = compiler.compile_plan([*ov, f"run.data_dir={data}", "run.limit=4"])
        insts = [r for r in records if isinstance(r, InstanceRecord)]
        assert insts
        for r in insts:
            assert r.request_hash == _spec_request_hash(r)
            # the compiler's packed fast path and the contract's function (what every reader recomputes) agree
            assert r.request_hash == request_hash_of(
                r.request_type, r.context, r.continuation, r.generation_kwargs, r.context_ids, r.continuation_ids
            )
        # the hash must see every field: two different requests never share one
        assert len({r.request_hash for r in insts}) == len({(r.context, r.continuation) for r in insts})
