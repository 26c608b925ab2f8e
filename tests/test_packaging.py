"""The wheel: built from the working tree, it holds the one ``lmeval`` package with every file read at run time
(configs, the lock and its reference plan, report assets, the plan format note), and installed into a fresh
venv outside the checkout it compiles, runs, scores and reports from any working folder.

The build needs no network (``--no-build-isolation``: setuptools from this environment); the venv gets the
wheel alone and sees this environment's dependencies through a ``.pth`` path entry (an entry of that kind
runs no ``.pth`` hooks of its own, so the editable install's finder stays out and the installed copy is used).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("LMEVAL_DATA_DIR", ROOT.parent / "shared" / "data"))
LINKED = sorted(p.name for p in (ROOT / "lmeval").iterdir() if p.is_symlink())  # compiler, conf, plans, ...
JUNK = shutil.ignore_patterns("__pycache__", "*.pyc", "*.msgpack.tmp", ".mypy_cache", ".ruff_cache")


def _source_tree(dest: Path) -> Path:
    """The files a wheel is built from, copied (links kept) so the build leaves nothing in the checkout."""
    dest.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, dest / name)
    shutil.copytree(ROOT / "lmeval", dest / "lmeval", symlinks=True, ignore=JUNK)
    for name in LINKED:
        shutil.copytree(ROOT / name, dest / name, symlinks=True, ignore=JUNK)
    return dest


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("wheel")
    src = _source_tree(tmp / "src")
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    cmd = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(tmp), str(src)]
    subprocess.run(cmd, check=True, env=env, cwd=tmp)
    (whl,) = tmp.glob("lmeval-*.whl")
    return whl


def _source_files(pkg: str, pattern: str) -> set[str]:
    base = ROOT / pkg
    return {
        f"lmeval/{pkg}/{p.relative_to(base).as_posix()}"
        for p in base.rglob(pattern)
        if "__pycache__" not in p.parts and p.is_file()
    }


def test_wheel_holds_the_lmeval_package_and_its_data(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    dist_info = {n for n in names if n.split("/")[0].endswith(".dist-info")}
    assert {n.split("/")[0] for n in names - dist_info} == {"lmeval"}  # no generic top-level names
    top_level = zipfile.ZipFile(wheel).read(next(n for n in dist_info if n.endswith("top_level.txt")))
    assert top_level.decode().split() == ["lmeval"]
    assert not [n for n in names if n.endswith((".pyc", ".pyo")) or "__pycache__" in n]
    assert not [n for n in names if "/tests/" in n or n.split("/")[-1].startswith("test_")]
    # every Python module of the CLI and of each linked package
    py = {f"lmeval/{p.name}" for p in (ROOT / "lmeval").glob("*.py")}
    py |= {f"lmeval/cli/{p.name}" for p in (ROOT / "lmeval" / "cli").glob("*.py")}  # the commands
    py |= {f"lmeval/flow/{p.name}" for p in (ROOT / "lmeval" / "flow").glob("*.py")}  # the staged-run driver
    for pkg in LINKED:
        py |= _source_files(pkg, "*.py")
    assert py - names == set()
    # every file read at run time
    data = _source_files("conf", "*.yaml") | _source_files("report", "assets/*")
    data |= _source_files("report", "export/eee_schemas/*")  # Every Eval Ever's schemas (lmeval export)
    data |= {"lmeval/lock/lock.json", "lmeval/plans/FORMAT.md", "lmeval/plans/scored/SCORED.md"}
    data |= _source_files("compiler", "tasklib/*.jsonl")  # the shipped judged task's questions (open_questions)
    lock = json.loads((ROOT / "lock" / "lock.json").read_text())
    data.add(f"lmeval/lock/{lock['reference']['plan']}")
    assert len(_source_files("conf", "*.yaml")) >= 15 and len(_source_files("report", "assets/*")) >= 2
    assert len(_source_files("report", "export/eee_schemas/*")) == 3
    assert data - names == set()
    # nothing else: no output folders or stray files swept in
    assert names - dist_info - py - data == set()
    entry_points = zipfile.ZipFile(wheel).read(next(n for n in dist_info if n.endswith("entry_points.txt")))
    assert "lmeval = lmeval.cli:entry" in entry_points.decode()


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv outside the checkout with the wheel installed; dependencies seen through a path entry."""
    d = tmp_path_factory.mktemp("venv") / "v"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(d)], check=True)
    py = d / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps", "--no-index", str(wheel)]
    subprocess.run(pip, check=True, env=dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1"))
    site = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    Path(site, "lmeval_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return d


def _work_dir(tmp: Path) -> Path:
    """A working folder holding lmeval's own output folders, and traps named like the linked packages."""
    for name in ("plans", "results", "compiler", "executor", "scorer", "conf", "lock"):
        (tmp / name).mkdir()
    for name in ("plans", "compiler"):
        (tmp / name / "__init__.py").write_text("raise ImportError('imported the working folder, not lmeval')\n")
    return tmp


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "PYTHONHOME", "LMEVAL_DATA_DIR"}}
    return dict(env, PYTHONNOUSERSITE="1", NO_COLOR="1", COLUMNS="200")


