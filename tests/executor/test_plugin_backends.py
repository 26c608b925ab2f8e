"""Plugin backends that take another's place, cannot load, or answer out of range (#64's probe list).

Registering under a built-in's name (``fake``: the manifest would name the built-in while the plugin answered),
over another registration, or under a name ``model.backend=NAME`` cannot carry, is refused. Executing (a real
``lmeval execute`` process with the plugin imported first): a module or class that is not there, a plugin that
raises when imported, started or answering, an answer of the wrong type or count (one answer short used to pass
with exit 0), an index it was not given or gives twice: one line naming the backend and what was wrong, exit 2,
no traceback; the plan is untouched, and the rows of the requests answered before stay (a rerun resumes them)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from lmeval.plans import (
    BackendEntry,
    RegistrationError,
    backend_names,
    find_backend,
    register_backend,
    unregister_backend,
)
from lmeval.plans.vocab import backends as table
from tests.hostile.corpus import DATA
from tests.hostile.plugins import assert_one_line, lmeval_with, snapshot, write_plugin

BUILT_IN = ("vllm", "hf", "openai", "openai-chat", "fake")


@pytest.fixture
def own_table(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(table, "_TABLE", dict(table._TABLE))  # registrations end with the test
    yield


@pytest.mark.parametrize("name", BUILT_IN)
def test_a_built_in_name_is_refused(own_table: None, name: str) -> None:
    before = find_backend(name)
    with pytest.raises(RegistrationError, match=f"^backend '{name}' is built in"):
        register_backend(BackendEntry(name, "plug_backend", "PlugBackend"))
    assert find_backend(name) is before and find_backend(name).module.startswith("lmeval.executor.backends.")  # type: ignore[union-attr]
    with pytest.raises(RegistrationError, match="is built in"):
        unregister_backend(name)


def test_a_second_registration_is_refused_unless_the_first_is_unregistered(own_table: None) -> None:
    first, second = BackendEntry("plug", "plug_a", "A"), BackendEntry("plug", "plug_b", "B")
    register_backend(first)
    with pytest.raises(RegistrationError, match=r"^backend 'plug' is registered already \(plug_a\); unregister"):
        register_backend(second)
    assert find_backend("plug") is first
    unregister_backend("plug")  # replacing is said in so many words
    register_backend(second)
    assert find_backend("plug") is second and backend_names() == (*BUILT_IN, "plug")


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (BackendEntry("", "m", "C"), "backend name '' is not a plain name"),
        (BackendEntry("two words", "m", "C"), "is not a plain name"),
        (BackendEntry("a=b", "m", "C"), "is not a plain name"),
        (BackendEntry("a,b", "m", "C"), "is not a plain name"),
        (BackendEntry("plug", "", "C"), "backend 'plug': module '' is not a Python name"),
        (BackendEntry("plug", "m", "no such"), "backend 'plug': class 'no such' is not a Python name"),
    ],
)
def test_a_name_a_run_cannot_carry_is_refused(own_table: None, entry: BackendEntry, message: str) -> None:
    with pytest.raises(RegistrationError) as e:
        register_backend(entry)
    assert message in str(e.value) and isinstance(e.value, ValueError)
    assert backend_names() == BUILT_IN


# ------------------------------------------------------------ a real lmeval execute, the plugin imported first

PLUGIN = """
from lmeval.executor.requests import GenOutput, Sample, ScoreOutput
from lmeval.plans import BackendEntry, register_backend

MODE = {mode!r}


class PlugBackend:
    name = "plug"

    def __init__(self, spec, model_dir):
        if MODE == "raises_on_start":
            raise RuntimeError("no engine here")
        self.max_length = "long" if MODE == "max_length_not_a_number" else 2048
        self.tokenizer = None
        if MODE == "no_generate":
            self.generate = None

    def score(self, inputs):
        for i, x in enumerate(inputs):
            if MODE == "raises_answering" and i == 2:
                raise RuntimeError("lost the connection")
            if MODE == "score_not_a_number":
                yield i, ScoreOutput("-1.5", True)
                continue
            yield i, ScoreOutput(-1.0 - i % 3, i % 2 == 0)

    def generate(self, inputs):
        for i, x in enumerate(inputs):
            if MODE == "one_answer_short" and i == len(inputs) - 1:
                return
            if MODE == "index_out_of_range":
                i += len(inputs)
            if MODE == "same_index_twice":
                i = 0
            out = GenOutput([Sample(" 42", None, "stop")])
            if MODE == "not_a_gen_output":
                out = " 42"
            if MODE == "no_samples":
                out = GenOutput([])
            if MODE == "text_not_a_string":
                out = GenOutput([Sample(42, None, "stop")])
            yield i, out

    def engine_args(self):
        return {{}}

    def close(self):
        pass


