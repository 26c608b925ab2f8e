"""Sandbox guarantees the docs states that the other sandbox tests do not reach: the throwaway uid, the
size cap of the writable temporary directory, the open-files limit, and the hidden /run and /var/tmp.
Each program prints what it observed; the assertions pin the values the docs promises."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from lmeval.scorer.sandbox import run_program
from lmeval.scorer.sandbox.run import SANDBOX_UID_BASE
from tests.scorer.sandbox_env import weaker


def _observe(code: str, **kwargs: object) -> dict[str, object]:
    res = run_program(code, timeout=20, **kwargs)  # type: ignore[arg-type]
    assert res.passed, res
    return dict(json.loads(res.stdout.strip().splitlines()[-1]))


def test_runs_as_a_throwaway_uid_not_root() -> None:
    code = "import os, json\nprint(json.dumps({'uid': os.getuid(), 'gid': os.getgid(), 'euid': os.geteuid()}))\n"
    seen = _observe(code)
    if os.geteuid() != 0:  # an unprivileged caller: the program keeps the caller's (non-root) uid
        weaker("throwaway uid", f"not root (uid {os.geteuid()}): no uid to drop to; CI runs this as root")
        assert seen["uid"] == os.geteuid()
        return
    assert seen["uid"] == seen["euid"] and seen["uid"] != 0 and seen["gid"] != 0
    assert int(str(seen["uid"])) >= SANDBOX_UID_BASE  # far from any real account
    # every program gets its own uid, so two programs cannot signal or read each other
    again = _observe("import os, json\nprint(json.dumps({'uid': os.getuid()}))\n")
    assert again["uid"] != seen["uid"]


def test_temporary_directory_is_capped_at_disk_mb() -> None:
    code = (
        "import os, json, tempfile\n"
        "written = 0\n"
        "err = ''\n"
        "try:\n"
        "    with open(os.path.join(tempfile.gettempdir(), 'fill'), 'wb') as f:\n"
        "        for _ in range(64):\n"
        "            f.write(b'x' * (1 << 20)); f.flush(); os.fsync(f.fileno()); written += 1\n"
        "except OSError as e:\n"
        "    err = e.strerror\n"
        "print(json.dumps({'mb': written, 'err': err, 'cwd_is_tmp': os.getcwd() == tempfile.gettempdir()}))\n"
    )
    seen = _observe(code, disk_mb=8, max_file_mb=64)
    assert seen["err"] == "No space left on device", seen
    assert 4 <= int(str(seen["mb"])) < 8, seen  # stopped by the 8 MB tmpfs, not by the 64 MB file limit
    assert seen["cwd_is_tmp"] is True


def test_open_files_limit() -> None:
    code = (
        "import os, json, resource\n"
        "fds = []\n"
        "try:\n"
        "    while len(fds) < 5000:\n"
        "        fds.append(os.open('/dev/null', os.O_RDONLY))\n"
        "except OSError as e:\n"
        "    err = e.strerror\n"
        "print(json.dumps({'opened': len(fds), 'err': err, 'limit': resource.getrlimit(resource.RLIMIT_NOFILE)}))\n"
    )
    seen = _observe(code)
    assert seen["limit"] == [256, 256]
    assert seen["err"] == "Too many open files" and int(str(seen["opened"])) < 256


@pytest.mark.parametrize("shared_dir", ["/run", "/var/tmp"])
def test_shared_runtime_directories_are_hidden(shared_dir: str) -> None:
    if not os.path.isdir(shared_dir):
        pytest.fail(f"{shared_dir} does not exist on this machine: the test needs it to plant a file")
    planted = Path(tempfile.mkdtemp(prefix="lmeval-planted-", dir=shared_dir))
    try:
        planted.chmod(0o755)
        (planted / "secret").write_text("token-42\n")
        (planted / "secret").chmod(0o644)  # readable by anyone: only the hiding mount protects it
        code = (
            "import os, json\n"
            f"p = {str(planted / 'secret')!r}\n"
            f"print(json.dumps({{'exists': os.path.exists(p), 'listing': sorted(os.listdir({shared_dir!r}))}}))\n"
        )
        seen = _observe(code)
        assert seen == {"exists": False, "listing": []}
    finally:
        shutil.rmtree(planted)


def test_every_home_directory_is_hidden() -> None:
    """Not only the caller's: another user's ``/home/<user>/.bashrc`` (world-readable) can be neither listed nor
    read, and ``/home`` and ``/root`` look empty."""
    if os.geteuid() != 0:
        pytest.fail("the test creates a user's home under /home: it needs root (CI runs as root)")
    os.makedirs("/home", exist_ok=True)
    user_home = Path(tempfile.mkdtemp(prefix="lmeval-user-", dir="/home"))
    try:
        user_home.chmod(0o755)
        (user_home / ".bashrc").write_text("export TOKEN=hunter2\n")
        (user_home / ".bashrc").chmod(0o644)  # readable by anyone: only the hiding mount protects it
        code = (
            "import os, json\n"
            f"p = {str(user_home / '.bashrc')!r}\n"
            "def ls(d):\n"
            "    try:\n"
            "        return sorted(os.listdir(d))\n"
            "    except OSError as e:\n"
            "        return type(e).__name__\n"
            "print(json.dumps({'exists': os.path.exists(p), 'home': ls('/home'), 'root': ls('/root'), "
            f"'user': ls({str(user_home)!r})}}))\n"
        )
        seen = _observe(code)
        assert seen["exists"] is False and seen["home"] == [] and seen["root"] in ([], "PermissionError"), seen
        assert seen["user"] in ("FileNotFoundError", []), seen
    finally:
        shutil.rmtree(user_home)
