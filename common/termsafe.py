"""Data-safe terminal output: text that came from users (task names, prompts, documents, generations, error
messages quoting them) is printed with its control characters escaped, so a task name holding ``\\x1b[2J`` or a
``\\r`` cannot clear, rewrite or hide what the terminal shows, and a lone surrogate cannot crash the print.

``term_safe`` is the one function; the CLI (``lmeval/cli.py``) routes every command's standard output through
``SafeStdout`` and its one-line errors through ``term_safe`` itself.
"""

from __future__ import annotations

import re
from typing import IO, Any

# C0 controls except tab and newline, DEL, C1 controls, lone surrogates, and the bidirectional overrides and
# isolates (which reorder what follows them on the line)
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u202a-\u202e\u2066-\u2069]")
_UNSAFE_LINE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\ud800-\udfff\u202a-\u202e\u2066-\u2069]")


def _escape(m: re.Match[str]) -> str:
    c = ord(m[0])
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def term_safe(text: str, *, one_line: bool = False) -> str:
    """``text`` with every control character (but tab and, unless ``one_line``, newline) written as an escape
    (``\\x1b``, ``\\r``: ``\\x0d``, ``\\u2066``); text without one is returned as is."""
    pattern = _UNSAFE_LINE if one_line else UNSAFE
    return pattern.sub(_escape, text) if pattern.search(text) else text


class SafeStdout:
    """A text stream that writes ``term_safe`` of everything to ``inner`` (and delegates everything else)."""

    def __init__(self, inner: IO[str]) -> None:
        self._inner = inner

    def write(self, text: str) -> int:
        self._inner.write(term_safe(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)
