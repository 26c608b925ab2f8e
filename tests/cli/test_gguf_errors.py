"""Bad GGUF inputs through the CLI: one line on stderr naming the file, exit 2, no traceback, no plan written
(a text file named .gguf, a truncated GGUF, any non-GGUF file given as model.path, an architecture transformers
cannot convert, a missing gguf_file, a package that is not installed)."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from lmeval.cli import main
from lmeval.common.gguf import smollm2_gguf
from tests.common.gguf_files import write_gguf


def _cli(*argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(list(argv))
    return rc, err.getvalue()


def _fails(tmp_path: Path, *model: str) -> str:
    out = tmp_path / "plan.msgpack"
    rc, err = _cli("compile", "+task=arith", "run.limit=2", *model, "--out", str(out))
    # a conversion that started says so first ("lmeval: converting ..."); the failure itself is one line
    lines = [ln for ln in err.strip().splitlines() if not ln.startswith("lmeval: converting ")]
    assert rc == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("lmeval compile: error: "), err
    assert not out.exists()
    return lines[0]


def test_text_file_named_gguf(tmp_path: Path) -> None:
    f = tmp_path / "model.gguf"
    f.write_text("not a model\n")
    assert f"{f}: not a GGUF file" in _fails(tmp_path, f"model.path={f}")


def test_any_file_as_model_path_is_checked_as_gguf(tmp_path: Path) -> None:
    f = tmp_path / "weights.bin"
    f.write_bytes(b"\x00" * 64)
    assert f"{f}: not a GGUF file" in _fails(tmp_path, f"model.path={f}")


@pytest.mark.parametrize("keep", [0.5, 0.001])
def test_truncated_gguf(tmp_path: Path, keep: float) -> None:
    data = smollm2_gguf().read_bytes()
    f = tmp_path / "cut.gguf"
    f.write_bytes(data[: int(len(data) * keep)])
    line = _fails(tmp_path, f"model.path={f}")
    assert f"{f}: " in line and ("truncated" in line or "not a readable GGUF" in line), line


def test_truncated_gguf_in_a_directory(tmp_path: Path) -> None:
    (tmp_path / "cut.gguf").write_bytes(smollm2_gguf().read_bytes()[:5000])
    line = _fails(tmp_path, f"model.path={tmp_path}", "model.gguf_file=cut.gguf")
    assert f"{tmp_path / 'cut.gguf'}: " in line and ("truncated" in line or "not a readable GGUF" in line), line


def test_architecture_transformers_cannot_convert(tmp_path: Path) -> None:
    f = write_gguf(tmp_path / "odd.gguf", arch="weirdnet")
    line = _fails(tmp_path, f"model.path={f}")
    assert f"{f}: GGUF architecture 'weirdnet' cannot be converted by transformers" in line, line


def test_missing_gguf_file_in_directory(tmp_path: Path) -> None:
    line = _fails(tmp_path, f"model.path={tmp_path}", "model.gguf_file=absent.gguf")
    assert "model.gguf_file=absent.gguf: no such file in model.path=" in line, line
    line = _fails(tmp_path, f"model.path={tmp_path}", "model.gguf_file=../x.gguf")
    assert "not a path" in line, line


def test_package_not_installed(tmp_path: Path) -> None:
    line = _fails(tmp_path, "model=smollm2", "model.package=no_such_package_24", "model.gguf_file=x.gguf")
    assert line.endswith("model.package=no_such_package_24: the package is not installed; install it with: "
                         "pip install no_such_package_24"), line  # fmt: skip


def test_execute_needs_the_gguf_location_again(tmp_path: Path) -> None:
    plan = tmp_path / "plan.msgpack"
    rc, err = _cli("compile", "+task=arith", "run.limit=2", f"model.path={smollm2_gguf()}", "--out", str(plan))
    assert rc == 0, err
    rc, err = _cli("execute", str(plan), "--out", str(tmp_path / "results"))
    assert rc == 2 and len(err.strip().splitlines()) == 1, err
    assert "the plan does not say where the model lives" in err and "model.path=FILE.gguf" in err, err
    assert not (tmp_path / "results").exists()
