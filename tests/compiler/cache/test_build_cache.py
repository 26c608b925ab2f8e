"""The compiler's build cache (compiler/cache/: store.py, key.py, part.py) and parallel builds
(compiler/parallel.py): cached, cold, serial and parallel compiles give byte-identical plans; a corrupt entry
is detected and rebuilt; the key sees data and task code; the cache stays under its cap."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from lmeval.compiler.parallel import BuildSettings
from lmeval.compiler.pipeline import Compiled, compile_located
from lmeval.lock.build import SKIP, overrides_for, shipped_configs
from lmeval.plans.plan.io import plan_bytes

LIMIT = 12


def _bytes(c: Compiled, tmp: Path, name: str) -> bytes:
    return c.write(str(tmp / f"{name}.msgpack")).read_bytes()


def _entries(root: Path) -> list[Path]:
    return sorted(root.glob("*/*.lbc"))


def test_every_shipped_task_cached_equals_cold(tmp_path: Path, data: Path) -> None:
    """Every shipped config (as the lock compiles them): no cache and serial, cold cache with 2 workers and
    warm cache give the same plan bytes; the warm compile builds nothing."""
    cache = tmp_path / "cache"
    off = BuildSettings(cache=False, workers=1)
    on = BuildSettings(cache=True, workers=2, cache_dir=cache)
    names = [n for n in shipped_configs() if n not in SKIP]
    assert len(names) >= 12
    for name in names:
        ov = overrides_for(name, data, LIMIT)
        plain = compile_located(ov, off)
        cold = compile_located(ov, on)
        warm = compile_located(ov, on)
        n = len(plain.header.tasks)
        assert cold.cache.misses == n and cold.cache.stored == n, name
        assert warm.cache.hits == n and warm.cache.misses == 0, name
        want = _bytes(plain, tmp_path, f"{name}-plain")
        assert _bytes(cold, tmp_path, f"{name}-cold") == want, name
        assert _bytes(warm, tmp_path, f"{name}-warm") == want, name
        # the records decoded from the cached bytes re-encode to the same plan
        assert plan_bytes(plain.header, warm.records)[1] == want, name
    assert len(_entries(cache)) >= len(names)


def test_workers_do_not_change_bytes(tmp_path: Path, data: Path) -> None:
    ov = ["+task=mmlu", "run.num_fewshot=5", f"run.data_dir={data}", "run.limit=3"]
    plans = {
        w: _bytes(compile_located(ov, BuildSettings(cache=False, workers=w)), tmp_path, f"w{w}") for w in (1, 2, 3)
    }
    assert plans[1] == plans[2] == plans[3]
    assert len(plans[1]) > 10_000


def test_tokenizing_thread_does_not_change_bytes(tmp_path: Path, data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Token ids computed in a second thread (a tokenizer whose work runs in Rust) or in the building one
    (``compiler.encode.bytelevel`` in Python: the tiny model's) give the same plan, errors in the same order."""
    from lmeval.compiler.encode import plan_records as task_records
    from lmeval.compiler.encode.tokenizer import ModelTokenizer

    monkeypatch.setattr(task_records, "_CHUNK_DOCS", 7)  # several batches per task
    ov = ["+task=[mmlu_anatomy,gsm8k]", "run.num_fewshot=2", f"run.data_dir={data}", "run.limit=20", "model=tiny"]
    plans = {}
    for threaded in (False, True):
        monkeypatch.setattr(ModelTokenizer, "threaded", property(lambda self, t=threaded: t))
        plans[threaded] = _bytes(compile_located(ov, BuildSettings(cache=False, workers=1)), tmp_path, f"t{threaded}")
    assert plans[False] == plans[True]


def test_first_failing_task_is_reported_as_serial(data: Path) -> None:
    from lmeval.compiler.errors import CompileError

    ov = [
        "+task=[arc_easy,boolq,winogrande]",
        f"run.data_dir={data}",
        "run.limit=2",
        'task.boolq.doc_to_text="{{ no_such_field.x }}"',
    ]
    msgs = []
    for w in (1, 2):
        with pytest.raises(CompileError) as e:
            compile_located(ov, BuildSettings(cache=False, workers=w))
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1] and "boolq" in msgs[0]


def test_first_failing_task_is_reported_when_the_last_fails_too(data: Path) -> None:
    """With workers, this process builds from the last task down: its error (piqa's) waits for the
    workers' tasks before it, and boolq's, the first in task order, is the one raised, as in a serial compile."""
    from lmeval.compiler.errors import CompileError

    ov = [
        "+task=[arc_easy,boolq,winogrande,piqa]",
        f"run.data_dir={data}",
        "run.limit=2",
        'task.boolq.doc_to_text="{{ no_such_field.x }}"',
        'task.piqa.doc_to_text="{{ other_field.y }}"',
    ]
    msgs = []
    for w in (1, 2, 3):
        with pytest.raises(CompileError) as e:
            compile_located(ov, BuildSettings(cache=False, workers=w))
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1] == msgs[2] and "boolq" in msgs[0]


