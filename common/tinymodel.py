"""The tiny reference model: a 2-layer Llama with a byte-level BPE tokenizer, built from nothing but code.

``ensure_tiny_model()`` returns a Hugging Face-format model directory (config.json, model.safetensors,
tokenizer.json, tokenizer_config.json with a ChatML chat template, special_tokens_map.json,
generation_config.json) that transformers and vLLM load offline. Everything is derived deterministically:

- the tokenizer is trained with ``tokenizers`` on text generated here from a fixed seed (English sentences,
  numbers, punctuation, Python-like code, "Question:/Answer:" and multiple-choice layouts), vocab 4096;
- the weights come from ``numpy.random.default_rng(0)`` and are written with ``safetensors.numpy``; the output
  layer is scaled up (``LM_HEAD_SCALE``) so next-token distributions are peaked and argmax/greedy checks mean
  something.

Building takes about a second and gives byte-identical files every time. The directory is cached under
``$LMEVAL_CACHE/models/tiny-v1`` (default ``~/.cache/lmeval/models/tiny-v1``); it is built in a temporary
sibling directory and renamed into place, so concurrent callers never see a partial model.

The tokenizer adds no special tokens when encoding (``add_bos_token: false`` in ``conf/model/tiny.yaml``);
the chat template does not add BOS either. This module never imports torch.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import tempfile
from pathlib import Path
from typing import Any

TINY_NAME = "tiny"
RECIPE = "tiny-v1"  # bump (and the cache directory name) on any change to what gets built

BOS = "<|begin_of_text|>"
EOS = "<|end_of_text|>"
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
PAD = "<|pad|>"
SPECIAL_TOKENS = (BOS, EOS, IM_START, IM_END, PAD)  # ids 0..4, in this order

VOCAB_SIZE = 4096
HIDDEN = 128
LAYERS = 2
HEADS = 4
HEAD_DIM = HIDDEN // HEADS  # 32: vLLM's CPU attention rejects head_dim < 32
INTERMEDIATE = 256
MAX_POSITIONS = 16384
LM_HEAD_SCALE = 20.0
INIT_STD = 0.02
CORPUS_SEED = 1234

CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{%- if message['role'] not in ['system', 'user', 'assistant'] %}"
    "{{ raise_exception('Only system, user and assistant roles are supported.') }}"
    "{%- endif %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{%- endif %}"
)

MODEL_FILES = (
    "config.json",
    "generation_config.json",
    "model.safetensors",
    "special_tokens_map.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "lmeval_tiny.json",
)


# --------------------------------------------------------------------------------------------- corpus

_WORDS = """
the of and to a in is it you that he was for on are with as I his they be at one have this from or had by
not word but what some we can out other were all there when up use your how said an each she which do their
time if will way about many then them write would like so these her long make thing see him two has look
more day could go come did number sound no most people my over know water than call first who may down side
been now find any new work part take get place made live where after back little only round man year came
show every good me give our under name very through just form sentence great think say help low line differ
turn cause much mean before move right boy old too same tell does set three want air well also play small end
put home read hand port large spell add even land here must big high such follow act why ask men change went
light kind off need house picture try us again animal point mother world near build self earth father head
stand own page should country found answer school grow study still learn plant cover food sun four between
state keep eye never last let thought city tree cross farm hard start might story saw far sea draw left late
run don't while press close night real life few north open seem together next white children begin got walk
example ease paper group always music those both mark often letter until mile river car feet care second book
carry took science eat room friend began idea fish mountain stop once base hear horse cut sure watch color
face wood main enough plain girl usual young ready above ever red list though feel talk bird soon body dog
family direct pose leave song measure door product black short numeral class wind question happen complete
ship area half rock order fire south problem piece told knew pass since top whole king space heard best hour
better true during hundred five remember step early hold west ground interest reach fast verb sing listen six
table travel less morning ten simple several vowel toward war lay against pattern slow center love person
money serve appear road map rain rule govern pull cold notice voice unit power town fine certain fly fall lead
cry dark machine note wait plan figure star box noun field rest correct able pound done beauty drive stood
contain front teach week final gave green oh quick develop ocean warm free minute strong special mind behind
clear tail produce fact street inch multiply nothing course stay wheel full force blue object decide surface
deep moon island foot system busy test record boat common gold possible plane stead dry wonder laugh thousand
ago ran check game shape equate hot miss brought heat snow tire bring yes distant fill east paint language
among energy temperature cell energy energy molecule atom gravity force mass speed acceleration reaction
chemical experiment hypothesis evidence theory organism species evolution climate weather rock mineral
volcano earthquake planet orbit solar lunar electric current magnet circuit battery light wave sound
president government law court history war century nation economy market price tax bank trade company
patient disease treatment doctor blood heart brain protein gene cause effect increase decrease
population function value equation variable solution probability statistic sample data analysis
social political cultural religious economic physical mental natural national international
because however therefore although whether which whose whom where while within without between
information development environment management relationship community organization university
following following statement statements describe describes explain explains best most least likely
student teacher children parent woman women man men child friend person people group member
company business customer product service price cost profit loss income interest rate account
water energy food plant animal cell body system structure process result change level rate
""".split()

_SUFFIXES = ["s", "s", "ed", "ing", "er", "ly", "tion", "ment", "ness", "al", "ity", "ive", "ous", "able"]
_PREFIXES = ["un", "re", "in", "dis", "pre", "non", "over", "inter", "sub"]

_NAMES = "John Mary Alice Bob James Sarah Tom Emma Liam Olivia Noah Ava Ethan Mia Lucas Zoe".split()
_PLACES = "Paris London Tokyo Berlin Madrid Rome Cairo Lima Oslo Delhi Texas Ohio Canada France Japan".split()
_SUBJECTS = (
    "abstract algebra,anatomy,astronomy,college biology,college chemistry,computer security,econometrics,"
    "high school physics,world history,moral scenarios,philosophy,virology"
).split(",")
_PUNCT = [".", ",", "!", "?", ";", ":", "...", " -", " (", ")", '"', "'", "—", "–", "’", "“", "”"]
_ACCENTED = ["café", "naïve", "résumé", "über", "São Paulo", "Zürich", "jalapeño", "façade", "€5", "°C", "×"]
_IDENTS = """x y n i j k s lst arr nums result count total value items text word key data self left right mid
ans res node""".split()
_FUNCS = """sum len max min sorted range print str int list dict set abs enumerate zip map filter isinstance
append split join strip""".split()


def _word(rng: random.Random) -> str:
    w = rng.choice(_WORDS)
    r = rng.random()
    if r < 0.25:
        w = w.rstrip("e") + rng.choice(_SUFFIXES) if len(w) > 3 else w + "s"
    elif r < 0.30:
        w = rng.choice(_PREFIXES) + w
    elif r < 0.36:
        w = w.capitalize()
    return w


def _sentence(rng: random.Random) -> str:
    n = rng.randint(4, 18)
    words = [_word(rng) for _ in range(n)]
    r = rng.random()
    if r < 0.15:
        words.insert(rng.randrange(len(words)), rng.choice(_NAMES))
    elif r < 0.25:
        words.insert(rng.randrange(len(words)), rng.choice(_PLACES))
    elif r < 0.32:
        words.insert(rng.randrange(len(words)), rng.choice(_ACCENTED))
    if rng.random() < 0.3:
        words.insert(rng.randrange(len(words)), _number(rng))
    if rng.random() < 0.25:
        k = rng.randrange(1, len(words))
        words[k - 1] = words[k - 1] + rng.choice(_PUNCT[1:])
    words[0] = words[0][:1].upper() + words[0][1:]
    return " ".join(words) + rng.choice([".", ".", ".", "!", "?"])


def _number(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.4:
        return str(rng.randint(0, 100))
    if r < 0.6:
        return str(rng.randint(100, 100000))
    if r < 0.7:
        return f"{rng.randint(0, 999)}.{rng.randint(0, 99):02d}"
    if r < 0.8:
        return f"${rng.randint(1, 9999):,}"
    if r < 0.9:
        return f"{rng.randint(1, 99)}%"
    return f"{rng.randint(1900, 2030)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


def _arithmetic(rng: random.Random) -> str:
    a, b = rng.randint(0, 500), rng.randint(1, 500)
    op = rng.choice(["+", "-", "*", "/"])
    value = {"+": a + b, "-": a - b, "*": a * b, "/": a // b}[op]
    name = rng.choice(_NAMES)
    return (
        f"Question: {name} has {a} apples and {rng.choice(['buys', 'sells', 'gives away'])} {b} more. "
        f"How many apples does {name} have?\nAnswer: {a} {op} {b} = <<{a}{op}{b}={value}>>{value}. "
        f"The answer is {value}.\n#### {value}"
    )


def _mcq(rng: random.Random) -> str:
    subject = rng.choice(_SUBJECTS)
    lines = [f"The following are multiple choice questions (with answers) about {subject}.", ""]
    for _ in range(rng.randint(1, 3)):
        lines.append(_sentence(rng)[:-1] + "?")
        for letter in "ABCD":
            lines.append(f"{letter}. {' '.join(rng.choice(_WORDS) for _ in range(rng.randint(1, 5)))}")
        lines.append(f"Answer: {rng.choice('ABCD')}")
        lines.append("")
    return "\n".join(lines)


def _qa(rng: random.Random) -> str:
    q = _sentence(rng)[:-1] + "?"
    a = rng.choice(
        [rng.choice(_WORDS), rng.choice(_NAMES), rng.choice(_PLACES), _number(rng)] + ["yes", "no", "true", "false"]
    )
    style = rng.random()
    if style < 0.5:
        return f"Question: {q}\nAnswer: {a}"
    if style < 0.7:
        return f"Q: {q}\nA: {a}"
    if style < 0.85:
        return f"{_sentence(rng)}\nQuestion: {q}\nAnswer:"
    return f"Goal: {q}\nSolution: {_sentence(rng)}"


def _code(rng: random.Random) -> str:
    f = rng.choice(["solve", "compute", "find_max", "is_prime", "count_words", "merge", "reverse", "fib"])
    a, b = rng.sample(_IDENTS, 2)
    g = rng.choice(_FUNCS)
    n = rng.randint(0, 20)
    body = rng.choice(
        [
            f"    {b} = 0\n    for {a} in range({n}):\n        {b} += {a}\n    return {b}\n",
            f"    if {a} == {n}:\n        return True\n    return {g}({a}) > {n}\n",
            f"    {b} = [{a} * {n} for {a} in {a}s if {a} % 2 == 0]\n    return {b}\n",
            f"    while {a} < {n}:\n        {a} = {a} + 1\n    return {{'{a}': {a}, \"{b}\": None}}\n",
            f"    try:\n        return {g}({a}, {b})\n    except (ValueError, KeyError) as e:\n        raise e\n",
        ]
    )
    doc = f'    """Return the {rng.choice(_WORDS)} of {a}.\n    >>> {f}({n})\n    {n * 2}\n    """\n'
    test = f"assert {f}({n}) == {n * 2}\nassert {f}([{n}, {n + 1}]) != []\n"
    head = rng.choice(["", "import math\n", "from typing import List\n\n", "import re\nimport sys\n\n"])
    return f"{head}def {f}({a}: int, {b}=None) -> int:\n{doc}{body}\n\n{test}"


def corpus_texts(n_docs: int = 12000, seed: int = CORPUS_SEED) -> list[str]:
    """The deterministic training text for the tokenizer, one string per pseudo-document."""
    rng = random.Random(seed)
    makers = [
        (0.40, lambda: " ".join(_sentence(rng) for _ in range(rng.randint(1, 6)))),
        (0.15, lambda: _qa(rng)),
        (0.10, lambda: _mcq(rng)),
        (0.10, lambda: _arithmetic(rng)),
        (0.20, lambda: _code(rng)),
        (0.05, lambda: " ".join(_number(rng) for _ in range(rng.randint(3, 12)))),
    ]
    texts: list[str] = []
    for _ in range(n_docs):
        r = rng.random()
        acc = 0.0
        for weight, make in makers:
            acc += weight
            if r < acc:
                texts.append(make())
                break
        else:
            texts.append(makers[-1][1]())
    return texts


# ------------------------------------------------------------------------------------------ tokenizer


def build_tokenizer_json() -> str:
    """Train the byte-level BPE tokenizer; returns tokenizer.json's text."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        min_frequency=2,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus_texts(), trainer=trainer)
    if tok.get_vocab_size() > VOCAB_SIZE:
        raise AssertionError(f"tokenizer has {tok.get_vocab_size()} tokens, more than {VOCAB_SIZE}")
    for i, t in enumerate(SPECIAL_TOKENS):
        if tok.token_to_id(t) != i:
            raise AssertionError(f"special token {t} is not id {i}")
    return tok.to_str(pretty=True)


