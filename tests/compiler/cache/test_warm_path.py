"""What makes a warm compile fast (issue #30) keeps its bytes: the plan-hash memo (compiler/cache/store.py), the
memo of Hydra's composition (compiler/cache/compose.py) and the tokenizer's word-level fast path
(compiler/encode/tokenizer.py) give what the slow paths give, and a bad memo is ignored."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lmeval.compiler.cache import compose as composecache
from lmeval.compiler.config import CONF_DIR, compose
from lmeval.compiler.parallel import BuildSettings
from lmeval.compiler.pipeline import compile_located

REPO = Path(__file__).resolve().parents[3]


def test_plan_hash_memo_gives_the_same_plan_and_a_bad_memo_is_ignored(tmp_path: Path, data: Path) -> None:
    cache = tmp_path / "cache"
    on = BuildSettings(cache=True, workers=2, cache_dir=cache)
    ov = ["+task=[arc_easy,boolq]", "run.num_fewshot=2", f"run.data_dir={data}", "run.limit=8", "model=tiny"]
    want = compile_located(ov, BuildSettings(cache=False, workers=1)).write(str(tmp_path / "want.msgpack"))
    compile_located(ov, on)  # fills the cache, then the memo (the next compile's tasks all come from entries)
    compile_located(ov, on)
    (memo,) = cache.glob("*/*.lph")
    warm = compile_located(ov, on)
    assert warm.cache.hits == 2
    assert all("data" not in vars(p.encoded) for p in warm.parts)  # nothing decompressed, nothing hashed again
    assert warm.write(str(tmp_path / "warm.msgpack")).read_bytes() == want.read_bytes()
    good = memo.read_text()
    value, check = good.split()
    wrong = ("0" if value[0] != "0" else "1") + value[1:]
    for bad in (f"{wrong} {check}\n", "", good[:40], f"{value}\n"):
        memo.write_text(bad)
        c = compile_located(ov, on)
        assert c.write(str(tmp_path / "again.msgpack")).read_bytes() == want.read_bytes(), bad
    assert memo.read_text() == good  # computed again and remembered
    # the records read back from lazily decompressed entries are the plan's
    assert [r.to_dict() for r in warm.records] == [r.to_dict() for r in compile_located(ov, on).records]


def test_composition_memo_equals_hydra(tmp_path: Path, data: Path) -> None:
    memo = tmp_path / "memo"
    sets = [
        ["+task=mmlu", "run.num_fewshot=5", f"run.data_dir={data}", "model=tiny", "run.out=/x/plan.msgpack"],
        ["+task=[arc_easy,boolq]", "run.limit=3", "run.seed=7", f"run.data_dir={tmp_path}/d"],
        ["+task=gsm8k", "run.apply_chat_template=true", "run.gen_kwargs={temperature:0.5}", "model=tiny"],
        ["+task=arith", "task.arith.num_fewshot=2", "run.out=rel.msgpack"],
    ]
    for ov in sets:
        plain = compose(ov)
        assert compose(ov, memo) == plain  # made
        assert compose(ov, memo) == plain  # read
        other = [o.replace("/x/", "/y/z/").replace(f"{tmp_path}/d", "/elsewhere/d") for o in ov]
        assert compose(other, memo) == compose(other)  # the same memo, other locations
    assert len(list(memo.glob("*/*.lcc"))) == len(sets)
    assert composecache.compose_key(["run.system_instruction=${oc.env:HOME}"], CONF_DIR) is None
    assert composecache.compose_key(["hydra.searchpath=[file:///elsewhere]"], CONF_DIR) is None
    for p in memo.glob("*/*.lcc"):
        p.write_bytes(p.read_bytes()[:-1] + b"\x00")
    for ov in sets:
        assert compose(ov, memo) == compose(ov)  # a damaged memo: composed again


def test_composition_memo_sees_the_config_files(tmp_path: Path) -> None:
    conf = tmp_path / "conf"
    shutil.copytree(CONF_DIR, conf)
    ov = ["+task=arc_easy", "run.out=<slot>"]
    key = composecache.compose_key(ov, conf)
    assert key is not None and key == composecache.compose_key(ov, conf)
    run = conf / "run" / "default.yaml"
    run.write_text(run.read_text().replace("seed: 1234", "seed: 1235"))
    assert composecache.compose_key(ov, conf) != key
    assert composecache.compose_key([*ov, "run.limit=2"], conf) != composecache.compose_key(ov, conf)
    (conf / "model" / "extra.yaml").write_text("name: x\n")
    assert composecache.compose_key(ov, conf) not in (key, None)


def test_a_warm_compile_imports_no_hydra(tmp_path: Path, data: Path) -> None:
    code = (
        "import sys; from lmeval.compiler.config import compose; "
        f"compose(['+task=boolq', 'run.data_dir={data}'], __import__('pathlib').Path(sys.argv[1])); "
        "print('hydra' in sys.modules, 'omegaconf' in sys.modules)"
    )

    def run() -> str:
        p = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, cwd=REPO)
        assert p.returncode == 0, p.stderr
        return p.stdout.strip()

    assert run() == "True True"
    assert run() == "False False"


def test_word_level_fast_path_equals_plain_encoding() -> None:
    """The fast path (texts cut into pieces at newlines, pieces into words at spaces, each distinct word encoded
    once) against the tokenizer's own encoding of the whole text, on texts made of the characters where the
    GPT-2 pre-tokenizer's rules differ (contractions, digits, punctuation, Unicode spaces and letters)."""
    from lmeval.common.tinymodel import ensure_tiny_model
    from lmeval.compiler.encode.tokenizer import ModelTokenizer, _pieces, _words
    from lmeval.plans.plan import encode_pairs

    tok = ModelTokenizer(ensure_tiny_model(), None, "tiny")
    assert tok.fast
    rnd = random.Random(30)
    alphabet = [" ", " ", "  ", "\n", "\n\n", "\t", "\u00a0", "\u3000", "\u2028", "\r", "'s", "'ll", "'", "a", "b",
                "Word", "x1", "12", "3.5", ".", ",", "?!", "-", "é", "日本", "\u0301", "\x1c", "\u0085"]  # fmt: skip
    texts = ["".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 30))) for _ in range(6000)]
    texts += ["The answer is (B).\nQuestion: what's 2 + 2?\nA. 4\nB. 5\nAnswer:", "  lead", "trail  ", ""]
    for t in texts:
        cuts = [i for i in range(1, len(t)) if t[i] == " " and not t[i - 1].isspace()]
        assert _words(t) == [t[a:b] for a, b in zip([0, *cuts], [*cuts, len(t)], strict=True)], repr(t)
        assert _words(t) == _pieces(t, " "), repr(t)
    for flag in (True, False):
        plain = [e.ids for e in tok.backend.encode_batch(texts, add_special_tokens=flag)]
        tok._checked = 10**9  # no self-check: compare every text here
        assert tok._encode_fast(texts, flag) == plain
    pairs = [(t, c) for t, c in zip(texts[::2], texts[1::2], strict=False) if c.strip()]
    assert tok.encode_pairs(pairs) == encode_pairs(pairs, tok.rule, tok._batch)  # the joint-encoding split


