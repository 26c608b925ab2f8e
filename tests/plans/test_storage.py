"""Compressed plan files (plans/plan/storage.py): identity independent of the codec, per-task frames, and refusal of
truncated, corrupted and hostile (decompression bomb) files with one-line errors and exit status 2."""

from __future__ import annotations

import subprocess
import sys
import tracemalloc
from pathlib import Path

import msgpack
import pytest
import zstandard

from lmeval.diff import diff_plans
from lmeval.plans import PlanError, PlanReader, read_header, read_plan, write_plan
from lmeval.plans.plan import canonical_bytes, same_task_records, verify_plan, verify_plans
from lmeval.plans.plan.io import plan_bytes, recode_plan, seal
from lmeval.plans.plan.storage import FRAME_TARGET, Layout, encode_body, open_layout
from tests.diff.diff_builders import build, spec, with_
from tests.plans.test_io import _arc_records

ROOT = Path(__file__).resolve().parents[2]
ANAT = spec()
ASTRO = spec("mmlu_astronomy", "astronomy")


def _split(raw: bytes) -> tuple[dict, int, dict, int]:
    """(header, end of header, storage map, end of storage map) of a plan file's bytes."""
    u = msgpack.Unpacker(raw=False)
    u.feed(raw)
    header = u.unpack()
    head_end = u.tell()
    storage = u.unpack()
    return header, head_end, storage, u.tell()


