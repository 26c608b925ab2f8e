"""Hub ids resolved offline through a Hugging Face cache the test lays out (``common.modelref``), and the
model's content identity (tokenizer and config hashes) every stage records or checks."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from lmeval.common.modelref import ModelRefError, config_hash, model_name, parse_hub_id, resolve_model, tokenizer_hash
from tests.othermodel import HUB_ID, build_other_model, lay_out_hub_cache


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, Path]:
    base = tmp_path_factory.mktemp("hub")
    model = build_other_model(base / "qwenlet")
    sha = lay_out_hub_cache(model, base / "hf")
    return base / "hf", sha, model


@pytest.fixture
def offline(hub: tuple[Path, str, Path], monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str, Path]:
    monkeypatch.setenv("HF_HOME", str(hub[0]))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return hub


def test_hub_id_resolves_to_the_cached_snapshot_and_its_commit(offline: tuple[Path, str, Path]) -> None:
    hf, sha, model = offline
    for path, rev in ((HUB_ID, None), (f"{HUB_ID}@main", None), (f"{HUB_ID}@{sha}", None), (HUB_ID, sha)):
        ref = resolve_model(path, rev)
        assert ref.hub_id == HUB_ID and ref.revision == sha
        assert ref.dir == hf / "hub" / "models--lmeval-test--qwenlet-2k" / "snapshots" / sha
        assert (ref.dir / "tokenizer.json").read_bytes() == (model / "tokenizer.json").read_bytes()
        assert ref.tokenizer_identity == f"{HUB_ID}@{sha}"  # no machine path
        assert ref.config_hash() == resolve_model(str(model)).config_hash()


def test_missing_hub_model_or_revision_offline_is_one_line(offline: tuple[Path, str, Path]) -> None:
    for path in ("lmeval-test/absent", f"{HUB_ID}@{'0' * 40}", f"{HUB_ID}@v9"):
        with pytest.raises(ModelRefError) as e:
            resolve_model(path)
        msg = str(e.value)
        assert "\n" not in msg and msg.startswith(f"model.path={path}: ") and "HF_HUB_OFFLINE=1" in msg


def test_conflicting_revisions_are_refused(offline: tuple[Path, str, Path]) -> None:
    with pytest.raises(ModelRefError, match="names revision main but model.revision=v2"):
        resolve_model(f"{HUB_ID}@main", "v2")


def test_local_directories_win_over_hub_ids(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "org" / "name").mkdir(parents=True)
    assert parse_hub_id("org/name") is None  # an existing directory is a directory
    assert parse_hub_id("org/other@v1") == ("org/other", "v1")
    assert parse_hub_id("./org/other") is None and parse_hub_id("/abs/path") is None
    ref = resolve_model("org/name")
    assert ref.hub_id is None and ref.dir == (tmp_path / "org" / "name").resolve() and ref.tokenizer_identity == "name"
    with pytest.raises(ModelRefError, match=r"^model.path=/no/such: the model directory does not exist"):
        resolve_model("/no/such")


def test_model_names() -> None:
    assert model_name(None, None) == "tiny"
    assert model_name("mine", "/x/y") == "mine"
    assert model_name(None, "/models/Llama-3-8B/") == "Llama-3-8B"
    assert model_name(None, "meta-llama/Llama-3.1-8B@main") == "Llama-3.1-8B"


def test_revision_names_cannot_walk_out_of_the_cache(offline: tuple[Path, str, Path]) -> None:
    for path in (f"{HUB_ID}@../../etc", f"{HUB_ID}@refs/../../x"):
        with pytest.raises(ModelRefError, match="not a revision name"):
            resolve_model(path)


def test_compile_needs_only_the_tokenizer_and_configs(offline: tuple[Path, str, Path]) -> None:
    hf, sha, _ = offline
    ref = resolve_model(HUB_ID, need="tokenizer")
    assert ref.revision == sha and (ref.dir / "tokenizer.json").is_file() and (ref.dir / "config.json").is_file()


def test_tokenizer_and_config_hashes_are_sha256_of_their_files(hub: tuple[Path, str, Path], tmp_path: Path) -> None:
    model = hub[2]
    for name, fn in (("tokenizer.json", tokenizer_hash), ("config.json", config_hash)):
        assert fn(model) == hashlib.sha256((model / name).read_bytes()).hexdigest()
        assert fn(str(model)) == fn(model)
        assert fn(tmp_path) is None and fn(None) is None  # no such file: nothing to compare
    ref = resolve_model(str(model))
    assert (ref.tokenizer_hash(), ref.config_hash()) == (tokenizer_hash(model), config_hash(model))
