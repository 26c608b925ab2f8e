"""A backend's answers checked as they arrive: every input answered once, each answer of the right shape.

The job loop (``executor/jobloop.py``) hands a backend its inputs and reads back ``(index, output)`` pairs.
``checked_answers`` refuses, in one line naming the backend (and the Instance where the index names one), an
index that is not one of the inputs' or comes twice, an answer of the wrong type (``score_problem``,
``gen_problem``: a ``ScoreOutput`` of numbers; a ``GenOutput`` of ``Sample`` records, as many as were asked),
and a backend that stops before answering every input. A registered (plugin) backend that raises is one line
too; a built-in backend's exception is a bug and keeps its traceback. Rows of the jobs answered before the
refusal stay written (``executor/run.py`` flushes them): a rerun resumes after them.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from lmeval.executor.backends import samples_to_run
from lmeval.executor.errors import ExecuteError, failed
from lmeval.executor.requests import GenInput, GenOutput, Sample, ScoreOutput
from lmeval.plans import UserError, built_in_backend

# (an input, the backend's answer to it) -> what is wrong with the answer, or None
AnswerProblem = Callable[[Any, Any], "str | None"]


def score_problem(x: Any, out: Any) -> str | None:
    """What is wrong with a scoring answer (a ``ScoreOutput`` of a number and a bool), or None."""
    if not isinstance(out, ScoreOutput):
        return f"{type(out).__name__}, not a ScoreOutput"
    if not isinstance(out.logprob, numbers.Real) or isinstance(out.logprob, bool | np.bool_):
        return f"log-probability {out.logprob!r} is not a number"
    if not isinstance(out.is_greedy, bool | np.bool_):
        return f"is_greedy {out.is_greedy!r} is not a bool"
    return None


def gen_problem(x: GenInput, out: Any) -> str | None:
    """What is wrong with a generation answer (a ``GenOutput`` of as many ``Sample`` records as asked), or None."""
    if not isinstance(out, GenOutput):
        return f"{type(out).__name__}, not a GenOutput"
    if not isinstance(out.samples, list):
        return f"samples is {type(out.samples).__name__}, not a list"
    asked = sorted({samples_to_run(x.params), x.params.n})
    if len(out.samples) not in asked:
        return f"{len(out.samples)} samples, asked for {' or '.join(map(str, asked))}"
    for k, s in enumerate(out.samples):
        problem = _sample_problem(s)
        if problem is not None:
            return f"sample {k}: {problem}"
    return None


def _sample_problem(s: Any) -> str | None:
    if not isinstance(s, Sample):
        return f"{type(s).__name__}, not a Sample"
    if s.text is not None and not isinstance(s.text, str):
        return f"text is {type(s.text).__name__}, not str"
    ids = s.token_ids
    if ids is not None and not (isinstance(ids, list) and all(_is_int(i) for i in ids)):
        return "token_ids is not a list of integers"
    if s.text is None and ids is None:
        return "neither text nor token_ids"
    if not isinstance(s.finish_reason, str):
        return f"finish_reason {s.finish_reason!r} is not a string"
    if s.answer_from is not None and not (_is_int(s.answer_from) and 0 <= s.answer_from <= len(ids or ())):
        return f"answer_from {s.answer_from!r} is not a position in its token_ids"
    return None


def _is_int(v: Any) -> bool:
    return isinstance(v, int | np.integer) and not isinstance(v, bool | np.bool_)


def checked_answers(
    backend: str,
    answers: Callable[[], Iterable[tuple[int, Any]]],
    inputs: Sequence[Any],
    problem: AnswerProblem,
    where: Callable[[int], str],
) -> Iterator[tuple[int, Any]]:
    """The ``(index, output)`` pairs of ``answers()`` (the backend's call on ``inputs``), each checked;
    ``where(i)`` names input ``i``'s Instance. Refusals are ``ExecuteError`` lines naming ``backend``."""
    label = f"model.backend={backend}" + ("" if built_in_backend(backend) else " (a plugin backend)")
    seen = [False] * len(inputs)
    it = _guarded(label, backend, answers)
    for item in it:
        if not (isinstance(item, tuple) and len(item) == 2):
            raise ExecuteError(f"{label}: answered {type(item).__name__}, not an (index, answer) pair")
        i, out = item
        if not _is_int(i) or not 0 <= i < len(inputs):
            raise ExecuteError(f"{label}: answered input {i!r}, not one of the {len(inputs)} it was given")
        if seen[i]:
            raise ExecuteError(f"{where(i)}: {label}: answered the same input twice")
        wrong = problem(inputs[i], out)
        if wrong is not None:
            raise ExecuteError(f"{where(i)}: {label}: bad answer: {wrong}")
        seen[i] = True
        yield i, out
    if not all(seen):
        first = seen.index(False)
        raise ExecuteError(f"{where(first)}: {label}: answered {sum(seen)} of the {len(inputs)} inputs it was given")


def _guarded(label: str, backend: str, answers: Callable[[], Iterable[tuple[int, Any]]]) -> Iterator[Any]:
    """``answers()`` iterated; a plugin backend's exception there becomes one line."""
    plugin = not built_in_backend(backend)
    try:
        it = iter(answers())
        while True:
            try:
                item = next(it)
            except StopIteration:
                return
            yield item
    except UserError:
        raise
    except Exception as e:
        if not plugin:
            raise
        raise ExecuteError(f"{label}: {failed('answer', e)}") from None
