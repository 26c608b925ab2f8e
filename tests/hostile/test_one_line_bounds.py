"""Inputs that used to end in a traceback or a megabyte error line (#53): a task-name seed above 64 bits, a
5000-digit seed or ``pass@K``, 20,000 sweep seeds (refused before any variant is expanded), a 1 MB value
quoted in an error line (cut by ``common.quoted`` and, for any message, by the CLI's cap)."""

from __future__ import annotations

import pytest

from lmeval.common import quoted
from tests.support import cli_in_process, data_dir

DIGITS = "9" * 5000


def _compile(*overrides: str) -> tuple[int, str]:
    rc, _, err = cli_in_process(
        "compile",
        *overrides,
        "run.limit=2",
        "model=tiny",
        f"run.data_dir={data_dir()}",
        "--out",
        "/nonexistent/never-written.msgpack",
    )
    return rc, err


@pytest.mark.parametrize(
    ("task", "says"),
    [
        ("arc_easy@mcf+seed18446744073709551616", "the seed is above 2**64 - 1"),
        ("arc_easy@mcf+seed18446744073709551615x", "a variant is FORMAT[+LABELS][+seedN]"),
        (f"arc_easy@mcf+seed{DIGITS}", "characters, cut)"),
    ],
)
def test_task_name_seeds_beyond_64_bits_are_one_short_line(task: str, says: str) -> None:
    rc, err = _compile(f"+task={task}")
    assert rc == 2 and err.count("\n") == 1 and says in err and "Traceback" not in err, err[-500:]
    assert len(err) < 4200, len(err)


def test_pass_at_with_5000_digits_is_an_unknown_reduction() -> None:
    from lmeval.plans import SampleScoresError, parse_sample_scores

    with pytest.raises(SampleScoresError, match="unknown reduction 'pass@9999") as e:
        parse_sample_scores([f"pass@{DIGITS}"], "run.sample_scores")
    assert len(str(e.value)) < 200
    assert parse_sample_scores(["pass@1", "pass@999999"], "f") == ["pass@1", "pass@999999"]


def test_20000_sweep_seeds_are_refused_before_expansion(monkeypatch: pytest.MonkeyPatch) -> None:
    from lmeval.compiler.errors import CompileError
    from lmeval.compiler.formats import sweep

    def never(*_: object) -> None:
        raise AssertionError("variants expanded before the limit was checked")

    monkeypatch.setattr(sweep.Sweep, "variants", never)
    with pytest.raises(CompileError, match="lists 20000 values; a sweep has at most 256 variants"):
        sweep.parse_sweep({"seeds": list(range(20000))})
    with pytest.raises(CompileError, match="must list only non-negative integers, got 18446744073709551616"):
        sweep.parse_sweep({"seeds": [1 << 64]})


def test_quoted_cuts_long_values() -> None:
    assert quoted("abc") == "'abc'"
    q = quoted("y" * (1 << 20))
    assert len(q) < 100 and q.startswith("'yyy") and q.endswith("(1048576 characters)")
