"""Every file under the lmeval cache is untrusted input (#42): a poisoned catalog index never sends a compile
to a YAML outside lm-eval's task folder (its ``!function`` code does not run), and a cache file that is a
symlink to ``/dev/zero`` or a FIFO is a miss, rebuilt, in well under 5 s and 200 MB."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import lmeval.compiler.tasks.lm_eval_catalog as cat_mod
from tests.hostile.corpus import MINI_ROWS, MINI_YAML, env

_EVIL_PY = "from pathlib import Path\nPath({marker!r}).write_text('ran')\n\ndef hook(doc):\n    return 'x'\n"


def _fake_lm_eval(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An lm-eval task folder holding one harmless task ``mini``; the lmeval cache under ``tmp``."""
    root = tmp / "lm_tasks"
    (root / "a").mkdir(parents=True)
    (root / "a" / "mini.yaml").write_text(MINI_YAML, encoding="utf-8")
    monkeypatch.setenv("LMEVAL_CACHE", str(tmp / "cache"))
    monkeypatch.delenv("LMEVAL_BUILD_CACHE_DIR", raising=False)
    monkeypatch.setattr(cat_mod, "catalog_root", lambda: root)
    cat_mod.catalog.cache_clear()
    return root


def _index_path(root: Path) -> Path:
    return cat_mod.cache_dir() / f"lm_eval-{cat_mod.lm_eval_version()}-{cat_mod._fingerprint(root)[:24]}.json"


@pytest.mark.parametrize("how", ["absolute", "dotdot"])
def test_poisoned_catalog_index_is_rebuilt_not_followed(
    how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from lmeval.cli import main

    root = _fake_lm_eval(tmp_path, monkeypatch)
    evil = tmp_path / "elsewhere"
    evil.mkdir()
    marker = tmp_path / "marker"
    (evil / "evil.py").write_text(_EVIL_PY.format(marker=str(marker)), encoding="utf-8")
    evil_yaml = MINI_YAML.replace('doc_to_text: "Q: {{question}}\\nA:"', "doc_to_text: !function evil.hook")
    (evil / "mini.yaml").write_text(evil_yaml, encoding="utf-8")
    rel = str(evil / "mini.yaml") if how == "absolute" else "../elsewhere/mini.yaml"
    entry = {"name": "mini", "kind": "task", "path": rel, "members": [], "output_type": "generate_until"}
    index = _index_path(root)
    index.parent.mkdir(parents=True)
    index.write_text(json.dumps({"entries": [entry], "broken": {}}), encoding="utf-8")
    data = tmp_path / "data"
    (data / "mini").mkdir(parents=True)
    (data / "mini" / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in MINI_ROWS))
    out = tmp_path / "p.msgpack"
    rc = main(["compile", "run.tasks=[lm_eval:mini]", f"run.data_dir={data}", "--out", str(out)])
    err = capsys.readouterr().err
    assert not marker.exists(), "the poisoned index's !function ran"
    assert rc == 0 and out.is_file(), err
    rebuilt = json.loads(index.read_text(encoding="utf-8"))
    assert [e["path"] for e in rebuilt["entries"]] == ["a/mini.yaml"]


def test_index_folder_linked_out_of_the_task_folder_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _fake_lm_eval(tmp_path, monkeypatch)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "x.yaml").write_text("task: x\n")
    link = tmp_path / "linkdir"
    link.symlink_to(tmp_path / "elsewhere")
    good = {"name": "x", "kind": "task", "path": "../linkdir/x.yaml", "members": []}
    with pytest.raises(ValueError):
        cat_mod._from_json({"entries": [good], "broken": {}}, root)
    (root / "b").symlink_to(tmp_path / "elsewhere")  # a folder inside the root that leads out of it
    good["path"] = "b/x.yaml"
    with pytest.raises(ValueError, match="leads out"):
        cat_mod._from_json({"entries": [good], "broken": {}}, root)


