"""The model's tokenizer at compile time: token ids with lm-eval's rules, and its chat template.

The rules themselves (special tokens per ``add_bos_token``, no second BOS, the prefix token, the context /
continuation split) are the contract's: ``plans/plan/tokenization.py``. This module applies them with the model's
tokenizer loaded as lm-eval 0.4.13 loads it (``add_bos_token`` passed on to transformers when set), encoding
through the fast backend in batches.
"""

from __future__ import annotations

import json
import re
from itertools import chain
from pathlib import Path
from typing import Any

from lmeval.common import tokenizer_hash
from lmeval.compiler.encode.bytelevel import ByteLevelWords
from lmeval.compiler.errors import fail
from lmeval.plans import TokenRule, choose_prefix_token, encode_pairs, encode_texts


def _last_piece(text: str) -> str:
    """``_pieces(text)[-1]``, found from the end."""
    i = text.rfind("\n")
    while i > 0:
        if not text[i - 1].isspace():
            return text[i:]
        i = text.rfind("\n", 0, i)
    return text


def _pieces(text: str, sep: str = "\n") -> list[str]:
    """``text`` cut before every ``sep`` (a newline, or a space: ``_words``) that follows a non-whitespace
    character (a plain loop over the lines is faster here than a regex split or a search from one to the next)."""
    lines = text.split(sep)
    out: list[str] = []
    cur = lines[0]
    for ln in lines[1:]:
        if cur and not cur[-1].isspace():
            out.append(cur)
            cur = sep + ln
        else:
            cur += sep + ln
    out.append(cur)
    return out


# before every space that follows a non-whitespace character (``re``'s \S is ``not str.isspace()``)
_WORD_CUT = re.compile(r"(?<=\S)(?= )")
# where a cut (``_pieces``, ``_words``) can fall inside an added token's text
_CUT_INSIDE = re.compile(r"\S\s")


def _words(line: str) -> list[str]:
    """``line`` cut before every space that follows a non-whitespace character (``_pieces(line, " ")``; a
    regex split is faster on short words): the same boundary as a newline's (see
    ``ModelTokenizer._splittable``), so a line's ids are its words' ids joined."""
    return _WORD_CUT.split(line)


def _shared_pieces(texts: list[str]) -> list[tuple[int, list[str]]]:
    """Each text's pieces (``_pieces``) as (j, rest): the previous text's first j pieces, then ``rest`` (the
    pieces of what follows them). Texts in a row often share a long start (a task's description and few-shot
    examples): it is compared, not cut again (``str.startswith`` at an offset copies nothing)."""
    out: list[tuple[int, list[str]]] = []
    prev: list[str] = []
    run, run_j = "", 0  # the previous text's first run_j pieces, joined
    for t in texts:
        j = pos = 0
        if run_j and t.startswith(run):
            j, pos = run_j, len(run)
        for p in prev[j:]:
            if not t.startswith(p, pos):
                break
            pos += len(p)
            j += 1
        if j and not (pos and t.startswith("\n", pos) and not t[pos - 1].isspace()):
            j -= 1  # not a cut in this text: the previous piece's start is (a newline after a non-space)
            pos -= len(prev[j])
        rest = _pieces(t[pos:]) if j else _pieces(t)
        if j != run_j:
            run, run_j = t[:pos], j
        prev = prev[:j] + rest
        out.append((j, rest))
    return out


def _join_shared(
    plan: list[tuple[int, list[str]]], cache: dict[str, list[int]], pre: list[int], post: list[int]
) -> list[list[int]]:
    """The texts' ids from ``_shared_pieces``: the previous text's ids up to its j-th piece (a slice), then the
    ids of the rest's pieces, with the special tokens ``pre`` and ``post`` around."""
    get = cache.__getitem__
    flat = chain.from_iterable
    out: list[list[int]] = []
    prev: list[int] = []
    starts: list[int] = [0]  # the previous text's token offset (after pre) of each piece, and its end
    n_pre, n_post = len(pre), len(post)
    for j, rest in plan:
        if j:
            ids = prev[: n_pre + starts[j]]
            starts = starts[: j + 1]
        else:
            ids = list(pre)
            starts = [0]
        pos = starts[-1]
        for p in rest:
            pos += len(get(p))
            starts.append(pos)
        ids.extend(flat(map(get, rest)))
        ids += post
        out.append(ids)
        prev = ids
        assert len(ids) == n_pre + pos + n_post
    return out


