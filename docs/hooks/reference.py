"""MkDocs hook: the reference pages generated from the code at build time (never stored in docs/).

- ``reference/cli.md``: every command, argument and option of ``lmeval`` from the argparse parser
  (``lmeval.cli.build_parser``, which registers each ``lmeval/cli/<command>.py`` module's parser);
- ``reference/overrides.md``: every ``run.*`` and ``model.*`` override with type, default and effect, from the
  config schema: the run keys ``compiler/runconfig.py`` accepts (``RUN_KEYS``; types from ``RunConfig``) and the
  model keys of ``conf/model/tiny.yaml`` (types from the executor's ``ModelSpec``); defaults and effects from
  the YAML files themselves (``conf/run/default.yaml``, ``conf/model/tiny.yaml``: the comment on each key's line);
- ``reference/results-schema.md``: the result columns of ``plans/results/manifest.py`` (``RESULT_COLUMNS``, with the
  comments beside them) and the manifest's fields (``RunManifest``).

A flag or an option without a description is a build error (``DocsError``), so the reference cannot drift
from the code. The functions take data and return Markdown; ``on_files`` adds the pages to the build.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
import typing
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]

GENERATED = ("reference/cli.md", "reference/overrides.md", "reference/results-schema.md")


class DocsError(Exception):
    """Something the code defines has no documentation: names the command/option/key."""


def _cell(text: Any) -> str:
    """One table cell: one line, ``|`` escaped, and ``<``/``>``/``&`` escaped outside code spans (Markdown
    would take ``<plan_hash12>`` for an HTML tag)."""
    parts = " ".join(str(text).split()).split("`")
    for i in range(0, len(parts), 2):
        parts[i] = parts[i].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return "`".join(parts).replace("|", "\\|")


# --- the CLI ----------------------------------------------------------------------------------------------


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    out = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {c.dest: c.help or "" for c in action._choices_actions}
            out += [(name, helps.get(name, ""), sub) for name, sub in action.choices.items()]
    return out


def _argument_row(cmd: str, action: argparse.Action) -> str:
    name = ", ".join(f"`{o}`" for o in action.option_strings) or f"`{action.metavar or action.dest}`"
    if action.help is None or not action.help.strip():
        raise DocsError(f"lmeval {cmd}: {name.replace('`', '')} has no help text (add help=... to its add_argument)")
    if action.option_strings and action.nargs != 0:
        value = action.metavar or action.dest.upper()
        value = f"`{value}`" + (f" (one of {', '.join(map(str, action.choices))})" if action.choices else "")
    elif not action.option_strings:
        value = {"*": "zero or more", "+": "one or more", "?": "optional", argparse.REMAINDER: "the rest"}.get(
            str(action.nargs), "required"
        )
    else:
        value = "flag"
    default = action.default
    shown = "" if default in (None, False, argparse.SUPPRESS) or (not action.option_strings) else f"`{default}`"
    if isinstance(action, argparse._AppendAction) and not default:
        shown = ""
    return f"| {name} | {_cell(value)} | {_cell(shown)} | {_cell(action.help % vars(action) if '%(' in action.help else action.help)} |"  # noqa: E501


def cli_reference(parser: argparse.ArgumentParser) -> str:
    """Markdown for every subcommand of ``parser``: its help, description, usage and arguments."""
    lines = [
        "# CLI reference",
        "",
        "Generated from lmeval's argparse parser (`lmeval/cli/`, one module per command) when the",
        "site is built: every command, argument and option below is what `lmeval COMMAND --help` prints.",
        "`KEY=VALUE` overrides are listed in [the override reference](overrides.md). Exit status: 0 success,",
        "2 bad input (one line on stderr naming file, task, field and doc id); `lmeval diff` exits 1 when the",
        "plans differ.",
        "",
    ]
    subs = _subcommands(parser)
    if not subs:
        raise DocsError("lmeval: the parser has no commands")
    for name, short, sub in subs:
        if not short.strip():
            raise DocsError(f"lmeval {name}: the command has no help text (add help=... to its add_parser)")
        lines += [f"## `lmeval {name}`", "", short.strip().rstrip(".") + "."]
        if sub.description:
            lines += ["", " ".join(sub.description.split())]
        usage = " ".join(sub.format_usage().replace("usage:", "", 1).split())
        lines += ["", "```text", usage, "```", "", "| argument | value | default | meaning |", "|---|---|---|---|"]
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS:
                continue
            lines.append(_argument_row(name, action))
        lines.append("")
    return "\n".join(lines)


# --- overrides --------------------------------------------------------------------------------------------

_KEY_LINE = re.compile(r"^(?:#\s?)?([A-Za-z_][A-Za-z0-9_]*):(.*?)(?:\s+#\s*(.*))?$")


def yaml_keys(text: str) -> dict[str, tuple[str, str]]:
    """Top-level ``key: value  # comment`` lines of a config file (also commented-out ``# key: value  # comment``
    lines: optional keys the file leaves out) as ``{key: (value, comment)}``."""
    out: dict[str, tuple[str, str]] = {}
    for line in text.splitlines():
        m = _KEY_LINE.match(line)
        if m and m.group(1) not in out and not line.startswith(" "):
            out[m.group(1)] = (m.group(2).strip(), (m.group(3) or "").strip())
    return out


def _type_name(tp: Any) -> str:
    if tp is type(None):
        return "null"
    origin = typing.get_origin(tp)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        return " or ".join(_type_name(a) for a in typing.get_args(tp))
    if origin is not None:
        return {list: "list", dict: "mapping"}.get(origin, str(origin))
    return {int: "int", float: "float", str: "string", bool: "bool"}.get(tp, getattr(tp, "__name__", str(tp)))


# keys whose record field is named or typed otherwise (the parsed value is a record of its own)
_RUN_TYPES = {
    "seed": "int, or 'python,numpy,torch,fewshot' (4 ints or null)",
    "seed_mode": "per_task or lm_eval",
    "reasoning": "mapping {end, start, unclosed} or null",
}


def _yaml_value(value: Any) -> str:
    import json

    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value) if isinstance(value, dict | list) else str(value)


def _table(prefix: str, keys: list[str], declared: dict[str, tuple[str, str]], defaults: dict[str, Any],
           types: dict[str, str], optional: set[str], source: str) -> list[str]:  # fmt: skip
    rows = ["| override | type | default | effect |", "|---|---|---|---|"]
    for key in keys:
        if key not in declared or not declared[key][1]:
            raise DocsError(f"{source}: {prefix}.{key} has no description (a '# ...' comment on its line)")
        effect = declared[key][1]
        default = "(absent)" if key in optional else f"`{_yaml_value(defaults.get(key))}`"
        rows.append(
            f"| `{prefix}.{key}` | {_cell(types.get(key, 'string or null'))} | {_cell(default)} | {_cell(effect)} |"
        )  # noqa: E501
    return rows


def override_reference(conf_dir: Path | None = None) -> str:
    """Markdown for every ``run.*`` and ``model.*`` override (type, default, effect)."""
    from lmeval.common.conf import conf_dir as default_conf
    from lmeval.compiler.config import OPTIONAL_RUN_KEYS
    from lmeval.compiler.runconfig import RUN_KEYS, RunConfig
    from lmeval.executor.modelconf import ModelSpec
    from lmeval.plans import backend_names

    conf = conf_dir or default_conf()
    run_yaml, model_yaml = conf / "run" / "default.yaml", conf / "model" / "tiny.yaml"
    import yaml

    run_text, model_text = run_yaml.read_text(encoding="utf-8"), model_yaml.read_text(encoding="utf-8")
    run_declared, model_declared = yaml_keys(run_text), yaml_keys(model_text)
    run_defaults, model_defaults = yaml.safe_load(run_text) or {}, yaml.safe_load(model_text) or {}
    run_hints = typing.get_type_hints(RunConfig)
    run_types = {
        k: _RUN_TYPES.get(k) or _type_name(run_hints[k]) for k in RUN_KEYS if k in run_hints or k in _RUN_TYPES
    }
    model_hints = typing.get_type_hints(ModelSpec)
    model_types = {k: _type_name(v) for k, v in model_hints.items()}
    *names, last = backend_names()
    model_types["backend"] = f"{', '.join(names)} or {last}"
    model_types["engine"] = "mapping (any vLLM EngineArgs field: model.engine.KEY=VALUE)"
    model_types["batch_size"] = "auto or int"
    model_keys = [k for k in model_defaults if k != "defaults"]
    lines = [
        "# Override reference",
        "",
        "Generated from the config schema when the site is built: the run options `compiler/config.py` accepts",
        "(`RUN_KEYS`, typed by its `RunConfig`) with the defaults and descriptions of `conf/run/default.yaml`,",
        "and the model keys of `conf/model/tiny.yaml` (typed by the executor's `ModelSpec`). Every option is a",
        "Hydra override on the command line of `lmeval compile`, `run` or `diff`; `model.*` overrides are also",
        'accepted by `lmeval execute`. "(absent)" means the key is left out of the plan unless set, so plans',
        "compiled without it keep their bytes. Examples and the rules that join them:",
        "[Configuration](configuration.md).",
        "",
        "## `run.*`",
        "",
        *_table("run", list(RUN_KEYS), run_declared, run_defaults, run_types, set(OPTIONAL_RUN_KEYS), str(run_yaml)),
        "",
        "## `model.*`",
        "",
        "`model=NAME` selects `conf/model/NAME.yaml` (shipped: "
        + ", ".join(f"`{p.stem}`" for p in sorted((conf / "model").glob("*.yaml")))
        + "); each key below overrides one setting of it.",
        "",
        *_table("model", model_keys, model_declared, model_defaults, model_types, set(), str(model_yaml)),
        "",
    ]
    return "\n".join(lines)


# --- the results directory ----------------------------------------------------------------------------------


def _column_comments(source: str, names: list[str]) -> dict[str, str]:
    """The comment beside (or the comment lines just above) each ``"name": "Type",`` entry."""
    out: dict[str, str] = {}
    above: list[str] = []
    for line in source.splitlines():
        s = line.strip()
        m = re.match(r'^"([a-z_]+)":\s*"[^"]+",\s*(?:#\s*(.*))?$', s)
        if m and m.group(1) in names:
            out[m.group(1)] = m.group(2) or " ".join(above)
            above = []
        elif s.startswith("#"):
            above.append(s.lstrip("# "))
        else:
            above = []
    return out


def results_reference() -> str:
    """Markdown for the result Parquet columns and the manifest's fields (``plans/results/manifest.py``)."""
    from lmeval.plans.results import manifest as results

    names = list(results.RESULT_COLUMNS)
    comments = _column_comments(Path(results.__file__).read_text(encoding="utf-8"), names)
    lines = [
        "# Results schema",
        "",
        "Generated from `plans/results/manifest.py` when the site is built. A results directory holds `manifest.json`",
        f"(a `RunManifest`) and Parquet parts `{results.PART_GLOB}`, one row per Instance with these columns,",
        "in this order (optional columns: "
        + ", ".join(f"`{c}`" for c in results.OPTIONAL_COLUMNS)
        + "; parts written before they existed read them as null). How they are written:",
        "[Executing a plan](execute.md).",
        "",
        "| column | type | meaning |",
        "|---|---|---|",
    ]
    for name, dtype in results.RESULT_COLUMNS.items():
        lines.append(f"| `{name}` | `{dtype}` | {_cell(comments.get(name, ''))} |")
    lines += ["", "## `manifest.json`", "", "| field | type |", "|---|---|"]
    hints = typing.get_type_hints(results.RunManifest)
    for f in dataclasses.fields(results.RunManifest):
        lines.append(f"| `{f.name}` | {_cell(_type_name(hints[f.name]))} |")
    lines.append("")
    return "\n".join(lines)


def generated_pages() -> dict[str, str]:
    """Every generated page by its path under docs/ (of this checkout's lmeval, whatever else is installed:
    MkDocs restores ``sys.path`` after loading a hook, so the checkout goes first here, at build time)."""
    if str(REPO) not in sys.path[:1]:
        sys.path.insert(0, str(REPO))
    from lmeval.cli import build_parser

    return {
        "reference/cli.md": cli_reference(build_parser()),
        "reference/overrides.md": override_reference(),
        "reference/results-schema.md": results_reference(),
    }


def on_files(files: Any, config: Any) -> Any:
    """MkDocs event: add the generated pages to the build (a missing description fails it)."""
    from mkdocs.exceptions import PluginError
    from mkdocs.structure.files import File

    try:
        pages = generated_pages()
    except DocsError as e:
        raise PluginError(f"docs reference: {e}") from None
    for path, content in pages.items():
        old = files.get_file_from_path(path)
        if old is not None:
            files.remove(old)
        files.append(File.generated(config, path, content=content))
    return files
