"""Same configs + data → byte-identical plans in separate processes with different PYTHONHASHSEED."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from compiler.config import CONF_DIR

REPO = CONF_DIR.parent


def _compile(out: Path, seed: str, data: Path) -> None:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    cmd = [sys.executable, "-m", "lmeval", "compile", "+task=[arith,arc_easy,boolq,winogrande]",
           f"run.data_dir={data}", "run.limit=8", "run.num_fewshot=2", f"--out={out}"]  # fmt: skip
    subprocess.run(cmd, check=True, env=env, cwd=REPO, capture_output=True)


def test_byte_identical_across_processes(tmp_path: Path, data: Path) -> None:
    a, b = tmp_path / "a.msgpack", tmp_path / "b.msgpack"
    _compile(a, "1", data)
    _compile(b, "4242", data)
    assert a.read_bytes() == b.read_bytes()


def test_cli_file_equals_plans_writer_bytes(tmp_path: Path, data: Path) -> None:
    """The CLI writes the sealed record bytes directly (doc records from the compiler's own doc bytes);
    they equal what plans.io writes when it encodes every record itself."""
    from compiler.api import compile_sealed
    from plans.io import plan_bytes, write_sealed

    header, records, blobs = compile_sealed(["+task=[arith,arc_easy,winogrande,gsm8k]", f"run.data_dir={data}",
                                             "run.limit=5", "run.num_fewshot=2"])  # fmt: skip
    assert header.n_docs == 20
    out = write_sealed(tmp_path / "p.msgpack", header, blobs)
    assert out.read_bytes() == plan_bytes(header, records)[1]


def test_request_hashes_equal_plans_request_hash_of(data: Path) -> None:
    import compiler
    from plans.records import InstanceRecord, request_hash_of

    for ov in (["+task=arc_easy", "run.num_fewshot=2"], ["+task=gsm8k"], ["+task=winogrande"]):
        _, records = compiler.compile_plan([*ov, f"run.data_dir={data}", "run.limit=4"])
        insts = [r for r in records if isinstance(r, InstanceRecord)]
        assert insts
        for r in insts:
            want = request_hash_of(
                r.request_type, r.context, r.continuation, r.generation_kwargs, r.context_ids, r.continuation_ids
            )
            assert r.request_hash == want
