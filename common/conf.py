"""Where the shipped Hydra configs live (``conf/``: ``config.yaml``, ``model/``, ``run/``, ``task/``): one
rule for every stage. In a checkout ``lmeval/conf`` links to the top-level ``conf/``; a wheel holds the
folder itself; both sit beside ``common/``."""

from __future__ import annotations

from pathlib import Path

CONF_DIR = Path(__file__).resolve().parents[1] / "conf"


def conf_dir(*parts: str) -> Path:
    """``conf/`` or a folder under it (``conf_dir("task")``)."""
    return CONF_DIR.joinpath(*parts)