def _corruptions(blob: bytes) -> dict[str, bytes]:
    mid = len(blob) // 2
    return {
        "flipped byte": blob[:mid] + bytes([blob[mid] ^ 0x01]) + blob[mid + 1 :],
        "truncated": blob[: len(blob) - 17],
        "empty": b"",
        "extended": blob + b"\0",
        "garbage": os.urandom(len(blob)),
    }


def test_corrupt_entry_is_detected_and_rebuilt(tmp_path: Path, data: Path) -> None:
    cache = tmp_path / "cache"
    s = BuildSettings(cache=True, workers=1, cache_dir=cache)
    ov = ["+task=arc_easy", "run.num_fewshot=2", f"run.data_dir={data}", "run.limit=6"]
    want = _bytes(compile_located(ov, s), tmp_path, "first")
    (entry,) = _entries(cache)
    good = entry.read_bytes()
    for what, bad in _corruptions(good).items():
        entry.write_bytes(bad)
        c = compile_located(ov, s)
        assert (c.cache.corrupt, c.cache.hits, c.cache.stored) == (1, 0, 1), what
        assert _bytes(c, tmp_path, "again") == want, what
        assert entry.read_bytes() == good, what  # rebuilt and stored again
    # a valid entry of another task under this key (its checksum holds): refused by the key it names
    other = ["+task=boolq", f"run.data_dir={data}", "run.limit=6"]
    compile_located(other, s)
    (foreign,) = [p for p in _entries(cache) if p != entry]
    shutil.copyfile(foreign, entry)
    c = compile_located(ov, s)
    assert (c.cache.corrupt, c.cache.hits) == (1, 0)
    assert _bytes(c, tmp_path, "after-foreign") == want


