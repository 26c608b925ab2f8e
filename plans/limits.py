"""Limits on untrusted input, shared by every stage: one rule, one place.

What a plan can carry is what its canonical msgpack encoding can: integers in the 64-bit range, valid
Unicode strings (no lone surrogates), values nested at most ``MAX_DEPTH`` deep. ``value_problem`` checks a
parsed value against those rules (and against ``MAX_NODES``, which catches YAML alias bombs: an alias counts
every time it is reached), so ``lmeval validate`` and ``lmeval compile`` reject exactly the same data rows and
spec lines, and a results manifest or task YAML cannot smuggle in what would crash a later stage.

``open_regular`` opens a file an input names only when it is a regular file (not ``/dev/zero``, a FIFO, a
directory) and not over a size limit, without blocking on a FIFO; ``read_lines`` reads such a file a line at a
time, each line bounded.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import stat
from collections.abc import Iterator
from typing import IO, Any

from lmeval.common import InputError, UserError, file_kind
from lmeval.plans.jsonwhere import too_deep_at

__all__ = ["InputError", "UserError", "file_kind"]  # re-exported: the stages import them from here

MAX_DEPTH = 64  # nesting of lists/objects in one value (a document row, a spec line, a manifest)
UINT64_MAX = (1 << 64) - 1
INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
MAX_NODES = 1_000_000  # values in one parsed document, aliases expanded (a YAML alias bomb has billions)
MAX_ROW_BYTES = 16 << 20  # one line of a JSONL data file
MAX_YAML_BYTES = 4 << 20  # one task YAML file
MAX_MANIFEST_BYTES = 16 << 20  # a results directory's manifest.json
MAX_REPEATS = 1024  # an Instance's ``repeats`` (lm-eval's self-consistency tasks use up to 64)
MAX_GEN_TOKS = 1 << 20  # a generation's max_gen_toks (and its aliases)
MAX_TOKEN_ID = (1 << 32) - 1  # a token id in a plan or a server's answer (vocabularies are far smaller)

_SURROGATE = re.compile("[\ud800-\udfff]")
_CONTAINERS = (dict, list, tuple)


def open_regular(path: str | os.PathLike[str], *, max_bytes: int | None = None, what: str = "file") -> IO[bytes]:
    """``path`` opened for binary reading; ``InputError`` (one line naming it) when it is missing, not a
    regular file or larger than ``max_bytes``. Opening never blocks (a FIFO is refused, not read)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise InputError(f"{path}: cannot open {what} (No such file or directory)") from None
    except IsADirectoryError:
        raise InputError(f"{path}: expected a {what}, found a directory") from None
    except OSError as e:
        raise InputError(f"{path}: cannot open the {what}: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"{path}: expected a regular {what}, found {file_kind(st.st_mode)}")
        if max_bytes is not None and st.st_size > max_bytes:
            raise InputError(f"{path}: the {what} has {st.st_size} bytes, more than the limit of {max_bytes}")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_lines(
    path: str | os.PathLike[str], *, max_line: int = MAX_ROW_BYTES, what: str = "file"
) -> Iterator[tuple[int, bytes]]:
    """The lines of ``path`` (numbered from 1, without their newline), read one at a time from the file
    ``open_regular`` opens (a FIFO, ``/dev/zero`` or a directory is refused unread); ``InputError`` naming the
    line for one longer than ``max_line`` bytes, read no further than that (a 2 GB line of NULs costs
    ``max_line`` bytes of memory, not 2 GB)."""
    with open_regular(path, what=what) as f:
        n = 0
        while True:
            raw = f.readline(max_line + 1)
            if not raw:
                return
            n += 1
            line = raw[:-1] if raw.endswith(b"\n") else raw
            if len(line) > max_line:
                raise InputError(f"{path} line {n}: longer than {max_line} bytes (the limit of a {what} line)")
            yield n, line


def _scalar_problem(v: Any) -> tuple[str, str] | None:
    t = type(v)
    if t is str:
        if not v.isascii():
            m = _SURROGATE.search(v)
            if m is not None:
                return "lone_surrogate", f"a string holds a lone surrogate ({m[0]!r})"
    elif t is int and not INT64_MIN <= v <= UINT64_MAX:
        digits = str(v) if abs(v) < 10**30 else f"{str(v)[:12]}... ({len(str(abs(v)))} digits)"
        return "integer_out_of_range", f"integer {digits} is outside the 64-bit range"
    return None


def value_problem(value: Any) -> tuple[str, str] | None:
    """``(rule, message)`` for the first way ``value`` breaks the rules above, or None. Iterative: a deep
    value cannot exhaust the stack here; a value reached twice (a YAML alias) counts twice."""
    if type(value) not in _CONTAINERS:
        return _scalar_problem(value)
    stack: list[tuple[Any, int]] = [(value, 1)]
    nodes = 1
    while stack:
        c, depth = stack.pop()
        if depth > MAX_DEPTH:
            return "nesting_too_deep", f"nested deeper than {MAX_DEPTH} levels"
        if type(c) is dict:
            nodes += 2 * len(c)
            children: Any = itertools.chain(c.keys(), c.values())
        else:
            nodes += len(c)
            children = c
        if nodes > MAX_NODES:
            return "too_many_values", f"more than {MAX_NODES} values (YAML aliases expand to this many?)"
        for v in children:
            t = type(v)
            if t is str:
                if not v.isascii() and _SURROGATE.search(v):
                    return _scalar_problem(v)
            elif t is int:
                if not INT64_MIN <= v <= UINT64_MAX:
                    return _scalar_problem(v)
            elif t in _CONTAINERS:
                stack.append((v, depth + 1))
    return None


def loads_json(text: str | bytes) -> Any:
    """``json.loads`` under the rules above; ``ValueError`` (a one-line message) when the text breaks them
    or is not JSON."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"not JSON: {e.msg} (line {e.lineno}, column {e.colno})") from None
    except UnicodeDecodeError as e:
        raise ValueError(f"not UTF-8 ({e.reason} at byte {e.start})") from None
    except ValueError as e:  # e.g. an integer of more than 4300 digits
        raise ValueError(f"not JSON: {str(e).splitlines()[0][:120]}") from None
    problem = value_problem(value)
    if problem is not None:
        raise ValueError(problem[1])
    return value


def json_nesting_within(text: str, limit: int = MAX_DEPTH) -> bool:
    """Whether ``json.loads(text)`` would nest no deeper than ``limit`` lists/objects before it returns or
    fails: one linear scan of the brackets outside strings (``plans/jsonwhere.py``), so untrusted text (a model's
    reply) can be bounded before ``json.loads`` recurses into it. Text that is not JSON may pass (``json.loads``
    then refuses it)."""
    return too_deep_at(text, limit) is None


# A trajectory task (compiler/trajectories.py) makes one request per recorded reply, each holding the whole
# conversation before it: the plan holds the sum over scored steps of their conversations, which grows with
# the square of a conversation's length (200 messages of 20 KB: 200 M characters; 1,500 of 10 KB: 5.6 G).
# Past this many characters in all a trajectory file is refused before anything is rendered. A file at the
# limit (16 Mi tokens or so of scored context) compiles in about 1 GB (token ids in bounded batches:
# compiler/encode/plan_records.py); tests/compiler/test_trajectory_memory.py measures it.
MAX_TRAJECTORY_CHARS = 64 << 20
