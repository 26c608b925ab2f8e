"""The docs site builds with warnings as errors, and its reference pages are generated from the code
(docs/hooks/reference.py): every command, flag and option is in them, and one without a description fails
the build."""

from __future__ import annotations

import argparse
import html
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.docs.support import REPO, build_site, reference


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_site(tmp_path_factory.mktemp("site"))


def _text(page: Path) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", page.read_text(encoding="utf-8")))


def test_every_command_and_flag_is_in_the_cli_reference(site: Path) -> None:
    from lmeval.cli import MODULE_OF, build_parser

    text = _text(site / "reference" / "cli.html")
    flat = " ".join(text.split())
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert set(sub.choices) == set(MODULE_OF)
    for name, cmd in sub.choices.items():
        assert f"lmeval {name}" in text, name
        for action in cmd._actions:
            for opt in action.option_strings:
                assert opt in text, (name, opt)
            if action.help and action.help != argparse.SUPPRESS and not isinstance(action, argparse._HelpAction):
                shown = (action.help % vars(action) if "%(" in action.help else action.help).replace("`", "")
                assert " ".join(shown.split()) in flat, (name, action.dest)


def test_the_commands_page_names_every_command() -> None:
    from lmeval.cli import MODULE_OF

    text = (REPO / "docs" / "reference" / "commands.md").read_text(encoding="utf-8")
    assert all(f"lmeval {name} " in text for name in MODULE_OF), [n for n in MODULE_OF if f"lmeval {n} " not in text]


def test_every_run_and_model_option_is_in_the_override_reference(site: Path) -> None:
    import yaml

    from lmeval.compiler.config import RUN_KEYS

    text = _text(site / "reference" / "overrides.html")
    model_keys = yaml.safe_load((REPO / "conf" / "model" / "tiny.yaml").read_text(encoding="utf-8"))
    for key in [f"run.{k}" for k in RUN_KEYS] + [f"model.{k}" for k in model_keys]:
        assert key in text, key
    # types, defaults and effects come from RunConfig and the YAML comments
    flat = " ".join(text.split())
    assert "run.seed_mode per_task or lm_eval (absent) per_task (seeded afresh for each task)" in flat
    assert "run.limit int or float or null null first N docs per task" in flat
    assert 'model.engine mapping (any vLLM EngineArgs field: model.engine.KEY=VALUE) {"seed": 0}' in flat


def test_design_notes_are_included_not_copied(site: Path) -> None:
    plan = _text(site / "reference" / "plan-format.html")
    scored = _text(site / "reference" / "scored-run.html")
    assert "The plan format (design note)" in plan and "Function references" in plan
    assert "The scored-run format (design note)" in scored
    for page in (REPO / "docs").rglob("*.md"):
        body = page.read_text(encoding="utf-8")
        assert "## Function references" not in body, f"{page}: plans/FORMAT.md copied instead of included"
    # the results schema lists every result column
    from lmeval.plans.results.manifest import RESULT_COLUMNS

    schema = _text(site / "reference" / "results-schema.html")
    assert all(c in schema for c in RESULT_COLUMNS)


def test_a_flag_without_help_fails_the_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mkdocs.exceptions import Abort

    import lmeval.cli.show as show

    real = show.register

    def register(sub: Any) -> None:
        real(sub)
        sub.choices["show"].add_argument("--undocumented-flag", action="store_true")

    monkeypatch.setattr(show, "register", register)
    with pytest.raises(Abort):
        build_site(tmp_path / "site")
    from lmeval.cli import build_parser

    ref = reference()
    with pytest.raises(ref.DocsError, match="lmeval show: --undocumented-flag has no help text"):
        ref.cli_reference(build_parser())


def test_a_run_option_without_description_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import lmeval.compiler.config as config

    ref = reference()
    DocsError, override_reference = ref.DocsError, ref.override_reference
    conf = tmp_path / "conf"
    shutil.copytree(REPO / "conf", conf)
    override_reference(conf)  # as shipped: every key described
    monkeypatch.setattr(config, "RUN_KEYS", (*config.RUN_KEYS, "new_option"))
    with pytest.raises(DocsError, match=r"run\.new_option has no description"):
        override_reference(conf)
    monkeypatch.undo()
    model = conf / "model" / "tiny.yaml"
    model.write_text(re.sub(r"(?m)^(dtype: auto)\s+#.*$", r"\1", model.read_text(encoding="utf-8")))
    with pytest.raises(DocsError, match=r"model\.dtype has no description"):
        override_reference(conf)


def test_a_broken_link_fails_the_strict_build(tmp_path: Path) -> None:
    from mkdocs.exceptions import Abort

    docs = tmp_path / "docs"
    shutil.copytree(REPO / "docs", docs)
    page = docs / "explanation" / "compiled-plan.md"
    page.write_text(page.read_text(encoding="utf-8") + "\nSee [nowhere](no-such-page.md).\n", encoding="utf-8")
    with pytest.raises(Abort):
        build_site(tmp_path / "site", docs_dir=docs)
