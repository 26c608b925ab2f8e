"""No code runs without consent: ``!function`` resolution, and what ``--trust-code`` covers at score time."""

from __future__ import annotations

import hashlib
import os
import py_compile
import sys
from pathlib import Path

import pytest

from lmeval.compiler.errors import CompileError
from lmeval.compiler.tasks.functions import FunctionRef, resolve, score_ref_data
from lmeval.scorer.errors import ScoreError
from lmeval.scorer.usercode import refs as pyref


def _canary(path: Path) -> str:
    return f"open({str(path)!r}, 'w').write('ran')\n"


def test_leading_dots_cannot_import_outside_the_task_folder(tmp_path: Path) -> None:
    """``!function .tmp.x.f`` once resolved to /tmp/x.py; every part must be a plain identifier now."""
    outside = tmp_path / "evil"
    outside.mkdir()
    canary = tmp_path / "ran"
    (outside / "x.py").write_text(_canary(canary) + "def f(doc):\n    return 'x'\n")
    task_dir = tmp_path / "tasks"
    task_dir.mkdir()
    spec = "." + str(outside / "x").replace("/", ".")[1:] + ".f"  # e.g. .tmp.pytest-1.evil.x.f
    for s in (spec, "..evil.x.f", "evil/x.f", "x..f"):
        with pytest.raises(CompileError, match="plain identifiers"):
            resolve(FunctionRef(s, str(task_dir), str(task_dir / "t.yaml")))
        with pytest.raises(CompileError, match="plain identifiers"):
            score_ref_data(FunctionRef(s, str(task_dir), str(task_dir / "t.yaml")))
    assert not canary.exists()


def test_symlink_out_of_the_task_folder_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "x.py"
    canary = tmp_path / "ran"
    outside.write_text(_canary(canary) + "def f(doc):\n    return 'x'\n")
    task_dir = tmp_path / "tasks"
    task_dir.mkdir()
    os.symlink(outside, task_dir / "utils.py")
    with pytest.raises(CompileError, match="outside the task folder"):
        resolve(FunctionRef("utils.f", str(task_dir), None))
    assert not canary.exists()


def _task_folder(tmp_path: Path) -> tuple[Path, Path]:
    d = tmp_path / "task"
    d.mkdir()
    (d / "helper.py").write_text("FACTOR = 2\n")
    (d / "utils.py").write_text("import helper\n\ndef score(doc, results):\n    return {'x': helper.FACTOR}\n")
    return d, d / "utils.py"


def _ref(d: Path) -> dict:
    return score_ref_data(FunctionRef("utils.score", str(d), str(d / "t.yaml")))


def test_scoring_hook_recorded_without_import_and_every_file_hashed(tmp_path: Path) -> None:
    d, _ = _task_folder(tmp_path)
    canary = tmp_path / "ran"
    (d / "utils.py").write_text(_canary(canary) + (d / "utils.py").read_text())
    ref = _ref(d)
    assert not canary.exists()  # compile did not run it
    assert set(ref["files"]) == {"helper.py", "utils.py"}
    assert ref["files"]["helper.py"] == hashlib.sha256((d / "helper.py").read_bytes()).hexdigest()
    fn = pyref.load_ref(ref, pyref.Trust((d,)), "task t: process_results")
    assert fn({}, []) == {"x": 2} and canary.exists()


def test_untrusted_needs_the_flag_and_the_environment_does_not_grant_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d, _ = _task_folder(tmp_path)
    monkeypatch.setenv("LMEVAL_TRUST_CODE", "1")
    canary = tmp_path / "ran"
    (d / "utils.py").write_text(_canary(canary) + (d / "utils.py").read_text())
    with pytest.raises(ScoreError, match="rerun with --trust-code"):
        pyref.load_ref(_ref(d), None, "task t: process_results")
    assert not canary.exists()


