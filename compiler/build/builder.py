"""One task's documents → rendered requests, following lm-eval 0.4.13's ConfigurableTask exactly:
``fewshot_context`` (system prompt, few-shot turns, eval turn, chat template), ``construct_requests``
(per output type: ``construct``) and the few-shot sampler (one ``random.Random`` per task, consumed doc by doc).
"""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Callable
from typing import Any

from lmeval.compiler.build.construct import construct_requests
from lmeval.compiler.build.conversation import doc_messages, doc_tools, step_request
from lmeval.compiler.build.images import doc_images, media_refs, same_doc
from lmeval.compiler.build.messages import Msg, maybe_delimit, qa_turn, single_turn, to_dicts, to_text
from lmeval.compiler.build.records import BuiltDoc, BuiltTask, Prepared, Request
from lmeval.compiler.build.render import Renderer
from lmeval.compiler.build.taskdocs import TaskDocuments
from lmeval.compiler.errors import fail
from lmeval.plans import turns_field, turns_problem

_log = logging.getLogger("lmeval.compile")


def _features(docs: list[dict[str, Any]]) -> list[str]:
    """Every field name of the documents, in first-seen order."""
    features: list[str] = list(docs[0].keys())
    seen = set(features)
    for d in docs:
        if len(d) != len(features) or any(k not in seen for k in d):
            for k in d:
                if k not in seen:
                    seen.add(k)
                    features.append(k)
    return features


# --- the task builder ------------------------------------------------------------------------------