def _run(venv: Path, cwd: Path, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    p = subprocess.run([str(venv / "bin" / "lmeval"), *args], cwd=cwd, env=_env(), capture_output=True, text=True)
    if ok:
        assert p.returncode == 0, f"lmeval {' '.join(args)}: exit {p.returncode}\n{p.stdout}\n{p.stderr}"
    return p


def test_installed_package_is_the_wheel_from_any_folder(venv: Path, tmp_path: Path) -> None:
    cwd = _work_dir(tmp_path)
    code = (
        "import lmeval, lmeval.plans, lmeval.compiler, lmeval.lock.lockfile as lf, importlib.util as u; "
        "print(lmeval.__file__); print(lmeval.plans.__file__); print(lf.LOCK_PATH.is_file()); "
        "print([m for m in ('plans', 'compiler', 'executor', 'scorer', 'common') if u.find_spec(m)])"
    )
    p = subprocess.run([str(venv / "bin" / "python"), "-c", code], cwd=cwd, env=_env(), capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    init, plans, lock_file, generic = p.stdout.splitlines()
    assert Path(init).is_relative_to(venv) and Path(plans).is_relative_to(venv)
    assert not Path(init).resolve().is_relative_to(ROOT)
    assert lock_file == "True"
    # python -c puts the working folder first on sys.path: only the trap folders are found there, never
    # a generic name from site-packages
    assert generic == "['plans', 'compiler', 'executor', 'scorer']"


@pytest.mark.vllm
def test_installed_wheel_compiles_runs_and_reports_outside_the_checkout(venv: Path, tmp_path: Path) -> None:
    cwd = _work_dir(tmp_path)
    lock = json.loads((ROOT / "lock" / "lock.json").read_text())
    # the embedded task end to end: compile with the shipped configs, execute on vLLM, score
    out = _run(venv, cwd, "run", "+task=arith").stdout
    ref = lock["reference"]["plan_hash"][:12]
    assert f"lmeval-plans/arith-{ref}.msgpack" in out, out
    results = cwd / "results" / f"{ref}-tiny"
    scores = json.loads((results / "results.json").read_text(encoding="utf-8"))
    assert "exact_match,strict-match" in scores["results"]["arith"]
    assert (results / "samples.parquet").is_file() and (results / "manifest.json").is_file()
    # a data-backed task compiles to the hash the lock holds for it
    settings = lock["settings"]
    out = _run(
        venv, cwd, "compile", "+task=arc_easy", f"run.data_dir={DATA}", f"run.limit={settings['limit']}"
    ).stdout.splitlines()
    from lmeval.plans.plan import read_header

    header = read_header(cwd / out[-1])
    assert header.task("arc_easy").task_hash == lock["tasks"]["arc_easy"]["task_hash"]
    # the report reads its assets from the installed package
    _run(venv, cwd, "report", str(results), "-o", "report.html")
    page = (cwd / "report.html").read_text(encoding="utf-8")
    css = (ROOT / "report" / "assets" / "report.css").read_text(encoding="utf-8")
    assert css.strip()[:200] in page
    # the lock: an installed lmeval has no ../shared/data to default to: one line, exit 2
    p = _run(venv, cwd, "lock", ok=False)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert p.stderr.strip().splitlines() == [
        "lmeval lock: error: no reference data directory: pass --data-dir DIR or set LMEVAL_DATA_DIR "
        "(the reference data, files <name>/<split>.jsonl)"
    ]