register_backend(BackendEntry("plug", {module!r}, {cls!r}))
"""


@pytest.fixture(scope="module")
def planned(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """arith (generation) and arc_easy (log-likelihood), 3 documents each, compiled: (folder, plan)."""
    root = tmp_path_factory.mktemp("plugin-backends")
    plan = root / "plan.msgpack"
    write_plugin(root / "plugins", "plug_good", PLUGIN.format(mode="good", module="plug_good", cls="PlugBackend"))
    p = lmeval_with(root / "plugins", "plug_good", "compile", "+task=[arith,arc_easy]", "run.limit=3",
                    f"run.data_dir={DATA}", "--out", str(plan), cwd=root)  # fmt: skip
    assert p.returncode == 0, p.stderr[-3000:]
    return root, plan


BROKEN = 'raise ImportError("the plugin\'s own import failed")\n'


def _execute(
    planned: tuple[Path, Path], mode: str, out: str, module: str = "", cls: str = "PlugBackend"
) -> subprocess.CompletedProcess[str]:
    """``lmeval execute`` of the plan with the plugin of ``mode`` registered (its entry naming ``module``:
    the registering module itself by default)."""
    root, plan = planned
    name = f"plug_{mode}"
    if mode == "raises_on_import":  # the module the entry names (not the one registering it) fails to import
        write_plugin(root / "plugins", "plug_broken", BROKEN)
        module = "plug_broken"
    write_plugin(root / "plugins", name, PLUGIN.format(mode=mode, module=module or name, cls=cls))
    return lmeval_with(root / "plugins", name, "execute", str(plan), "model.backend=plug", "--out", str(root / out),
                       "--no-progress", cwd=root)  # fmt: skip


PLUGIN_NAMED = "model.backend=plug (a plugin backend"


@pytest.mark.parametrize(
    ("mode", "module", "cls", "needles"),
    [
        ("good", "no_such_module", "PlugBackend", ("no_such_module:PlugBackend)", "no module 'no_such_module'")),
        ("good", "", "NoSuchClass", ("has no class 'NoSuchClass'",)),
        ("raises_on_import", "", "PlugBackend", ("failed to import (ImportError: the plugin's own import failed)",)),
        ("raises_on_start", "", "PlugBackend", ("failed to start (RuntimeError: no engine here)",)),
        ("max_length_not_a_number", "", "PlugBackend", ("max_length 'long' is not a positive integer",)),
        ("no_generate", "", "PlugBackend", ("PlugBackend has no method generate",)),
        ("raises_answering", "", "PlugBackend", ("failed to answer (RuntimeError: lost the connection)",)),
        ("score_not_a_number", "", "PlugBackend", ("task arc_easy", "bad answer: log-probability '-1.5' is not")),
        ("not_a_gen_output", "", "PlugBackend", ("task arith", "bad answer: str, not a GenOutput")),
        ("no_samples", "", "PlugBackend", ("task arith", "bad answer: 0 samples, asked for 1")),
        ("text_not_a_string", "", "PlugBackend", ("task arith", "bad answer: sample 0: text is int, not str")),
        ("one_answer_short", "", "PlugBackend", ("task arith", "answered 2 of the 3 inputs it was given")),
        ("index_out_of_range", "", "PlugBackend", ("answered input 3, not one of the 3 it was given",)),
        ("same_index_twice", "", "PlugBackend", ("task arith", "answered the same input twice")),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)  # fmt: skip
def test_a_plugin_backend_that_fails_is_one_line(
    planned: tuple[Path, Path], mode: str, module: str, cls: str, needles: tuple[str, ...]
) -> None:
    root, plan = planned
    before = plan.read_bytes()
    out = f"r-{mode}-{cls}-{module}"
    p = _execute(planned, mode, out, module, cls)
    assert_one_line(p, "execute", PLUGIN_NAMED, *needles)
    assert plan.read_bytes() == before


def test_answers_before_the_failure_stay(planned: tuple[Path, Path]) -> None:
    """arc_easy's scoring answers came before the generation that was one answer short: they are written, the
    manifest is not marked finished, and a rerun with a backend that answers everything resumes after them."""
    root, _ = planned
    p = _execute(planned, "one_answer_short", "r-resume")
    assert_one_line(p, "execute", PLUGIN_NAMED, "answered 2 of the 3 inputs")
    out = root / "r-resume"
    kept = snapshot(out)
    assert json.loads((out / "manifest.json").read_text())["finished"] is None
    assert any(k.endswith(".parquet") for k in kept)
    p = _execute(planned, "good", "r-resume")
    assert p.returncode == 0, p.stderr[-3000:]
    resumed = int(p.stderr.split("resumed ")[1].split()[0])
    assert resumed >= 3 + 2, p.stderr  # the log-likelihood documents' requests and the two generations answered
    assert all(snapshot(out).get(k) == v for k, v in kept.items() if k.endswith(".parquet"))