def _cli_error(args: list[str], cwd: Path) -> str:
    r = subprocess.run([sys.executable, "-m", "lmeval", *args], cwd=cwd, capture_output=True, text=True,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})  # fmt: skip
    assert r.returncode == 2, (args, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    return lines[0]


def test_hashes_identical_compressed_or_not(tmp_path: Path) -> None:
    header, records = _arc_records()
    z, n = tmp_path / "z.msgpack", tmp_path / "n.msgpack"
    sz = write_plan(z, header, records)  # default: zstd
    sn = write_plan(n, header, records, codec="none")
    assert sz == sn  # the whole sealed header: plan_hash, task hashes, spans, counts
    with PlanReader(z) as rz, PlanReader(n) as rn:
        assert (rz.codec, rn.codec) == ("zstd", "none")
        assert rz.header == rn.header == sz
        recs_z, recs_n = list(rz), list(rn)  # both hash-verified at the end of the stream
    assert recs_z == recs_n == records
    assert [r.request_hash for r in recs_z if hasattr(r, "request_hash")] == [
        r.request_hash for r in records if hasattr(r, "request_hash")
    ]
    assert z.stat().st_size < n.stat().st_size / 2
    # the stored header is byte-identical; only the storage map and the frames differ
    raw_z, raw_n = z.read_bytes(), n.read_bytes()
    _, ez, mz, _ = _split(raw_z)
    _, en, mn, _ = _split(raw_n)
    assert raw_z[:ez] == raw_n[:en] == canonical_bytes(sz.to_dict())
    assert (mz["codec"], mn["codec"]) == ("zstd", "none")
    # plan_bytes gives the same bytes; another compression level gives other bytes, same identity
    sealed, data = plan_bytes(header, records)
    assert data == raw_z and sealed == sz
    s2, blobs = seal(header, records)
    stor, frames = encode_body(s2.to_dict(), blobs, "zstd", level=19)
    lvl = tmp_path / "l19.msgpack"
    lvl.write_bytes(canonical_bytes(s2.to_dict()) + stor + b"".join(frames))
    assert lvl.read_bytes() != raw_z
    assert read_plan(lvl) == read_plan(z) == read_plan(n)
    # recoding either way keeps every hash
    back = tmp_path / "back.msgpack"
    assert recode_plan(n, back, "zstd") == sz and back.read_bytes() == raw_z


def test_diff_reads_compressed_and_uncompressed_alike(tmp_path: Path) -> None:
    a = build(tmp_path / "a.msgpack", [ANAT, ASTRO])
    b = build(tmp_path / "b.msgpack", [ANAT, ASTRO], codec="none")
    r = diff_plans(a, b)
    assert r.identical and r.tasks_identical == 2
    c = build(tmp_path / "c.msgpack", [ANAT], codec="none")
    r = diff_plans(a, c)
    assert [t.name for t in r.tasks] == ["mmlu_astronomy"] and r.tasks[0].status == "removed"


def _layout(path: Path) -> Layout:
    f, layout = open_layout(str(path))
    f.close()
    return layout


def test_integrity_checks_plans_and_compares_tasks_without_decoding(tmp_path: Path) -> None:
    """The contract's hash checks (one plan, or two in one pass sharing identical frames) and its task byte
    comparison (across codecs too): what diff and the scorer use instead of their own."""
    z = _layout(build(tmp_path / "z.msgpack", [ANAT, ASTRO]))
    n = _layout(build(tmp_path / "n.msgpack", [ANAT, ASTRO], codec="none"))
    c = _layout(build(tmp_path / "c.msgpack", [with_(ANAT, description="Anatomy questions."), ASTRO]))
    verify_plan(z)
    verify_plans(z, n, c)
    verify_plans(z, c)
    verify_plans(z, z)  # the same file once
    assert same_task_records(z, n, "mmlu_anatomy")  # zstd vs uncompressed: the same records
    assert same_task_records(z, c, "mmlu_astronomy") and not same_task_records(z, c, "mmlu_anatomy")
    raw = Path(n.path).read_bytes()
    i = raw.rindex(b"Answer:")  # in the last task (astronomy); anatomy's frame stays identical to n's
    edited = tmp_path / "edited.msgpack"
    edited.write_bytes(raw[:i] + b"answer:" + raw[i + 7 :])
    e = _layout(edited)
    assert same_task_records(n, e, "mmlu_anatomy") and not same_task_records(n, e, "mmlu_astronomy")
    with pytest.raises(PlanError, match=f"^{edited}: plan hash mismatch"):
        verify_plan(e)
    for pair in [(n, e), (e, n)]:
        with pytest.raises(PlanError, match=f"^{edited}: plan hash mismatch"):
            verify_plans(*pair)


def test_reader_gives_record_maps_of_the_plan_or_of_one_task(tmp_path: Path) -> None:
    a = build(tmp_path / "a.msgpack", [ANAT, ASTRO])
    with PlanReader(a) as r:
        records = list(r)
        maps = list(r.record_maps())  # hash-verified at the end, like records()
        astro = list(r.record_maps("mmlu_astronomy"))
    assert maps == [x.to_dict() for x in records]  # shared contexts restored
    assert astro == [m for m in maps if m["task"] == "mmlu_astronomy"] and astro
    assert all("shared_context" not in m for m in maps)


def test_frames_are_per_task_and_bounded(tmp_path: Path) -> None:
    a = build(tmp_path / "a.msgpack", [ANAT, ASTRO])
    f, layout = open_layout(str(a))
    f.close()
    assert [fr.task for fr in layout.frames] == ["mmlu_anatomy", "mmlu_astronomy"]
    assert layout.records_length == sum(n for _, n in layout.spans.values())
    assert all(fr.length <= FRAME_TARGET for fr in layout.frames)
    with PlanReader(a) as r:  # one task alone, from its own frame
        only = list(r.records("mmlu_astronomy"))
        assert only and {x.task for x in only} == {"mmlu_astronomy"}
        with pytest.raises(PlanError, match="no task 'nope'"):
            list(r.records("nope"))


def test_large_task_is_split_into_frames(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import lmeval.plans.plan.storage as storage

    monkeypatch.setattr(storage, "FRAME_TARGET", 2000)
    header, records = _arc_records(20)
    p = tmp_path / "p.msgpack"
    sealed = write_plan(p, header, records)
    f, layout = open_layout(str(p))
    f.close()
    assert len(layout.frames) > 3 and {fr.task for fr in layout.frames} == {"arc_easy"}
    assert read_plan(p).header == sealed and list(PlanReader(p).records("arc_easy")) == records


@pytest.fixture()
def zplan(tmp_path: Path) -> Path:
    header, records = _arc_records()
    p = tmp_path / "p.msgpack"
    write_plan(p, header, records)
    return p


def _variant(zplan: Path, name: str, data: bytes) -> Path:
    out = zplan.parent / name
    out.write_bytes(data)
    return out


def test_truncated_compressed_plans(zplan: Path) -> None:
    raw = zplan.read_bytes()
    _, head_end, _, body = _split(raw)
    for cut, msg in [
        (len(raw) - 1, "truncated or modified plan"),
        (body + 10, "truncated or modified plan"),
        (body, "truncated or modified plan"),
        (head_end + 2, "truncated plan (the storage map"),
        (head_end, "truncated plan (the storage map"),
        (head_end // 2, "empty or truncated plan"),
    ]:
        p = _variant(zplan, f"cut{cut}.msgpack", raw[:cut])
        with pytest.raises(PlanError, match=msg.replace("(", r"\(")):
            read_plan(p)
        assert str(p) in _cli_error(["show", str(p)], zplan.parent)
    # appended bytes are refused as well
    p = _variant(zplan, "longer.msgpack", raw + b"\0")
    with pytest.raises(PlanError, match="trailing bytes"):
        read_header(p)


def test_truncated_frame_with_consistent_sizes_is_refused(zplan: Path) -> None:
    """A frame cut short whose sizes were rewritten to match: zstd reports the incomplete frame."""
    raw = zplan.read_bytes()
    header, head_end, storage, body = _split(raw)
    ulen, slen = storage["frames"][0]
    storage["frames"][0] = [ulen, slen - 5]
    p = _variant(zplan, "short.msgpack", raw[:head_end] + canonical_bytes(storage) + raw[body : body + slen - 5])
    with pytest.raises(PlanError, match="corrupt or truncated compressed plan data"):
        read_plan(p)
    err = _cli_error(["show", str(p)], zplan.parent)
    assert "task 'arc_easy'" in err and "truncated" in err


@pytest.mark.parametrize("where", ["block", "checksum", "magic"])
def test_corrupted_compressed_plans(zplan: Path, where: str) -> None:
    raw = zplan.read_bytes()
    _, _, storage, body = _split(raw)
    slen = storage["frames"][0][1]
    i = {"block": body + slen // 2, "checksum": body + slen - 2, "magic": body}[where]
    p = _variant(zplan, f"{where}.msgpack", raw[:i] + bytes([raw[i] ^ 0x5A]) + raw[i + 1 :])
    with pytest.raises(PlanError, match="corrupt"):
        read_plan(p)
    with pytest.raises(PlanError, match="corrupt"):
        read_plan(p, verify=False)  # zstd's own frame checksum catches it without the plan hash
    err = _cli_error(["show", str(p)], zplan.parent)
    assert str(p) in err and "corrupt" in err
    err = _cli_error(["diff", str(zplan), str(p)], zplan.parent)
    assert "corrupt" in err


def test_corrupted_storage_map(zplan: Path) -> None:
    raw = zplan.read_bytes()
    _, head_end, storage, body = _split(raw)
    for name, bad in [
        ("codec", dict(storage, codec="brotli")),
        ("no-frames", dict(storage, frames=[])),
        ("extra-frame", dict(storage, frames=[*storage["frames"], [1, 1]])),
        ("wrong-len", dict(storage, frames=[[storage["frames"][0][0] + 1, storage["frames"][0][1]]])),
    ]:
        p = _variant(zplan, f"{name}.msgpack", raw[:head_end] + canonical_bytes(bad) + raw[body:])
        with pytest.raises(PlanError, match="corrupt plan storage map|modified plan"):
            read_header(p)
        _cli_error(["show", str(p)], zplan.parent)
    p = _variant(zplan, "garbage.msgpack", raw[:head_end] + b"\xc1" + raw[body:])
    with pytest.raises(PlanError, match="cannot decode the storage map"):
        read_header(p)


def _rle_bomb(n_blocks: int, declare: int | None) -> bytes:
    """A hand-made zstd frame of ``n_blocks`` RLE blocks of 128 KiB each (4 bytes per block): a ~32000x
    expansion. ``declare``: the content size its frame header claims (None: no size)."""
    out = bytearray(b"\x28\xb5\x2f\xfd")
    if declare is None:
        out += bytes([0x00, 7 << 3])  # no content size, no checksum; window descriptor: 128 KiB
    else:
        out += bytes([0xC0, 7 << 3]) + declare.to_bytes(8, "little")  # 8-byte content size field
    for k in range(n_blocks):
        last = 1 if k == n_blocks - 1 else 0
        out += (last | (1 << 1) | (131072 << 3)).to_bytes(3, "little") + b"\x41"  # RLE block of b"A"
    return bytes(out)


@pytest.mark.parametrize("declare", ["header", "none", "huge"])
def test_decompression_bomb_is_refused_without_using_memory(zplan: Path, declare: str) -> None:
    """A small file whose frame expands to 1 GiB while the plan header declares a few KiB."""
    raw = zplan.read_bytes()
    _, head_end, storage, body = _split(raw)
    ulen = storage["frames"][0][0]
    frame = _rle_bomb(8192, {"header": ulen, "none": None, "huge": 8192 * 131072}[declare])
    assert len(frame) < 40_000  # ... expanding to 1 GiB
    storage["frames"] = [[ulen, len(frame)]]
    p = _variant(zplan, "bomb.msgpack", raw[:head_end] + canonical_bytes(storage) + frame)
    tracemalloc.start()
    try:
        with pytest.raises(PlanError, match="corrupt or hostile|corrupt or truncated") as e:
            read_plan(p)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, peak  # nothing near the 1 GiB the frame expands to
    assert "task 'arc_easy'" in str(e.value) and "\n" not in str(e.value)
    assert "task 'arc_easy'" in _cli_error(["show", str(p)], zplan.parent)


def test_bomb_frame_is_really_a_bomb() -> None:
    """The hand-made frame is valid zstd that expands as claimed (so the test above tests the guard)."""
    small = _rle_bomb(4, None)
    out = zstandard.ZstdDecompressor().decompressobj().decompress(small)
    assert out == b"A" * (4 * 131072)
    assert zstandard.ZstdDecompressor().decompress(_rle_bomb(4, 4 * 131072)) == out


def test_older_format_version_is_refused_with_the_usual_message(zplan: Path) -> None:
    raw = zplan.read_bytes()
    header, head_end, _, _ = _split(raw)
    p = _variant(zplan, "v1.msgpack", canonical_bytes(dict(header, version=1)) + raw[head_end:])
    with pytest.raises(PlanError, match="plan format version 1, but this lmeval reads version"):
        read_header(p)
    assert "recompile the plan" in _cli_error(["show", str(p)], zplan.parent)


def test_compile_cli_compressed_and_uncompressed_give_the_same_hashes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from lmeval.cli import main

    z, n = tmp_path / "z.msgpack", tmp_path / "n.msgpack"
    assert main(["compile", "+task=arith", "--out", str(z)]) == 0
    assert main(["compile", "+task=arith", "--no-compress", "--out", str(n)]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == str(n)
    hz, hn = read_header(z), read_header(n)
    assert hz == hn and hz.plan_hash and hz.tasks[0].task_hash
    with PlanReader(z) as rz, PlanReader(n) as rn:
        assert (rz.codec, rn.codec) == ("zstd", "none")
        assert list(rz) == list(rn)
    assert z.stat().st_size < n.stat().st_size / 3
    # and the released reference plan of the same task has the same identity (test_lock keeps it current)
    from lmeval.lock.lockfile import LOCK_PATH, load_lock

    ref = read_header(LOCK_PATH.parent / load_lock().reference["plan"])
    assert ref.plan_hash == hz.plan_hash
