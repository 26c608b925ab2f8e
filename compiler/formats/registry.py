"""The one lookup of prompt-format adapters (issue #52): a format's name -> the object that renders a task in
it. An adapter carries its contract (``plans.PromptFormat``: what the scorer also knows of it) and its own way
of rewriting a task's config: OLMES' formats (``olmes.OlmesFormat``) and lm-eval 0.5's (``lm_eval_05.Format05``)
register here at import. Adding a format is one ``register_format`` call; nothing else names it."""

from __future__ import annotations

from typing import Protocol

from lmeval.plans import PromptFormat, register_prompt_format, unregister_prompt_format


class FormatAdapter(Protocol):
    """A prompt format's compiler side; ``contract`` is what both stages read."""

    @property
    def contract(self) -> PromptFormat: ...


_ADAPTERS: dict[str, FormatAdapter] = {}


def register_format(adapter: FormatAdapter) -> FormatAdapter:
    """Add ``adapter`` under its contract's name, and the contract to the plans' lookup (the same record when
    the contract ships there: a mismatch is refused)."""
    contract = register_prompt_format(adapter.contract)
    have = _ADAPTERS.get(contract.name)
    if have is not None and have != adapter:
        raise ValueError(f"prompt format {contract.name!r} has another adapter already")
    _ADAPTERS[contract.name] = adapter
    return adapter


def unregister_format(name: str) -> None:
    """Take a registered (non-shipped) format out of both lookups."""
    unregister_prompt_format(name)
    _ADAPTERS.pop(name, None)


def format_adapter(name: str | None) -> FormatAdapter | None:
    """The adapter of format ``name`` (no variant suffix), or None."""
    return None if name is None else _ADAPTERS.get(name)