def _tokenizer_config() -> dict[str, Any]:
    return {
        "added_tokens_decoder": {
            str(i): {
                "content": t,
                "lstrip": False,
                "normalized": False,
                "rstrip": False,
                "single_word": False,
                "special": True,
            }
            for i, t in enumerate(SPECIAL_TOKENS)
        },
        "add_bos_token": False,
        "add_eos_token": False,
        "bos_token": BOS,
        "chat_template": CHAT_TEMPLATE,
        "clean_up_tokenization_spaces": False,
        "eos_token": EOS,
        "model_input_names": ["input_ids", "attention_mask"],
        "model_max_length": MAX_POSITIONS,
        "pad_token": PAD,
        "tokenizer_class": "PreTrainedTokenizerFast",
    }


def _special_tokens_map() -> dict[str, Any]:
    return {
        "additional_special_tokens": [IM_START, IM_END],
        "bos_token": BOS,
        "eos_token": EOS,
        "pad_token": PAD,
    }


# ---------------------------------------------------------------------------------------------- model


def _model_config() -> dict[str, Any]:
    return {
        "architectures": ["LlamaForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": SPECIAL_TOKENS.index(BOS),
        "eos_token_id": SPECIAL_TOKENS.index(EOS),
        "head_dim": HEAD_DIM,
        "hidden_act": "silu",
        "hidden_size": HIDDEN,
        "initializer_range": INIT_STD,
        "intermediate_size": INTERMEDIATE,
        "max_position_embeddings": MAX_POSITIONS,
        "mlp_bias": False,
        "model_type": "llama",
        "num_attention_heads": HEADS,
        "num_hidden_layers": LAYERS,
        "num_key_value_heads": HEADS,
        "pad_token_id": SPECIAL_TOKENS.index(PAD),
        "pretraining_tp": 1,
        "rms_norm_eps": 1e-05,
        "rope_scaling": None,
        "rope_theta": 10000.0,
        "tie_word_embeddings": False,
        "torch_dtype": "float32",
        "use_cache": True,
        "vocab_size": VOCAB_SIZE,
    }


def _generation_config() -> dict[str, Any]:
    return {
        "bos_token_id": SPECIAL_TOKENS.index(BOS),
        "do_sample": False,
        "eos_token_id": SPECIAL_TOKENS.index(EOS),
        "pad_token_id": SPECIAL_TOKENS.index(PAD),
    }


def build_weights() -> dict[str, Any]:
    """All tensors of the model as float32 numpy arrays, keyed by their Hugging Face Llama names."""
    import numpy as np

    rng = np.random.default_rng(0)

    def normal(*shape: int, scale: float = 1.0) -> Any:
        return (rng.standard_normal(shape) * (INIT_STD * scale)).astype(np.float32)

    w: dict[str, Any] = {"model.embed_tokens.weight": normal(VOCAB_SIZE, HIDDEN)}
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
            w[p + f"self_attn.{name}.weight"] = normal(HIDDEN, HIDDEN)
        w[p + "mlp.gate_proj.weight"] = normal(INTERMEDIATE, HIDDEN)
        w[p + "mlp.up_proj.weight"] = normal(INTERMEDIATE, HIDDEN)
        w[p + "mlp.down_proj.weight"] = normal(HIDDEN, INTERMEDIATE)
        w[p + "input_layernorm.weight"] = np.ones(HIDDEN, dtype=np.float32)
        w[p + "post_attention_layernorm.weight"] = np.ones(HIDDEN, dtype=np.float32)
    w["model.norm.weight"] = np.ones(HIDDEN, dtype=np.float32)
    w["lm_head.weight"] = normal(VOCAB_SIZE, HIDDEN, scale=LM_HEAD_SCALE)
    return w


# ---------------------------------------------------------------------------------------------- build


def _dump_json(path: Path, obj: dict[str, Any]) -> None:
    path.write_text(json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")


def build_tiny_model(out_dir: str | os.PathLike[str]) -> Path:
    """Write every file of the tiny model into ``out_dir`` (created if needed); no caching, no renaming."""
    from safetensors.numpy import save_file

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "tokenizer.json").write_text(build_tokenizer_json(), encoding="utf-8")
    _dump_json(out / "tokenizer_config.json", _tokenizer_config())
    _dump_json(out / "special_tokens_map.json", _special_tokens_map())
    _dump_json(out / "config.json", _model_config())
    _dump_json(out / "generation_config.json", _generation_config())
    save_file(build_weights(), str(out / "model.safetensors"), metadata={"format": "pt"})
    # written last: its presence marks a complete build
    stamp = {"name": TINY_NAME, "recipe": RECIPE, "source_sha256": _source_hash()}
    _dump_json(out / "lmeval_tiny.json", stamp)
    return out


def _source_hash() -> str:
    # any edit to this recipe invalidates cached builds made from an older version of it
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()


def default_cache_dir() -> Path:
    root = os.environ.get("LMEVAL_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "lmeval")
    return Path(root) / "models" / RECIPE


def _is_complete(d: Path) -> bool:
    stamp = d / "lmeval_tiny.json"
    if not all((d / f).is_file() for f in MODEL_FILES):
        return False
    try:
        info = json.loads(stamp.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(info, dict):
        return False
    return info.get("recipe") == RECIPE and info.get("source_sha256") == _source_hash()


def _make_readable(d: Path) -> None:
    # mkdtemp and safetensors create owner-only files; a shared cache should be readable like any download
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(d, 0o755 & ~umask)
    for f in d.iterdir():
        os.chmod(f, 0o644 & ~umask)


def ensure_tiny_model(cache_dir: str | None = None) -> Path:
    """Return the tiny model's directory, building it (about a second) if it is not cached yet.

    ``cache_dir`` is the model directory itself; by default ``$LMEVAL_CACHE/models/tiny-v1`` or
    ``~/.cache/lmeval/models/tiny-v1``. Safe against concurrent callers: the build goes to a temporary
    sibling that is renamed into place; the loser of a race discards its copy.
    """
    target = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    if _is_complete(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.build-", dir=target.parent))
    try:
        build_tiny_model(tmp)
        _make_readable(tmp)
        if target.exists() and not _is_complete(target):
            # a leftover that is not ours (or an old recipe): move it aside rather than delete blindly
            stale = Path(tempfile.mkdtemp(prefix=f".{target.name}.stale-", dir=target.parent))
            try:
                os.rename(target, stale / target.name)
            except FileNotFoundError:
                pass
            shutil.rmtree(stale, ignore_errors=True)
        try:
            os.rename(tmp, target)
        except OSError:
            if not _is_complete(target):  # someone else's rename did not win either
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target