class TaskBuilder(TaskDocuments):
    """A task's documents (``TaskDocuments``) rendered into requests, in lm-eval's ConfigurableTask order."""

    # -- build
    def build(self) -> BuiltTask:
        """Every selected document with its few-shot examples, rendered prompt and requests."""
        return self.render(self.prepare())

    def prepare(self) -> Prepared:
        """What lm-eval's ConfigurableTask.__init__ does before any request is built: the documents
        processed and the first one probed (doc_to_text, doc_to_target, doc_to_choice, in lm-eval's order)."""
        s = self.config
        n_shot = self.resolve_num_fewshot()
        early_pool = self.fewshot_pool() if self._lm_eval_order else None
        docs = self.eval_docs()
        if not docs:
            raise fail("the evaluation split has no documents", file=s.source, task=s.name)
        r = Renderer(s.name, s.source, _features(docs), s.doc_to_choice is not None)
        multiple_input, multiple_target = self._probe(r, docs[0])
        pool = self._shot_pool(n_shot, early_pool) if n_shot > 0 else []
        fmt = s.raw.get("format")
        if n_shot == 0 and isinstance(fmt, dict) and "seed" in fmt:
            self.notes.append(f"{s.name}: 0-shot, so its few-shot seed {fmt['seed']} changes no prompt")
            _log.info(self.notes[-1])
        return Prepared(docs, pool, r, n_shot, multiple_input, multiple_target)

    def render(self, p: Prepared) -> BuiltTask:
        """Every selected document's requests (lm-eval's build_all_requests), from ``prepare``'s result."""
        s, docs, pool, r, n_shot, multiple_input = self.config, p.docs, p.pool, p.renderer, p.n_shot, p.multiple_input
        limit = self.run.limit
        if limit is not None:
            limit = int(math.ceil(len(docs) * limit)) if limit < 1.0 else int(limit)
        selected = docs[:limit] if limit is not None else docs
        drawn = self._subsample(docs)
        keep = set(drawn.doc_ids) if drawn is not None else None
        rnd = random.Random(self._fewshot_seed())
        remove_eval_doc = s.fewshot.split == s.test_split
        shot_cache: dict[int, list[Msg]] = {}
        out: list[BuiltDoc] = []
        for doc_id, doc in enumerate(selected):

            def where(fld: str, msg: str, _d: int = doc_id) -> Exception:
                return fail(msg, file=s.source, task=s.name, field=fld, doc_id=_d)

            ids = self._sample(n_shot, pool, doc if remove_eval_doc else None, rnd, where) if n_shot else []
            if keep is not None and doc_id not in keep:
                continue  # a subset's documents get the few-shot examples (and ids) of the full run
            messages: list[Msg] = []
            description = r.resolve_field(s.description, doc, "description", doc_id) or ""
            system = maybe_delimit(self.run.system_instruction, description, s.fewshot_delimiter)
            if system:
                messages.append(("system", system, ""))
            for i in ids:
                turn = shot_cache.get(i)
                if turn is None:
                    turn = self._shot(r, pool[i], multiple_input, i)
                    shot_cache[i] = turn
                messages.extend(turn)
            out.append(self._doc(r, doc_id, doc, ids, messages, multiple_input, where))
        nulls = r.nulls.fields(self._data_file(), s.name)
        built = BuiltTask(s, n_shot, out, docs, multiple_input, p.multiple_target, self.notes, nulls, drawn)
        built.media = dict(self.media)
        return built

    def _fewshot_seed(self) -> int | None:
        """The few-shot sampler's seed: a sweep variant's own (its ``format.seed``, compiler/formats), else
        the run's."""
        fmt = self.config.raw.get("format")
        seed = fmt.get("seed") if isinstance(fmt, dict) else None
        return seed if isinstance(seed, int) else self.run.fewshot_random_seed

    def _probe(self, r: Renderer, first: dict[str, Any]) -> tuple[int, int]:
        """lm-eval probes the first document to detect multiple-input / multiple-target tasks: (choices of a
        multiple-input task or 0, targets of a multiple-target task or 0)."""
        s = self.config
        if s.doc_to_text is None:  # a conversation task's messages (compiler/build/conversation.py)
            return 0, 0
        probe_text = r.text(s.doc_to_text, first, 0)
        probe_target = r.target(s.doc_to_target, first, 0) if s.doc_to_target is not None else None
        probe_choice = r.choice(s.doc_to_choice, first, 0) if s.doc_to_choice is not None else None
        if s.multiple_inputs:
            probe_text, probe_choice, probe_target = self._inputs05(probe_text, probe_choice, probe_target, None)
        multiple_input = 0
        if probe_choice is not None and isinstance(probe_text, int) and not isinstance(probe_text, bool):
            multiple_input = len(probe_choice)
        return multiple_input, len(probe_target) if isinstance(probe_target, list) else 0

    def _shot_pool(self, n_shot: int, early: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
        """The documents few-shot examples are drawn from (``fewshot_indices`` picks them), never empty;
        ``early`` is the pool when ``prepare`` had to process it first (lm-eval's order)."""
        s = self.config
        pool = early if early is not None else self.fewshot_pool()
        if s.fewshot.sampler == "default" and s.fewshot.fewshot_indices:
            try:
                pool = [pool[i] for i in s.fewshot.fewshot_indices]
            except IndexError:
                raise fail(
                    f"index out of range of the {len(pool)}-document few-shot pool",
                    file=s.source,
                    task=s.name,
                    field="fewshot_config.fewshot_indices",
                ) from None
        if not pool:
            raise fail(
                f"num_fewshot={n_shot} but the few-shot pool is empty", file=s.source, task=s.name, field="num_fewshot"
            )
        return pool

    def _doc(
        self,
        r: Renderer,
        doc_id: int,
        doc: dict[str, Any],
        ids: list[int],
        messages: list[Msg],
        multiple_input: int,
        where: Callable[[str, str], Exception],
    ) -> BuiltDoc:
        """One document's prompt (after its few-shot ``messages``), requests and checked target."""
        s = self.config
        if s.doc_to_messages is not None or s.doc_to_tools is not None:
            return self._conversation_doc(r, doc_id, doc, ids, messages, where)
        q = r.text(s.doc_to_text, doc, doc_id)
        choices = r.choice(s.doc_to_choice, doc, doc_id) if s.doc_to_choice is not None else None
        target = r.target(s.doc_to_target, doc, doc_id) if s.doc_to_target is not None else None
        if s.multiple_inputs:
            q, choices, target = self._inputs05(q, choices, target, where)
        gen_prefix = r.prefix(s.gen_prefix, doc, doc_id)
        if multiple_input:
            if choices is None:
                raise where("doc_to_choice", "multiple-input tasks need doc_to_choice")
            ctx: str | list[str] = [
                self._render(messages + qa_turn(cq, None, None, gen_prefix, "", "\n\n", where), gen_prefix)
                for cq in choices
            ]
        else:
            turns = messages + qa_turn(q, choices, None, gen_prefix, s.target_delimiter, "", where)
            ctx = self._render(turns, gen_prefix)
        requests = construct_requests(self.config, self.run, ctx, doc, target, choices, where)
        if self.chat is not None and not multiple_input and s.output_type == "generate_until":
            requests[0].messages = self._conv(turns)  # kept in the plan for chat endpoints
        if s.doc_to_image is not None:  # lm-eval appends the doc's images to every request of the doc
            if self.chat is not None and not self.media and not any("image parts" in n for n in self.notes):
                self.notes.append(
                    f"{s.name}: images with a chat template: the context is the tokenizer's chat template over "
                    "text with <image> placeholders (chat endpoints get the messages with image parts); lm-eval's "
                    "hf-multimodal renders image parts with the processor's own template, which can differ"
                )
            images = doc_images(r, s.doc_to_image, doc, doc_id, self.images, where)
            for rq in requests:  # a document without images is a text request (no media: images.py)
                rq.media = media_refs(rq.context, rq.messages, [d.info for d in images]) if images else None
            self.media.update((d.info.sha256, d.data) for d in images)
        gold = q if multiple_input else target
        self._check_target(gold, choices, where, multiple_input)
        self._check_turns(doc, where)
        return BuiltDoc(doc_id, doc, gold, choices, ids, requests)

    def _check_turns(self, doc: dict[str, Any], where: Callable[[str, str], Exception]) -> None:
        """A multi-turn task's document lists its user turns (plans/plan/chain.py), checked before turn 1 runs."""
        name = turns_field(self.config.raw)
        if name is None:
            return
        problem = turns_problem(doc.get(name))
        if problem is not None:
            raise where("turns_field", f"document field {name!r} {problem}")

    def _conversation_doc(
        self,
        r: Renderer,
        doc_id: int,
        doc: dict[str, Any],
        ids: list[int],
        messages: list[Msg],
        where: Callable[[str, str], Exception],
    ) -> BuiltDoc:
        """A conversation task's document (compiler/build/conversation.py)."""
        s = self.config
        if self.chat is None:
            fld = "doc_to_tools" if s.doc_to_messages is None else "doc_to_messages"
            raise where(fld, "needs run.apply_chat_template=true (the model's chat template renders the conversation)")
        if s.doc_to_messages is not None:
            conv = (self._conv(messages) if messages else []) + doc_messages(doc.get(s.doc_to_messages), where)
        else:
            q = r.text(s.doc_to_text, doc, doc_id)
            conv = self._conv(messages + qa_turn(q, None, None, None, s.target_delimiter, "", where))
        if s.output_type == "loglikelihood":
            ctx, cont = step_request(self.chat, conv, where)
            return BuiltDoc(doc_id, doc, conv[-1]["content"], None, ids, [Request("loglikelihood", ctx, cont, None, 0)])
        tools = doc_tools(doc.get(s.doc_to_tools), where) if s.doc_to_tools is not None else None
        ctx = self.chat(conv, True, tools=tools) if tools is not None else self.chat(conv, True)
        target = r.target(s.doc_to_target, doc, doc_id) if s.doc_to_target is not None else None
        requests = construct_requests(self.config, self.run, ctx, doc, target, None, where)
        requests[0].messages, requests[0].tools = conv, tools
        return BuiltDoc(doc_id, doc, target, None, ids, requests)

    def _check_target(self, gold: Any, choices: list[Any] | None, where: Callable, multiple_input: int) -> None:
        s = self.config
        if s.output_type != "multiple_choice" or choices is None:
            return
        golds = gold if isinstance(gold, list) else [gold]
        for g in golds:
            if not isinstance(g, int | str):
                raise where("doc_to_target", f"must give a choice index or choice text, got {type(g).__name__} {g!r}")
            if isinstance(g, int) and not 0 <= g < len(choices):
                fld = "doc_to_text" if multiple_input else "doc_to_target"
                raise where(fld, f"target index {g} is out of range of doc_to_choice ({len(choices)} choices)")
            if isinstance(g, str) and g not in choices:
                raise where("doc_to_target", f"target {g[:60]!r} is not one of the doc_to_choice choices")

    def _sample(
        self, n: int, pool: list[dict[str, Any]], eval_doc: dict[str, Any] | None, rnd: random.Random, where: Callable
    ) -> list[int]:
        """Pool indices, drawn exactly as lm-eval's ContextSampler / FirstNSampler draw documents (a candidate
        equal to the document dropped as lm-eval compares rows: ``images.same_doc``)."""

        def other(i: int) -> bool:
            def pooled(fld: str, msg: str) -> Exception:  # an image is decoded to compare: name its document
                return where(fld, f"{msg} (few-shot pool document {i})")

            return eval_doc is None or not self._same_doc(pool[i], eval_doc, pooled)

        if self.config.fewshot.sampler == "first_n":
            idx = list(range(len(pool)))
            if eval_doc is not None:
                idx = [i for i in idx if other(i)]
            if n > len(idx):
                raise where("num_fewshot", f"{n} few-shot examples requested but the pool has {len(idx)}")
            return idx[:n]
        size = len(pool)
        if not eval_doc:
            if n > size:
                raise where("num_fewshot", f"{n} few-shot examples requested but the pool has {size}")
            return rnd.sample(range(size), n)
        if n + 1 > size:
            raise where("num_fewshot", f"{n} few-shot examples (+1 for the leakage guard) but the pool has {size}")
        res = [i for i in rnd.sample(range(size), n + 1) if other(i)][:n]
        if len(res) < n:
            rest = [i for i in range(size) if other(i)]
            if n > len(rest):
                raise where("num_fewshot", f"{n} few-shot examples requested but the pool has {len(rest)} other docs")
            res = rnd.sample(rest, n)
        return res

    def _same_doc(self, a: dict[str, Any], b: dict[str, Any], where: Callable) -> bool:
        """lm-eval's ``x == doc`` of two rows: images compared decoded in an image task (``images.same_doc``)."""
        return same_doc(a, b, self.images, where) if self.config.doc_to_image is not None else a == b

    def _shot(self, r: Renderer, fs_doc: dict[str, Any], multiple_input: int, pool_id: int) -> list[Msg]:
        s, f = self.config, self.config.fewshot

        def where(fld: str, msg: str) -> Exception:
            return fail(msg + f" (few-shot pool document {pool_id})", file=s.source, task=s.name, field=fld)

        q = r.text(f.doc_to_text, fs_doc, None)
        c = r.choice(f.doc_to_choice, fs_doc, None) if f.doc_to_choice else None
        a = r.target(f.doc_to_target, fs_doc, None)
        if s.multiple_inputs:
            q, c, a = self._inputs05(q, c, a, where)
        gp = r.resolve_field(f.gen_prefix, fs_doc, "gen_prefix", None)
        if multiple_input:
            if not c or not isinstance(q, int) or not -len(c) <= q < len(c):
                raise where("doc_to_text", f"multiple-input index {q!r} out of range of the choices")
            q, c = c[q], None
        return qa_turn(q, c, a, gp, f.target_delimiter, f.fewshot_delimiter, where)

    def _inputs05(self, q: Any, c: Any, a: Any, where: Callable[[str, str], Exception] | None) -> tuple[Any, Any, Any]:
        """lm-eval 0.5's multiple inputs (``multiple_inputs: true``) in 0.4's terms: its (contexts, [the
        continuation], gold index) are 0.4's (gold index, contexts, continuation), so one path builds both."""

        def bad(fld: str, msg: str) -> Exception:
            return (
                where(fld, msg)
                if where is not None
                else fail(msg, file=self.config.source, task=self.config.name, field=fld)
            )

        if isinstance(q, str):
            q = [q]  # lm-eval 0.5 takes one context as a list of one
        if not isinstance(q, list) or not q or not all(isinstance(x, str) for x in q):
            raise bad("doc_to_text", f"multiple inputs: must give a list of contexts, got {q!r:.80}")
        if not isinstance(c, list) or len(c) != 1 or not isinstance(c[0], str):
            raise bad("doc_to_choice", f"multiple inputs: must give a list of one continuation, got {c!r:.80}")
        if c[0] == "":
            raise bad("doc_to_choice", "multiple inputs: an empty continuation is not supported")
        if isinstance(a, str) and a in q:
            a = q.index(a)
        if not isinstance(a, int) or isinstance(a, bool):
            raise bad("doc_to_target", f"multiple inputs: must give the gold context's index, got {a!r:.80}")
        return a, q, c[0]

    def _render(self, msgs: list[Msg], gen_prefix: str | None) -> str:
        if self.chat is None:
            return to_text(msgs)
        return self.chat(self._conv(msgs), not gen_prefix)

    def _conv(self, msgs: list[Msg]) -> list[dict[str, str]]:
        """The role/content messages a chat template gets."""
        return to_dicts(msgs) if self.run.fewshot_as_multiturn else single_turn(msgs)