# Every cache reader on one hostile file kind, in a child process bounded in memory (2 GiB address space: the
# old readers died there, or hung on the FIFO until the timeout). Prints what each reader returned.
_PROBE = r"""
import json, os, resource, sys, time
from pathlib import Path
resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
kind, tmp = sys.argv[1], Path(sys.argv[2])
os.environ["LMEVAL_CACHE"] = str(tmp / "cache")

def hostile(p):
    p.parent.mkdir(parents=True, exist_ok=True)
    if kind == "zero":
        p.symlink_to("/dev/zero")
    else:
        os.mkfifo(p)

import lmeval.compiler.tasks.lm_eval_catalog as cat
from lmeval.common import gguf, tinymodel
from lmeval.compiler.cache.store import BuildCache
from lmeval.compiler.cache.compose import load_composed
base_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # after the imports: what reading the files adds
root = tmp / "lm_tasks"
(root / "a").mkdir(parents=True)
(root / "a" / "t.yaml").write_text("task: t1\n")
out = {}
index = cat.cache_dir() / f"lm_eval-{cat.lm_eval_version()}-{cat._fingerprint(root)[:24]}.json"
hostile(index)
out["catalog"] = sorted(cat.load_catalog(root, cat.cache_dir()).index.entries)
out["catalog_rewritten"] = index.is_file() and not index.is_symlink()
key = "ab" * 32
bc = BuildCache(tmp / "cache" / "build", 1 << 30)
hostile(bc.path(key))
out["entry"] = bc.load(key)
hostile(bc.root / key[:2] / f"{key}.lph")
out["plan_hash"] = bc.plan_hash(key)
hostile(bc.root / key[:2] / f"{key}.lcc")
out["composed"] = load_composed(bc.root, key)
stamp = tmp / "cache" / "models" / "gguf" / "k" / gguf.STAMP
hostile(stamp)
out["gguf"] = gguf.is_complete(stamp.parent, "0" * 64, "full", {})
tiny = tmp / "cache" / "models" / "tiny-v1"
for f in {*tinymodel.MODEL_FILES, "lmeval_tiny.json"}:
    hostile(tiny / f)
out["tiny"] = tinymodel._is_complete(tiny)
out["grown_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base_kb
print(json.dumps(out))
"""


@pytest.mark.parametrize("kind", ["zero", "fifo"])
def test_hostile_cache_files_are_misses_quickly(kind: str, tmp_path: Path) -> None:
    e = {k: v for k, v in env().items() if k not in ("LMEVAL_BUILD_CACHE_DIR", "LMEVAL_NO_CATALOG")}
    p = subprocess.run(
        [sys.executable, "-c", _PROBE, kind, str(tmp_path)], env=e, capture_output=True, text=True, timeout=20
    )
    assert p.returncode == 0, p.stderr[-2000:]
    got: dict[str, Any] = json.loads(p.stdout)
    assert got["catalog"] == ["t1"] and got["catalog_rewritten"], got
    assert (got["entry"], got["plan_hash"], got["composed"], got["gguf"], got["tiny"]) == (None,) * 3 + (False,) * 2
    # the peak over the imports' (which alone reach ~235 MB when tests before have warmed the shared caches)
    assert got["grown_kb"] < 100 << 10, got


def test_ls_with_a_fifo_as_the_catalog_index_finishes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``lmeval ls`` itself (a child process, 5 s): a FIFO where the index is is replaced by a built index."""
    root = _fake_lm_eval(tmp_path, monkeypatch)
    index = _index_path(root)
    index.parent.mkdir(parents=True)
    os.mkfifo(index)
    code = (
        "import sys; from pathlib import Path; import lmeval.compiler.tasks.lm_eval_catalog as c; "
        f"c.catalog_root = lambda: Path({str(root)!r}); from lmeval.cli import entry; sys.argv[1:] = ['ls']; "
        "entry()"
    )
    e = {**env(), "LMEVAL_CACHE": str(tmp_path / "cache")}
    e.pop("LMEVAL_NO_CATALOG", None)
    p = subprocess.run([sys.executable, "-c", code], env=e, capture_output=True, text=True, timeout=5)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "mini" in p.stdout and index.is_file()


def test_read_cache_file_takes_only_a_small_regular_file(tmp_path: Path) -> None:
    from lmeval.common.cachefile import discard, read_cache_file

    f = tmp_path / "f"
    f.write_bytes(b"x" * 10)
    assert read_cache_file(f, 10) == b"x" * 10
    assert read_cache_file(f, 9) is None  # longer than the cap
    link = tmp_path / "link"
    link.symlink_to(f)
    assert read_cache_file(link, 10) is None  # a link is never followed, even to a good file
    os.mkfifo(tmp_path / "fifo")
    assert read_cache_file(tmp_path / "fifo", 10) is None and read_cache_file(tmp_path, 10) is None
    assert read_cache_file(tmp_path / "missing", 10) is None
    discard(link)
    discard(tmp_path)  # a folder is left alone
    assert not link.is_symlink() and f.is_file() and tmp_path.is_dir()
