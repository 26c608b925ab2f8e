"""Template bombs cost little: each ``lmeval compile`` on one (``cases_bounded.BOMBS``) ends in a one-line error
within 30 s with a peak memory under 1 GB (measured in a child process: ``RUSAGE_CHILDREN`` of a wrapper that
runs only that compile). And the time limits of renderings and compile-time hooks, in-process."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.hostile.cases_bounded import BOMBS
from tests.hostile.corpus import MINI_ROWS, MINI_YAML, env

_WRAP = (
    "import resource, subprocess, sys, json, time; t = time.monotonic(); "
    "p = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
    "print(json.dumps({'rc': p.returncode, 'stderr': p.stderr, 'seconds': time.monotonic() - t, "
    "'maxrss_kb': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))"
)


def _measure(root: Path, name: str, template: str) -> dict[str, Any]:
    d = root / name
    (d / "tasks").mkdir(parents=True)
    (d / "data" / "mini").mkdir(parents=True)
    (d / "data" / "mini" / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in MINI_ROWS))
    yaml_text = MINI_YAML.replace('doc_to_text: "Q: {{question}}\\nA:"', f"doc_to_text: {json.dumps(template)}")
    (d / "tasks" / "t.yaml").write_text(yaml_text, encoding="utf-8")
    argv = [
        sys.executable,
        "-m",
        "lmeval",
        "compile",
        f"run.include_path={d / 'tasks'}",
        "run.tasks=[mini]",
        f"run.data_dir={d / 'data'}",
        "--out",
        str(d / "out.msgpack"),
    ]
    p = subprocess.run(
        [sys.executable, "-c", _WRAP, *argv], env=env(), cwd=d, capture_output=True, text=True, timeout=120
    )
    assert p.returncode == 0, p.stderr
    out: dict[str, Any] = json.loads(p.stdout)
    out["written"] = (d / "out.msgpack").exists()
    return out


@pytest.fixture(scope="module")
def measured() -> dict[str, dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="lmeval-bombs-") as tmp, ThreadPoolExecutor(max_workers=3) as pool:
        futures = {n: pool.submit(_measure, Path(tmp), n, tpl) for n, (tpl, _) in BOMBS.items()}
        return {n: f.result() for n, f in futures.items()}


@pytest.mark.parametrize("name", sorted(BOMBS))
def test_template_bomb_is_cheap_and_one_line(name: str, measured: dict[str, dict[str, Any]]) -> None:
    m = measured[name]
    lines = m["stderr"].strip().splitlines()
    assert m["rc"] == 2 and len(lines) == 1 and "Traceback" not in m["stderr"], m["stderr"][-2000:]
    assert "t.yaml" in lines[0] and "task mini" in lines[0] and "doc_to_text" in lines[0] and BOMBS[name][1] in lines[0]
    assert m["seconds"] < 30, m
    assert m["maxrss_kb"] < 512 << 10, m  # 512 MiB (the acceptance bound is 1 GB)
    assert not m["written"]


def test_a_hook_call_is_stopped_at_its_time_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    import lmeval.compiler.build.render as render
    from lmeval.compiler.errors import CompileError
    from lmeval.compiler.tasks.functions import FunctionRef

    def spin(doc: dict[str, Any]) -> str:
        while True:
            pass

    monkeypatch.setattr(render, "HOOK_SECONDS", 0.5)
    monkeypatch.setattr(render, "resolve", lambda ref, **kw: spin)
    r = render.Renderer("mini", "t.yaml", ["question"], False)
    ref = FunctionRef("utils.spin")
    t = time.monotonic()
    with pytest.raises(CompileError, match=r"t.yaml: task mini, field doc_to_text, doc 3: .*0.5 s"):
        r._call(ref, "doc_to_text", {"question": "q"}, 3)
    assert time.monotonic() - t < 5


def test_rendering_is_unchanged_for_ordinary_templates() -> None:
    from lmeval.compiler.build.render import Renderer

    r = Renderer("mini", "t.yaml", ["question", "choices"], False)
    doc = {"question": "2+2", "choices": ["3", "4"], "n": 7}
    tpl = (
        '{{ question ~ "?" }} {{ "%s|%d" % (question, n) }} {{ n * 3 }} {{ 2 ** 10 }} {{ choices|join(", ") }} '
        '{% for c in choices %}{{ loop.index }}. {{ c }} {% endfor %}{{ "{:>5}".format(n) }}{{ "-" * 3 }}'
    )
    assert r.text(tpl, doc, 0) == "2+2? 2+2|7 21 1024 3, 4 1. 3 2. 4     7---"
