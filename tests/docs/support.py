"""Building the docs site in-process (MkDocs' own API, as ``mkdocs build --strict`` does), and the reference
generator (docs/hooks/reference.py) as a module."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]
HOOK = REPO / "docs" / "hooks" / "reference.py"


def build_site(site_dir: Path, docs_dir: Path | None = None) -> Path:
    """``mkdocs build --strict`` of this checkout (or of ``docs_dir`` with this checkout's mkdocs.yml) into
    ``site_dir``; raises what MkDocs raises (``Abort`` on a warning in strict mode, or on an error such as a
    flag without help text)."""
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    extra = {"docs_dir": str(docs_dir)} if docs_dir is not None else {}
    config = load_config(str(REPO / "mkdocs.yml"), site_dir=str(site_dir), strict=True, **extra)
    build(config)
    return site_dir


def reference() -> ModuleType:
    """docs/hooks/reference.py, imported once."""
    name = "lmeval_docs_reference"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, HOOK)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]
