"""The one file hasher (common.file_sha256) that model files and result parts share."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from lmeval.common import file_sha256
from lmeval.plans.errors import PlanError
from lmeval.plans.results import part_sha256
from tests.support import data_dir


def test_a_path_and_an_open_file_hash_to_the_bytes_digest() -> None:
    path = data_dir() / "arc_easy" / "test.jsonl"
    want = hashlib.sha256(path.read_bytes()).hexdigest()
    assert file_sha256(path) == want and file_sha256(str(path)) == want
    with open(path, "rb") as f:
        assert file_sha256(f) == want
    assert part_sha256(path) == want  # a result part's checked hash is the same digest


def test_a_part_that_is_not_a_regular_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(PlanError):
        part_sha256(tmp_path)
