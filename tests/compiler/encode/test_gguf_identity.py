"""A plan compiled from a GGUF file records the model by content (its sha256 as the tokenizer identity, the
converted tokenizer's and config's hashes), never by path: the real SmolLM2 file at two paths, under two
names, and as ``model.path=DIR model.gguf_file=NAME``, gives one plan hash. Compiling converts only the
tokenizer and config (no weights), once per lmeval cache."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from lmeval.common.gguf import file_sha256, smollm2_gguf
from lmeval.compiler import compile_plan
from lmeval.plans.plan import PlanHeader

SMOL = smollm2_gguf()


@pytest.fixture(scope="module")
def copies(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("gguf-paths")
    (base / "one").mkdir()
    (base / "two").mkdir()
    a, b = base / "one" / SMOL.name, base / "two" / "renamed-copy.gguf"
    shutil.copyfile(SMOL, a)
    shutil.copyfile(SMOL, b)
    return a, b


def _compile(*model: str) -> PlanHeader:
    header, _ = compile_plan(["+task=arith", "run.limit=5", *model])
    return header


def test_same_gguf_at_two_paths_gives_one_plan(copies: tuple[Path, Path]) -> None:
    a, b = copies
    ha = _compile(f"model.path={a}")
    hb = _compile(f"model.path={b}")
    hd = _compile(f"model.path={a.parent}", f"model.gguf_file={a.name}")
    assert ha.plan_hash == hb.plan_hash == hd.plan_hash
    m = ha.model
    assert m.tokenizer == f"gguf-sha256:{file_sha256(SMOL)}"
    assert m.tokenizer_hash and m.config_hash and m.path is None
    assert m.name == "Smollm2-135M-8k-Lc100K-Mix1-Ep2"  # the file's general.name, not its file name
    text = json.dumps(ha.to_dict(), default=str)
    for where in (str(a.parent.parent), a.name, "gguf_file", "renamed-copy"):
        assert where not in text


def test_preset_compiles_the_same_tokens(copies: tuple[Path, Path]) -> None:
    by_path = _compile(f"model.path={copies[0]}")
    preset = _compile("model=smollm2")
    pm, mm = preset.model, by_path.model
    assert (pm.name, pm.tokenizer, pm.tokenizer_hash, pm.config_hash) == (
        "smollm2",
        mm.tokenizer,
        mm.tokenizer_hash,
        mm.config_hash,
    )
    assert "package" not in preset.config["model"]


def test_converted_tokenizer_is_smollm2s(copies: tuple[Path, Path]) -> None:
    from lmeval.common.gguf import convert_gguf

    d = convert_gguf(SMOL, weights=False)  # the folder compiling made (or the full one, if converted already)
    cfg = json.loads((d / "config.json").read_text())
    assert (cfg["architectures"], cfg["num_hidden_layers"], cfg["hidden_size"], cfg["vocab_size"]) == (
        ["LlamaForCausalLM"],
        30,
        576,
        49152,
    )
    assert "quantization_config" not in cfg
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(d / "tokenizer.json"))
    assert tok.encode("The capital of France is").ids == [504, 3575, 282, 4649, 314]  # no BOS added
    assert tok.token_to_id("<|im_start|>") == 1 and tok.token_to_id("<|im_end|>") == 2


def test_hub_repo_with_gguf_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``model.path=org/name model.gguf_file=NAME`` through the Hugging Face cache (offline): the Hub id and
    commit are recorded, the tokens are the local file's."""
    sha = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hub" / "models--someone--smol-gguf"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(sha)
    (repo / "snapshots" / sha).mkdir(parents=True)
    (repo / "snapshots" / sha / SMOL.name).symlink_to(SMOL)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    hub = _compile("model.path=someone/smol-gguf", f"model.gguf_file={SMOL.name}")
    local = _compile(f"model.path={SMOL}")
    assert (hub.model.path, hub.model.revision) == ("someone/smol-gguf", sha)
    assert (hub.model.tokenizer, hub.model.tokenizer_hash) == (local.model.tokenizer, local.model.tokenizer_hash)
