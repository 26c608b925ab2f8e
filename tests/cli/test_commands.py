"""The CLI's command table (``cli.MODULE_OF``): a command line naming a command imports that module alone, so the
table must name, for every module, exactly the commands it registers."""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys

from lmeval import cli


def _names(modules: tuple[str, ...]) -> set[str]:
    parser = argparse.ArgumentParser(prog="lmeval")
    sub = parser.add_subparsers(dest="command")
    for name in modules:
        importlib.import_module(name).register(sub)
    return set(sub.choices)


def test_every_module_registers_the_commands_the_table_gives_it() -> None:
    assert set(cli.MODULE_OF.values()) == set(cli.COMMAND_MODULES)
    for module in cli.COMMAND_MODULES:
        assert _names((module,)) == {c for c, m in cli.MODULE_OF.items() if m == module}, module


def test_a_command_line_imports_its_module_only() -> None:
    code = (
        "import sys; from lmeval import cli; p = cli.build_parser(['compile', '+task=arith']); "
        "print(sorted(m for m in sys.modules if m.startswith('lmeval.cli.')), 'hydra' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["['lmeval.cli.compile']", "False"]
    full = cli.build_parser(["--help"])
    assert isinstance(full, argparse.ArgumentParser)
    assert _names(cli.COMMAND_MODULES) == set(cli.MODULE_OF)