def _lm_eval_task(root: Path, rows: int = 4) -> None:
    """An lm-eval-style task folder: YAML, process_docs in utils.py, a JSON data file next to them."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "docs.jsonl").write_text("".join(f'{{"q": "q{i}", "a": "a{i}"}}\n' for i in range(rows)))
    (root / "utils.py").write_text("def process_docs(ds):\n    return ds.map(lambda d: {'q': d['q'].upper()})\n")
    (root / "mytask.yaml").write_text(
        "task: mytask\ndataset_path: json\ndataset_kwargs:\n  data_files:\n"
        f"    test: {root / 'docs.jsonl'}\n"
        "test_split: test\noutput_type: generate_until\nprocess_docs: !function utils.process_docs\n"
        'doc_to_text: "Q: {{q}}\\nA:"\ndoc_to_target: "{{a}}"\n'
        "generation_kwargs:\n  until: ['\\n']\nmetric_list:\n  - metric: exact_match\n"
    )


def test_key_sees_data_and_task_code(tmp_path: Path) -> None:
    folder = tmp_path / "tasks"
    _lm_eval_task(folder)
    s = BuildSettings(cache=True, workers=1, cache_dir=tmp_path / "cache")
    ov = ["run.tasks=[mytask]", f"run.include_path={folder}"]

    def compiled() -> tuple[Compiled, bytes]:
        c = compile_located(ov, s)
        return c, _bytes(c, tmp_path, "p")

    c0, p0 = compiled()
    assert c0.cache.misses == 1
    c1, p1 = compiled()
    assert c1.cache.hits == 1 and p1 == p0
    (folder / "utils.py").write_text("def process_docs(ds):\n    return ds.map(lambda d: {'q': d['q'].lower()})\n")
    c2, p2 = compiled()
    assert c2.cache.misses == 1 and p2 != p0 and b"Q: q0" in c2.records[1].context.encode()  # type: ignore[union-attr]
    with (folder / "docs.jsonl").open("a") as f:
        f.write('{"q": "q9", "a": "a9"}\n')
    c3, p3 = compiled()
    assert c3.cache.misses == 1 and c3.header.n_docs == 5
    c4, p4 = compiled()
    assert c4.cache.hits == 1 and p4 == p3


def test_key_sees_local_data_files_and_run_settings(tmp_path: Path, data: Path) -> None:
    local = tmp_path / "data"
    (local / "arc_easy").mkdir(parents=True)
    for split in ("train", "test"):
        shutil.copyfile(data / "arc_easy" / f"{split}.jsonl", local / "arc_easy" / f"{split}.jsonl")
    s = BuildSettings(cache=True, workers=1, cache_dir=tmp_path / "cache")
    ov = ["+task=arc_easy", "run.num_fewshot=1", f"run.data_dir={local}", "run.limit=3"]
    assert compile_located(ov, s).cache.misses == 1
    assert compile_located(ov, s).cache.hits == 1
    assert compile_located([*ov, "run.fewshot_random_seed=7"], s).cache.misses == 1
    assert compile_located([*ov, "run.seed=9"], s).cache.misses == 1
    # a split file appearing changes the few-shot pool (validation before test): a miss
    shutil.copyfile(data / "arc_easy" / "validation.jsonl", local / "arc_easy" / "validation.jsonl")
    assert compile_located(ov, s).cache.misses == 1
    # run.seed=null leaves Python's random unseeded: no key, always built
    c = compile_located([*ov, "run.seed=null"], s)
    assert (c.cache.uncacheable, c.cache.hits, c.cache.stored) == (1, 0, 0)


def test_cache_is_bounded_and_can_be_off(tmp_path: Path, data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    s = BuildSettings(cache=True, workers=1, cache_dir=cache)
    ov = ["+task=mmlu", f"run.data_dir={data}", "run.limit=2"]
    compile_located(ov, s)
    entries = _entries(cache)
    assert len(entries) == 57
    total = sum(p.stat().st_size for p in entries)
    oldest = min(entries, key=lambda p: p.stat().st_mtime_ns)
    monkeypatch.setenv("LMEVAL_BUILD_CACHE_MB", str(total / 2 / (1 << 20)))
    c = compile_located(["+task=arc_easy", f"run.data_dir={data}", "run.limit=2"], s)
    left = _entries(cache)
    assert c.cache.evicted > 0 and sum(p.stat().st_size for p in left) <= total / 2
    assert not oldest.exists()
    # off: nothing read, nothing written
    monkeypatch.delenv("LMEVAL_BUILD_CACHE_MB")
    before = {p: p.stat().st_mtime_ns for p in _entries(cache)}
    off = compile_located(
        ["+task=boolq", f"run.data_dir={data}", "run.limit=2"], BuildSettings(cache=False, workers=1, cache_dir=cache)
    )
    assert off.cache.hits == off.cache.stored == 0
    assert {p: p.stat().st_mtime_ns for p in _entries(cache)} == before


def test_cli_no_cache_and_env(tmp_path: Path, data: Path, cli, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    cache = tmp_path / "cache"
    monkeypatch.setenv("LMEVAL_BUILD_CACHE_DIR", str(cache))
    monkeypatch.setenv("LMEVAL_BUILD_CACHE", "1")
    args = ["compile", "+task=arc_easy", f"run.data_dir={data}", "run.limit=2"]
    rc, out, _ = cli(*args, "--no-cache", "-j", "2", f"--out={tmp_path / 'a.msgpack'}")
    assert rc == 0 and not _entries(cache)
    rc, out, _ = cli(*args, f"--out={tmp_path / 'b.msgpack'}")
    assert rc == 0 and len(_entries(cache)) == 1
    assert (tmp_path / "a.msgpack").read_bytes() == (tmp_path / "b.msgpack").read_bytes()
    monkeypatch.setenv("LMEVAL_BUILD_CACHE", "0")
    shutil.rmtree(cache)
    rc, out, _ = cli(*args, f"--out={tmp_path / 'c.msgpack'}")
    assert rc == 0 and not cache.exists()
    with pytest.raises(SystemExit):
        cli(*args, "-j", "0")


def test_pieces_split_as_defined() -> None:
    import random

    from lmeval.compiler.encode.tokenizer import _last_piece, _pieces

    rnd = random.Random(3)
    alphabet = ["a", "\n", " ", "\t", "\u00a0", "\u2028", "\r", "b", "\x1c", "\u3000", "\u0085"]
    for _ in range(20000):
        t = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 14)))
        cuts = [i for i in range(1, len(t)) if t[i] == "\n" and not t[i - 1].isspace()]
        assert _pieces(t) == [t[a:b] for a, b in zip([0, *cuts], [*cuts, len(t)], strict=True)], repr(t)
        assert _last_piece(t) == _pieces(t)[-1], repr(t)


def test_constant_templates_render_as_jinja() -> None:
    from lmeval.compiler.build.render import _ENV, Renderer

    r = Renderer("t", None, ["x"], False)
    for text in ("The following are questions about anatomy.\n\n", "a\r\nb\n", "plain } text", "\n", "x"):
        assert r._template(text, "description", {"x": "X"}, 0) == _ENV.from_string(text).render()