def _token_text(value: Any) -> str | None:
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) else None


class ModelTokenizer:
    """Loaded through transformers (``add_bos_token`` passed on, as lm-eval does) when a chat template is
    needed or BOS handling changes the tokenizer; else the generic ``PreTrainedTokenizerFast`` case is read
    with ``tokenizers`` alone, set up as transformers would set it up, which saves importing transformers."""

    def __init__(
        self,
        path: Path,
        add_bos_token: bool | None,
        identity: str,
        need_chat: bool = False,
        prefix_token_id: int | None = None,
    ) -> None:
        tok_file = path / "tokenizer.json"
        if not tok_file.is_file():
            raise fail(f"no tokenizer.json in {path} (lmeval needs a fast tokenizer)", field="model.path")
        cfg_file = path / "tokenizer_config.json"
        try:
            tcfg = json.loads(cfg_file.read_text(encoding="utf-8")) if cfg_file.is_file() else {}
        except (OSError, ValueError) as e:
            raise fail(f"cannot read {cfg_file}: {e}", field="model.path") from None
        # transformers (as lm-eval's HF and vLLM models load it, with add_bos_token passed through) replaces the
        # post-processor by a BOS/EOS template when add_bos_token/add_eos_token is set (in the call or in
        # tokenizer_config.json) or tokenizer.json has none; otherwise tokenizer.json is used as is.
        plain = (
            tcfg.get("tokenizer_class") in (None, "PreTrainedTokenizerFast")
            and not need_chat
            and add_bos_token is not True
            and tcfg.get("add_bos_token") is not True
            and tcfg.get("add_eos_token") is not True
        )
        self.tok: Any = None
        try:
            if plain:
                from tokenizers import Tokenizer

                self.backend = Tokenizer.from_file(str(tok_file))
                if add_bos_token is not None or "add_bos_token" in tcfg or "add_eos_token" in tcfg:
                    # both flags off here (on goes through transformers): its template adds nothing
                    from tokenizers import processors

                    self.backend.post_processor = processors.TemplateProcessing(single="$A:0", pair="$A:0 $B:1")
                ids = [
                    self.backend.token_to_id(t) if t else None
                    for t in (_token_text(tcfg.get("bos_token")), _token_text(tcfg.get("eos_token")))
                ]
                bos, eos = ids
            else:
                from transformers import PreTrainedTokenizerFast

                extra: dict[str, Any] = {} if add_bos_token is None else {"add_bos_token": add_bos_token}
                self.tok = PreTrainedTokenizerFast.from_pretrained(str(path), **extra)
                self.backend = self.tok._tokenizer
                bos, eos = self.tok.bos_token_id, self.tok.eos_token_id
        except Exception as e:  # noqa: BLE001
            raise fail(f"cannot load the tokenizer in {path}: {type(e).__name__}: {e}", field="model.path") from None
        self.identity = identity
        self.source_dir = path  # the folder it was loaded from (the build cache keys on its files)
        self.tokenizer_hash = tokenizer_hash(path)
        self.add_bos_token = add_bos_token
        self.prefix_token_id, self._prefix_source = choose_prefix_token(prefix_token_id, bos, eos)
        self.bos_text = (
            self.backend.decode([self.prefix_token_id], skip_special_tokens=False)
            if self.prefix_token_id is not None
            else None
        )
        self.default_special = True if add_bos_token is None else bool(add_bos_token)
        self._seg_cache: dict[str, list[int]] = {}
        self._word_cache: dict[str, list[int]] = {}
        self._checked = 0
        self._added: list[str] = []  # the added tokens' contents (``_splittable`` reads them)
        self.fast = self._splittable()
        self._bytelevel = ByteLevelWords.of(self.backend, self._added) if self.fast else None
        self._affix = {flag: self._specials(flag) for flag in (True, False)}
        pre, post = self._affix[self.default_special] or ([], [])
        # the rule the plan's ids are made with, as recorded in its header
        self.rule = TokenRule(
            add_bos_token=self.add_bos_token,
            prefix_token_id=self.prefix_token_id,
            prefix_token_source=self._prefix_source,
            prefix_text=self.bos_text,
            special_prefix=list(pre),
            special_suffix=list(post),
        )

    # -- fast path: split texts before each newline that follows a non-whitespace character (pieces, ~lines),
    # and each distinct piece before each space that follows one (words); encode each distinct word once,
    # concatenate. Exact for byte-level BPE with GPT-2 regex pre-tokenization (no prefix space, no
    # normalizer): a pre-token holds whitespace only as a whole run of it or as its one leading space, so
    # none spans a whitespace character that follows a non-whitespace one, and none of the regex's
    # lookaheads (``\s+(?!\S)``) reaches back across it: encode(a + b) == encode(a) + encode(b). Encoding
    # distinct words instead of whole texts skips the pre-tokenizer's regex over repeated text, most of the
    # tokenizer's time. Pieces of plain ASCII are not cut into words: they are cut into pre-tokens in Python
    # and only the distinct pre-tokens go to the BPE model (``compiler.encode.bytelevel``), which is faster still.
    # The first encodings of every compile are checked against the plain encoding; any difference turns
    # the fast path off.
    def _splittable(self) -> bool:
        try:
            spec = json.loads(self.backend.to_str())
        except Exception:  # noqa: BLE001
            return False
        if spec.get("normalizer") is not None:
            return False
        pre = spec.get("pre_tokenizer") or {}
        parts = pre.get("pretokenizers", []) if pre.get("type") == "Sequence" else [pre]
        ok = False
        for part in parts:
            kind = part.get("type")
            if kind == "ByteLevel":
                if part.get("add_prefix_space"):
                    return False
                ok = ok or bool(part.get("use_regex", True))
            else:
                return False
        # an added token is matched in the whole text before pre-tokenizing: one that a cut could fall inside
        # (whitespace after a non-whitespace character) or that takes its neighbours' whitespace or word
        # boundaries into account (lstrip, rstrip, single_word) could match differently in a word alone
        for added in spec.get("added_tokens") or []:
            if any(added.get(k) for k in ("lstrip", "rstrip", "single_word")):
                return False
            if _CUT_INSIDE.search(str(added.get("content") or "")):
                return False
            self._added.append(str(added.get("content") or ""))
        return ok and (spec.get("model") or {}).get("type") == "BPE"

    def _batch(self, texts: list[str], special: bool) -> list[list[int]]:
        enc = getattr(self.backend, "encode_batch_fast", None) or self.backend.encode_batch  # no offsets: faster
        return [e.ids for e in enc(texts, add_special_tokens=special)]

    def _specials(self, flag: bool) -> tuple[list[int], list[int]] | None:
        probe = "lmeval probe text"
        plain = self.backend.encode(probe, add_special_tokens=False).ids
        full = self.backend.encode(probe, add_special_tokens=flag).ids
        for i in range(len(full) - len(plain) + 1):
            if full[i : i + len(plain)] == plain:
                return full[:i], full[i + len(plain) :]
        return None

    def _encode_pieces(self, pieces: list[str]) -> None:
        """Every piece's ids into the piece cache: from its pre-tokens where ``compiler.encode.bytelevel`` can cut it
        (plain ASCII), else from its words (``_words``), each distinct one encoded once."""
        if self._bytelevel is not None:
            direct = self._bytelevel.encode(pieces)
            self._seg_cache.update((p, ids) for p, ids in zip(pieces, direct, strict=True) if ids is not None)
            pieces = [p for p, ids in zip(pieces, direct, strict=True) if ids is None]
            if not pieces:
                return
        words = self._word_cache
        split = [_words(p) for p in pieces]
        todo = list(set(chain.from_iterable(split)).difference(words))
        if todo:
            words.update(zip(todo, self._encode_words(todo), strict=True))
        get = words.__getitem__
        flat = chain.from_iterable
        self._seg_cache.update((p, list(flat(map(get, ws)))) for p, ws in zip(pieces, split, strict=True))

    def _encode_words(self, words: list[str]) -> list[list[int]]:
        """The words' ids without special tokens: from the model alone where ``compiler.encode.bytelevel`` can cut
        them (plain ASCII), the rest in one batch."""
        if self._bytelevel is None:
            return self._batch(words, False)
        out = self._bytelevel.encode(words)
        rest = [i for i, ids in enumerate(out) if ids is None]
        if rest:
            for i, ids in zip(rest, self._batch([words[i] for i in rest], False), strict=True):
                out[i] = ids
        return out  # type: ignore[return-value]  # (no None left)

    def _encode_fast(self, texts: list[str], flag: bool) -> list[list[int]] | None:
        affix = self._affix[flag]
        if affix is None:
            return None
        pre, post = affix
        cache = self._seg_cache
        plan = _shared_pieces(texts)
        missing = {p: None for _, ps in plan for p in ps if p not in cache}
        if missing:
            self._encode_pieces(list(missing))
        out = _join_shared(plan, cache, pre, post)
        if self._checked < 64:
            n = min(len(texts), 64 - self._checked)
            slow = self.backend.encode_batch(texts[:n], add_special_tokens=flag)
            self._checked += n
            if any(a.ids != b for a, b in zip(slow, out[:n], strict=True)):
                self.fast = False
                return None
        return out

    @property
    def threaded(self) -> bool:
        """Whether encoding runs mostly in the tokenizers library (which releases the GIL, so a second thread
        overlaps it with other work): not when ``compiler.encode.bytelevel`` cuts plain text in Python."""
        return self._bytelevel is None or not self.fast

    # -- chat template
    @property
    def chat_template(self) -> str | None:
        if self.tok is None:
            return None
        t = getattr(self.tok, "chat_template", None)
        return t if isinstance(t, str) and t else None

    def chat(
        self,
        messages: list[dict[str, str]],
        add_generation_prompt: bool,
        extra: dict[str, Any] | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> str:
        """``extra``: ``run.chat_template_kwargs``, the template's own variables (``enable_thinking``);
        ``tools``: a tool-call task's tools, as transformers' ``apply_chat_template(tools=...)`` takes them."""
        import jinja2

        kwargs = {
            **(extra or {}),
            "tokenize": False,
            "add_generation_prompt": add_generation_prompt,
            "continue_final_message": not add_generation_prompt,
        }
        if tools is not None:
            kwargs["tools"] = tools
        try:
            return self.tok.apply_chat_template(messages, **kwargs)  # type: ignore[no-any-return]
        except jinja2.exceptions.TemplateError:
            # lm-eval retries without the system message
            return self.tok.apply_chat_template([m for m in messages if m["role"] != "system"], **kwargs)  # type: ignore[no-any-return]

    # -- encoding: the contract's rule (plans/plan/tokenization.py) over this tokenizer's batch encoding
    def encode_many(self, texts: list[str], special: bool | None = None) -> list[list[int]]:
        """lm-eval's ``tok_encode`` over many strings (``special`` None: the plan's rule decides per text)."""
        return encode_texts(texts, self.rule, self._encode, special)

    def encode_pairs(self, pairs: list[tuple[str, str]]) -> list[tuple[list[int], list[int]]]:
        """lm-eval's loglikelihood tokenization of (context, continuation) pairs."""
        return encode_pairs(pairs, self.rule, self._encode, self._fast_continuations)

    def _encode(self, texts: list[str], flag: bool) -> list[list[int]]:
        if not texts:
            return []
        ids = self._encode_fast(texts, flag) if self.fast else None
        return ids if ids is not None else self._batch(texts, flag)

    def _fast_continuations(self, ctxs: list[str], conts: list[str]) -> list[list[int]] | None:
        """The continuations' ids from cached pieces: the joint encoding is the context's pieces but the last,
        then the pieces of (last piece + continuation). None where the fast path does not apply."""
        affix = self._affix[self.default_special]
        if not self.fast or affix is None or any(self.bos_text and c.startswith(self.bos_text) for c in ctxs):
            return None
        _, post = affix
        lasts: dict[str, str] = {}
        memo: dict[tuple[str, str], list[int]] = {}  # (last piece, continuation) -> ids: one split per pair
        keys: list[tuple[str, str]] = []
        for ctx, cont in zip(ctxs, conts, strict=True):
            last = lasts.get(ctx)
            if last is None:
                last = lasts[ctx] = _last_piece(ctx)
            keys.append((last, cont))
        todo = list(dict.fromkeys(keys))
        tail_pieces = [_pieces(last + cont) for last, cont in todo]
        cache = self._seg_cache
        missing = list({p: None for ps in tail_pieces for p in ps if p not in cache})
        if missing:
            self._encode_pieces(missing)
        for key, ps in zip(todo, tail_pieces, strict=True):
            last_ids = cache[key[0]]
            tail_ids: list[int] = []
            for p in ps:
                tail_ids += cache[p]
            memo[key] = (tail_ids + post)[len(last_ids) + len(post) :]
        return [list(memo[k]) for k in keys]  # (a list of its own for every pair)