def test_changed_imported_module_is_refused_before_anything_runs(tmp_path: Path) -> None:
    d, _ = _task_folder(tmp_path)
    ref = _ref(d)
    canary = tmp_path / "ran"
    (d / "helper.py").write_text(_canary(canary) + "FACTOR = 3\n")
    with pytest.raises(ScoreError, match="helper.py changed since the plan was compiled"):
        pyref.load_ref(ref, pyref.Trust((d,)), "task t: process_results")
    assert not canary.exists()


def test_module_not_hashed_at_compile_is_refused(tmp_path: Path) -> None:
    """A file added to the task folder after compile (and imported by the hook) never runs."""
    d, utils = _task_folder(tmp_path)
    ref = _ref(d)
    canary = tmp_path / "ran"
    ref["files"].pop("helper.py")  # as if helper.py (which utils.py imports) had appeared after compile
    (d / "helper.py").write_text(_canary(canary) + "FACTOR = 2\n")  # the file the hook imports: would run
    with pytest.raises(ScoreError, match=r"helper\.py was not hashed when the plan was compiled"):
        pyref.load_ref(ref, pyref.Trust((d,)), "task t: process_results")
    assert not canary.exists()


def test_planted_bytecode_is_never_used(tmp_path: Path) -> None:
    """A __pycache__/*.pyc whose header matches the source (size and mtime) is what Python's normal import
    would run; the hook's modules load from verified source only."""
    d, _ = _task_folder(tmp_path)
    ref = _ref(d)
    canary = tmp_path / "ran"
    helper = d / "helper.py"
    st = helper.stat()
    evil = tmp_path / "evil_helper.py"
    evil.write_text(_canary(canary) + "FACTOR = 99\n")
    pyc = Path(importlib_cache(helper))
    pyc.parent.mkdir(exist_ok=True)
    py_compile.compile(
        str(evil), cfile=str(pyc), dfile=str(helper), invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP
    )
    _match_header(pyc, st)
    fn = pyref.load_ref(ref, pyref.Trust((d,)), "task t: process_results")
    assert fn({}, []) == {"x": 2}
    assert not canary.exists()


def importlib_cache(src: Path) -> str:
    import importlib.util

    return importlib.util.cache_from_source(str(src))


def _match_header(pyc: Path, st: os.stat_result) -> None:
    """Rewrite the pyc header's source mtime and size to the real source's, as a planted file would."""
    data = bytearray(pyc.read_bytes())
    data[8:12] = int(st.st_mtime).to_bytes(4, "little")
    data[12:16] = (st.st_size & 0xFFFFFFFF).to_bytes(4, "little")
    pyc.write_bytes(bytes(data))


def test_normal_import_would_have_used_the_planted_pyc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The bytecode test above is not vacuous: Python's own import runs the planted file."""
    d, _ = _task_folder(tmp_path)
    canary = tmp_path / "ran"
    helper = d / "helper.py"
    st = helper.stat()
    evil = tmp_path / "evil_helper.py"
    evil.write_text(_canary(canary) + "FACTOR = 99\n")
    pyc = Path(importlib_cache(helper))
    pyc.parent.mkdir(exist_ok=True)
    py_compile.compile(
        str(evil), cfile=str(pyc), dfile=str(helper), invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP
    )
    _match_header(pyc, st)
    monkeypatch.syspath_prepend(str(d))
    monkeypatch.delitem(sys.modules, "helper", raising=False)
    import helper  # type: ignore[import-not-found]

    assert helper.FACTOR == 99 and canary.exists()
    del sys.modules["helper"]  # (monkeypatch.delitem here would put it back at teardown: leaked to later tests)


def test_reference_without_hash_is_refused(tmp_path: Path) -> None:
    d, utils = _task_folder(tmp_path)
    canary = tmp_path / "ran"
    utils.write_text(_canary(canary) + utils.read_text())
    real = hashlib.sha256(utils.read_bytes()).hexdigest()
    for ref in (
        {"__function__": "utils.score", "file": "utils.py"},
        {"__function__": "utils.score", "file": "utils.py", "sha256": ""},
        {"__function__": "utils.score", "file": "utils.py", "sha256": None, "files": {"utils.py": real}},
        # the old form with a machine path: the path is never used
        {"__function__": "utils.score", "path": str(utils), "sha256": real, "root": str(d)},
    ):
        with pytest.raises(ScoreError, match="no file and sha256"):
            pyref.load_ref(ref, pyref.Trust((d,)), "task t: process_results")
    assert not canary.exists()


