"""``plans.limits`` at its boundaries, and the conf/ YAML check that runs before Hydra (in-process)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lmeval.compiler import config
from lmeval.compiler.errors import CompileError
from lmeval.plans.limits import INT64_MIN, MAX_DEPTH, MAX_NODES, UINT64_MAX, InputError, open_regular, value_problem


def _nest(depth: int) -> object:
    v: object = 1
    for _ in range(depth - 1):
        v = [v]
    return v


@pytest.mark.parametrize(
    ("value", "rule"),
    [
        (UINT64_MAX, None),
        (UINT64_MAX + 1, "integer_out_of_range"),
        (INT64_MIN, None),
        (INT64_MIN - 1, "integer_out_of_range"),
        ({"k": [True, 1.5e308, None, "é"]}, None),
        ("a\udc80", "lone_surrogate"),
        ({"\ud800": 1}, "lone_surrogate"),
        (_nest(MAX_DEPTH + 1), None),  # MAX_DEPTH lists around a scalar
        (_nest(MAX_DEPTH + 2), "nesting_too_deep"),
    ],
)
def test_value_rules_at_their_boundaries(value: object, rule: str | None) -> None:
    got = value_problem(value)
    assert (got[0] if got else None) == rule


def test_shared_values_count_each_time_they_are_reached() -> None:
    leaf = list(range(10))
    level: list[object] = leaf
    for _ in range(6):  # 10**6 leaves, but only a few hundred distinct objects (what YAML aliases build)
        level = [level] * 10
    got = value_problem(level)
    assert got is not None and got[0] == "too_many_values" and str(MAX_NODES) in got[1]


def test_open_regular_refuses_what_is_not_a_file(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    for path, kind in (("/dev/zero", "character device"), (tmp_path / "fifo", "FIFO"), (tmp_path, "directory")):
        with pytest.raises(InputError, match=kind):
            open_regular(path)
    (tmp_path / "big").write_bytes(b"x" * 11)
    with pytest.raises(InputError, match="more than the limit of 10"):
        open_regular(tmp_path / "big", max_bytes=10)
    with open_regular(tmp_path / "big", max_bytes=11) as f:
        assert f.read() == b"x" * 11


def test_conf_yaml_alias_bomb_is_refused_before_hydra(tmp_path: Path) -> None:
    conf = tmp_path / "conf"
    (conf / "task").mkdir(parents=True)
    bomb = 'a: &a ["x","x","x","x","x","x","x","x","x","x"]\n' + "".join(
        f"{c}: &{c} [{','.join([f'*{p}'] * 10)}]\n" for p, c in zip("abcde", "bcdef", strict=True)
    )
    (conf / "task" / "bomb.yaml").write_text("task: bomb\n" + bomb, encoding="utf-8")
    with pytest.raises(CompileError, match=r"bomb\.yaml: more than"):
        config.check_conf_files(conf)


def test_shipped_conf_files_pass() -> None:
    config.check_conf_files(config.CONF_DIR)
