"""API keys stay yours (#53, plans/apikeys.py): the key is sent only to the server this run's user chose (an
override, then ``$OPENAI_BASE_URL``; the plan's only when neither is given, named in a line first); a key in any
config or override is refused in one line; a key with CR/LF is refused; and not one byte that compile, execute,
run, score, judge, judge-score, export, report or show writes holds the key (acceptance 2). Local stubs only."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from lmeval.plans.results import read_results
from tests.executor.chatstub import Stub, serving
from tests.support import cli_in_process as cli
from tests.support import data_dir

COMPILE = ["+task=gsm8k", "run.limit=2", "model.backend=openai-chat", f"run.data_dir={data_dir()}"]


def _plan(tmp: Path, base_url: str, name: str = "plan.msgpack") -> Path:
    out = tmp / name
    rc, _, err = cli("compile", *COMPILE, f"+model.engine.base_url={base_url}", "+model.engine.model=stub",
                     "--out", str(out))  # fmt: skip
    assert rc == 0, err
    return out


def _execute(plan: Path, out: Path, *overrides: str) -> tuple[int, str, str]:
    """An execute that sends every request (no result store: these tests watch where requests and keys go)."""
    return cli("execute", str(plan), "--out", str(out), "--no-progress", "model.engine.backoff_s=0.001",
               "model.path=stub-model", "run.store=off", *overrides)  # fmt: skip


def test_the_key_goes_to_the_server_this_user_names_not_the_plans(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-mine")
    with serving(Stub()) as planted, serving(Stub()) as mine:
        plan = _plan(tmp_path, planted.url)  # a plan someone else compiled: it names their server
        monkeypatch.setenv("OPENAI_BASE_URL", mine.url)
        rc, _, err = _execute(plan, tmp_path / "env")
        assert rc == 0, err
        assert planted.auth == [] and mine.auth and set(mine.auth) == {"Bearer sk-mine"}
        assert "the plan's model.engine.base_url" not in err

        monkeypatch.delenv("OPENAI_BASE_URL")
        sent = len(mine.auth)
        rc, _, err = _execute(plan, tmp_path / "override", f"model.engine.base_url={mine.url}")
        assert rc == 0, err
        assert planted.auth == [] and len(mine.auth) > sent

        rc, _, err = _execute(plan, tmp_path / "plan")  # nothing given: the plan's server, named before it is asked
        assert rc == 0, err
        host = planted.url.split("//")[1].split("/")[0]
        assert f"sending the API key ($OPENAI_API_KEY) and requests to {host}, the plan's model.engine.base_url" in err
        assert set(planted.auth) == {"Bearer sk-mine"}
    assert len(read_results(tmp_path / "plan")) == 2


SECRET = "sk-in-an-override-123"


@pytest.mark.parametrize(
    "argv",
    [
        ["compile", *COMPILE, f"+model.engine.api_key={SECRET}"],
        ["run", *COMPILE, f"+model.engine.api_key={SECRET}"],
        ["execute", "PLAN", f"model.engine.api_key={SECRET}"],
        ["execute", "PLAN", f"model.engine={{api_key: {SECRET}}}"],
        ["judge", "RESULTS", "--judge", "single_10", "model=tiny", f"model.engine.api_key={SECRET}"],
        ["compile", *COMPILE, f"+model.engine.base_url=https://me:{SECRET}@127.0.0.1/v1"],
        ["execute", "PLAN", f"model.engine.base_url=https://me:{SECRET}@127.0.0.1/v1"],
    ],
    ids=["compile", "run", "execute", "execute-engine", "judge", "compile-userinfo", "execute-userinfo"],
)
def test_a_key_in_an_override_is_refused_in_one_line(tmp_path: Path, argv: list[str]) -> None:
    plan = tmp_path / "p.msgpack"
    rc, _, err = cli("compile", "+task=gsm8k", "run.limit=1", f"run.data_dir={data_dir()}", "--out", str(plan))
    assert rc == 0, err
    argv = [str(plan) if a == "PLAN" else str(tmp_path) if a == "RESULTS" else a for a in argv]
    rc, out, err = cli(*argv, *(["--out", str(tmp_path / "o")] if argv[0] in ("compile", "execute") else []))
    assert rc == 2 and len(err.strip().splitlines()) == 1, err
    why = "base_url: holds credentials" if "@" in argv[-1] else "api_key: an API key is never taken from a config"
    assert why in err and "OPENAI_API_KEY" in err
    assert SECRET not in out + err
    assert not any(SECRET.encode() in p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())


@pytest.mark.parametrize("key", ["sk-1\r\nX-Injected: yes", "sk-1\nx", "sk-1\x1b[2J"])
def test_a_key_with_a_line_break_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, key: str) -> None:
    with serving(Stub()) as stub:
        plan = _plan(tmp_path, stub.url)
        monkeypatch.setenv("OPENAI_API_KEY", key)
        rc, out, err = _execute(plan, tmp_path / "r", f"model.engine.base_url={stub.url}")
        assert stub.auth == []  # nothing was sent
    assert rc == 2 and len(err.strip().splitlines()) == 1, err
    assert "$OPENAI_API_KEY: the key holds a control character" in err and "sk-1" not in err


def test_no_byte_any_command_writes_holds_the_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Acceptance 2: with a planted key in the environment (and offered in overrides, which are refused), every
    file under the outputs and every line printed by compile, show, execute, run, score, judge, judge-score,
    export and report is searched for it."""
    key = f"sk-planted-{uuid.uuid4().hex}"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    printed: list[str] = []

    def run(*argv: str, ok: bool = True) -> None:
        rc, out, err = cli(*argv)
        printed.extend((out, err))
        assert (rc == 0) == ok, f"{argv}: {err}"

    with serving(Stub()) as stub:
        url = stub.url
        for offered in ([f"+model.engine.api_key={key}"], [f"model.engine.api_key={key}"]):
            run("compile", *COMPILE, *offered, "--out", str(tmp_path / "refused.msgpack"), ok=False)
            run("run", *COMPILE, *offered, "--out", str(tmp_path / "refused"), ok=False)
        plan = tmp_path / "plan.msgpack"
        run("compile", *COMPILE, f"+model.engine.base_url={url}", "+model.engine.model=stub", "--out", str(plan))
        run("show", str(plan), "--config")
        run(
            "execute",
            str(plan),
            "--out",
            str(tmp_path / "run"),
            "--no-progress",
            f"model.engine.api_key={key}",
            ok=False,
        )
        stub.faults = ["400"]  # a run that fails after its manifest is written
        run("execute", str(plan), "--out", str(tmp_path / "failed"), "--no-progress", "model.path=stub-model",
            "model.engine.concurrency=1", ok=False)  # fmt: skip
        assert (tmp_path / "failed" / "manifest.json").is_file()
        run("execute", str(plan), "--out", str(tmp_path / "run"), "--no-progress", "model.path=stub-model")
        run("score", str(tmp_path / "run"))
        run("run", *COMPILE, "+model.engine.model=stub", f"+model.engine.base_url={url}", "--no-progress",
            "--out", str(tmp_path / "oneshot"), "--plan-out", str(tmp_path / "oneshot.msgpack"))  # fmt: skip
        judge_plan = tmp_path / "judge.msgpack"
        run("judge", str(tmp_path / "run"), "--judge", "single_10", "model=tiny", f"model.engine.api_key={key}",
            "--out", str(judge_plan), ok=False)  # fmt: skip
        run("judge", str(tmp_path / "run"), "--judge", "single_10", "model=tiny", "model.backend=openai-chat",
            "apply_chat_template=false", "--out", str(judge_plan))  # fmt: skip
        run("execute", str(judge_plan), "--out", str(tmp_path / "judged"), "--no-progress",
            f"model.engine.base_url={url}", "model.engine.model=stub", "model.path=stub-model")  # fmt: skip
        run("judge-score", str(tmp_path / "judged"), "--into", str(tmp_path / "run"))
        for fmt in ("lm-eval-samples", "eee", "hf-eval-results"):
            run("export", "--format", fmt, "-o", str(tmp_path / f"export-{fmt}"), str(tmp_path / "run"))
        run("report", str(tmp_path / "run"), str(tmp_path / "oneshot"), "-o", str(tmp_path / "report.html"))
    assert f"Bearer {key}" in stub.auth  # the key was used: the search below is for something real
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(files) > 20 and (tmp_path / "run" / "manifest.json").is_file() and (tmp_path / "report.html").is_file()
    leaked = [str(p) for p in files if key.encode() in p.read_bytes()]
    assert leaked == [] and [t for t in printed if key in t] == []
    assert not any(key in v for k, v in os.environ.items() if k != "OPENAI_API_KEY")


def test_the_result_store_keys_an_api_model_by_the_server_that_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same plan and model name on another server (``$OPENAI_BASE_URL`` here, the plan's next) is another
    model: its answers are not served from the store (#63); the same server again is served."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-mine")
    store = f"run.store={tmp_path / 'store'}"
    with serving(Stub()) as planted, serving(Stub()) as mine:
        plan = _plan(tmp_path, planted.url)
        monkeypatch.setenv("OPENAI_BASE_URL", mine.url)
        for out in ("a", "b"):
            rc, _, err = cli("execute", str(plan), "--out", str(tmp_path / out), "--no-progress",
                             "model.path=stub-model", store)  # fmt: skip
            assert rc == 0, err
        assert len(mine.auth) == 2 and planted.auth == []  # two documents, asked once: "b" came from the store
        monkeypatch.delenv("OPENAI_BASE_URL")
        rc, _, err = cli("execute", str(plan), "--out", str(tmp_path / "c"), "--no-progress", "model.path=stub-model",
                         store)  # fmt: skip
        assert rc == 0, err
        assert len(planted.auth) == 2 and set(read_results(tmp_path / "c")["source"]) == {"computed"}