def test_environment_variable_no_longer_grants_trust(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``LMEVAL_TRUST_CODE=1`` used to enable imports silently; only ``--trust-code`` does now."""
    from lmeval.cli import main
    from tests.scorer.golden_io import build, load_golden

    d, utils = _task_folder(tmp_path)
    canary = tmp_path / "ran"
    utils.write_text(_canary(canary) + utils.read_text())
    ref = _ref(d)
    ml = [{"metric": "x", "aggregation": "mean", "higher_is_better": True}]
    patch = {"gsm8k": {"config": {"process_results": ref}, "metric_list": ml}}
    _, rdir = build(load_golden("fake"), tmp_path / "g", ["gsm8k"], patch=patch)
    monkeypatch.setenv("LMEVAL_TRUST_CODE", "1")
    assert main(["score", str(rdir), "--quiet"]) == 2
    assert "--trust-code" in capsys.readouterr().err
    assert not canary.exists()
    assert main(["score", str(rdir), "--quiet", "--trust-code", "--include-path", str(d)]) == 0
    assert canary.exists()


def test_a_virtualenv_inside_the_task_folder_is_not_task_code(tmp_path: Path) -> None:
    """A project keeping its YAMLs beside a .venv: installed packages there are neither hashed nor refused."""
    d, utils = _task_folder(tmp_path)
    site = d / ".venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (d / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (site / "installedpkg.py").write_text("VALUE = 5\n")
    utils.write_text(
        "import sys\nsys.path.append(" + repr(str(site)) + ")\nimport installedpkg\n\n"
        "def score(doc, results):\n    return {'x': installedpkg.VALUE}\n"
    )
    ref = _ref(d)
    assert set(ref["files"]) == {"helper.py", "utils.py"}
    try:
        assert pyref.load_ref(ref, pyref.Trust((d,)), "task t: process_results")({}, []) == {"x": 5}
    finally:
        sys.modules.pop("installedpkg", None)
        if str(site) in sys.path:
            sys.path.remove(str(site))


@pytest.mark.parametrize("changed", ["utils.py", "helper.py"])
def test_file_changed_between_search_and_import_is_refused(
    changed: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The folder search sees every file as compiled; then, before the import, the hook's own file (or the
    module it imports) changes. The hash is checked again on the bytes that are executed: refused, and
    nothing of the new content runs."""
    d, _ = _task_folder(tmp_path)
    ref = _ref(d)
    canary = tmp_path / "ran"
    real = pyref.find_task_folder

    def search_then_swap(*args, **kwargs):  # type: ignore[no-untyped-def]
        found = real(*args, **kwargs)
        assert found.folder == d.resolve()  # the search itself saw the compiled files
        f = d / changed
        f.write_text(_canary(canary) + f.read_text())
        return found

    monkeypatch.setattr(pyref, "find_task_folder", search_then_swap)
    with pytest.raises(ScoreError, match=rf"refusing .*{changed} changed since it was hashed"):
        pyref.load_ref(ref, pyref.Trust((d,)), "task t: process_results")
    assert not canary.exists()


def test_a_same_named_module_imported_elsewhere_is_not_handed_to_the_hook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another ``helper`` already in sys.modules (another task folder's, or any package's) must not stand in
    for the task folder's own hashed helper.py; and it is back in sys.modules after the load."""
    import types

    d, _ = _task_folder(tmp_path)
    other = types.ModuleType("helper")
    other.FACTOR = 99  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "helper", other)
    fn = pyref.load_ref(_ref(d), pyref.Trust((d,)), "task t: process_results")
    assert fn({}, []) == {"x": 2}
    assert sys.modules["helper"] is other
