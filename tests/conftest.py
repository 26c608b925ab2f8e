"""Suite-wide settings: the tests never touch the network (CI has none), so Hugging Face libraries are told
so up front instead of retrying the Hub. Compiles build every task in-process and skip the build cache (no
entries written to the user's cache, no forked workers under pytest's capture), unless a test asks for them
(tests/compiler/cache/test_build_cache.py)."""

import os
import tempfile
from collections.abc import Iterator

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("LMEVAL_BUILD_CACHE", "0")
os.environ.setdefault("LMEVAL_VERIFIED_PLANS", "0")  # every read fully checked (tests/plans/test_verified.py: on)
os.environ.setdefault("LMEVAL_COMPILE_JOBS", "1")
# the result store of session-scoped fixtures (each module and each test gets its own below): never the user's
os.environ["LMEVAL_STORE_DIR"] = tempfile.mkdtemp(prefix="lmeval-test-store-")


@pytest.fixture(scope="module", autouse=True)
def _module_result_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The result store of a module's fixtures (module-scoped autouse fixtures come before the others of their
    scope): no answer one module's fixtures stored serves another's."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LMEVAL_STORE_DIR", str(tmp_path_factory.mktemp("module-store", numbered=True)))
        yield


@pytest.fixture(autouse=True)
def _own_result_store(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test executes with a result store of its own (``$LMEVAL_STORE_DIR``; executor/ANSWERSTORE.md): never
    the user's, and no answer stored by one test serves another (tests that count engine calls stay true)."""
    monkeypatch.setenv("LMEVAL_STORE_DIR", str(tmp_path_factory.mktemp("store", numbered=True)))