@pytest.mark.parametrize(
    "added",
    [
        {"content": "New York", "lstrip": False, "rstrip": False, "single_word": False},
        {"content": "<mask>", "lstrip": False, "rstrip": True, "single_word": False},
        {"content": "<mask>", "lstrip": True, "rstrip": False, "single_word": False},
        {"content": "<w>", "lstrip": False, "rstrip": False, "single_word": True},
    ],
)
def test_fast_path_is_off_for_added_tokens_a_cut_could_change(tmp_path: Path, added: dict[str, Any]) -> None:
    """An added token is matched before pre-tokenizing: one with a space inside ("New York" in "in New York" is one
    token, but "New" | " York" are two words), or one that takes its neighbours' whitespace (rstrip: "<mask> b"
    is "<mask>" + "b", the word " b" alone is "Ġb"), turns the word-level fast path off, and the ids stay the
    tokenizer's own."""
    from lmeval.common.tinymodel import ensure_tiny_model
    from lmeval.compiler.encode.tokenizer import ModelTokenizer

    src = ensure_tiny_model()
    model = tmp_path / "model"
    shutil.copytree(src, model)
    spec = json.loads((model / "tokenizer.json").read_text())
    new_id = max(t["id"] for t in spec["added_tokens"]) + 1
    new_id = max(new_id, len(spec["model"]["vocab"]))
    spec["added_tokens"].append({"id": new_id, "normalized": False, "special": False, **added})
    (model / "tokenizer.json").write_text(json.dumps(spec))
    tok = ModelTokenizer(model, None, "tiny-added")
    assert not tok.fast
    text = f"in {added['content']} b and {added['content']}"
    assert tok.encode_many([text]) == [tok.backend.encode(text, add_special_tokens=tok.default_special).ids]
    plain = ModelTokenizer(src, None, "tiny")
    assert plain.fast  # the same tokenizer without the added token keeps it


def test_shared_starts_give_each_texts_own_pieces() -> None:
    """``_shared_pieces`` (texts in a row compared, not cut again) and ``_join_shared`` give what cutting and
    joining every text alone gives, whatever the texts share."""
    from lmeval.compiler.encode.tokenizer import _join_shared, _pieces, _shared_pieces

    rnd = random.Random(7)
    blocks = ["Q: a\n", "b\n\n", "\n", " c \n", "d", "\nA:", "x\ny", "  \n", "e\t\n", ""]
    heads = ["".join(rnd.choice(blocks) for _ in range(rnd.randint(0, 6))) for _ in range(8)]
    texts = [rnd.choice(heads) + "".join(rnd.choice(blocks) for _ in range(rnd.randint(0, 4))) for _ in range(3000)]
    plan = _shared_pieces(texts)
    prev: list[str] = []
    for t, (j, rest) in zip(texts, plan, strict=True):
        prev = prev[:j] + rest
        assert prev == _pieces(t), repr(t)
    cache = {p: [ord(c) for c in p] for _, rest in plan for p in rest}
    got = _join_shared(plan, cache, [1], [2, 3])
    assert got == [[1, *(ord(c) for c in t), 2, 3] for t in texts]
