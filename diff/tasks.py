"""One task of two plans compared doc by doc: both sides' record maps are merge-joined by ``doc_id`` (then by
Instance ``idx``), holding one document of each side in memory at a time, while counts, causes and the first
changed prompts (as unified diffs) accumulate in the report."""

from __future__ import annotations

from typing import Any, NamedTuple

from lmeval.diff.changes import dict_changes, group_by_cause, same_value, summary_changes
from lmeval.diff.docs import DocGroup, Unordered, doc_groups, join_dict, join_sorted
from lmeval.diff.model import CauseStat, Change, DiffReport, PromptDiff, TaskDiff
from lmeval.diff.render import short_pair, unified
from lmeval.plans import PlanReader, TaskSummary, same_task_records

_EXAMPLES = 3
# Causes a config change can have on a prompt's text.
_PROMPT_CAUSES = ("description", "system_instruction", "delimiters", "template", "chat_template", "fewshot", "data")
_DOC_FIELDS = ("doc", "target", "choices", "fewshot_ids")
_INST_FIELDS = (
    "request_type",
    "context",
    "continuation",
    "generation_kwargs",
    "repeats",
    "context_ids",
    "continuation_ids",
    "messages",  # a chat-templated generation's messages (plans/plan/chatmessages.py)
    "media",  # the images it shows (plans/plan/media.py)
    "tools",  # a tool-call task's tools (plans/plan/toolcalls.py)
)


class ChangedInstance(NamedTuple):
    """An Instance present on both sides whose fields differ."""

    idx: int
    old: dict[str, Any]
    new: dict[str, Any]
    causes: set[str]


# With the prompt format changed (``NAME@cf`` vs ``NAME@mcf``), what it rewrites is the format's doing: these
# causes of a changed prompt, document or config value are reported as the format.
_FORMAT_PARTS = frozenset(
    ("template", "choices", "target", "delimiters", "request_type", "generation_kwargs", "scoring", "config")
    + ("prompt", "token_ids")
)


def fold_format(causes: dict[str, list[Change]]) -> dict[str, list[Change]]:
    """A task's config changes by cause, those a changed format explains moved under ``format``."""
    if "format" not in causes:
        return causes
    out: dict[str, list[Change]] = {}
    for cause, changes in causes.items():
        out.setdefault("format" if cause in _FORMAT_PARTS else cause, []).extend(changes)
    return out


# causes that explain a token-id change already (otherwise changed ids alone are "token_ids")
_TEXT_CAUSES = frozenset(
    ("description", "system_instruction", "delimiters", "template", "chat_template", "fewshot", "doc", "prompt")
    + ("data", "choices")
)


class _TaskDiffer:
    """Accumulates one task's counts, causes and prompt diffs while its docs stream past."""

    def __init__(
        self,
        td: TaskDiff,
        task_causes: dict[str, list[Change]],
        run_causes: dict[str, list[Change]],
        old: TaskSummary,
        new: TaskSummary,
        report: DiffReport,
        labels: tuple[str, str],
    ) -> None:
        self.td = td
        self.report = report
        self.labels = labels
        self.stats: dict[str, CauseStat] = {k: CauseStat(k, config=list(v)) for k, v in task_causes.items()}
        self.task_prompt_causes = [c for c in _PROMPT_CAUSES if c in task_causes]
        self.run_prompt_causes = [c for c in _PROMPT_CAUSES if c in run_causes]
        self.run_causes = run_causes
        self.format_changed = "format" in task_causes
        self.old_desc = old.config.get("description")
        self.new_desc = new.config.get("description")
        self.old_fd = old.config.get("fewshot_delimiter")
        self.new_fd = new.config.get("fewshot_delimiter")

    def _stat(self, cause: str) -> CauseStat:
        if cause not in self.stats:
            self.stats[cause] = CauseStat(cause, config=list(self.run_causes.get(cause, [])))
        return self.stats[cause]

    def _context_causes(self, o: str, n: str, doc_causes: set[str]) -> set[str]:
        causes = doc_causes & {"fewshot", "doc"}
        if self.format_changed:  # a format or its variant (labels, few-shot seed) rewrote the prompt
            causes.add("format")
        cands = list(self.task_prompt_causes)
        if "description" in cands and self._explained_by(self.old_desc, self.new_desc, o, n):
            return causes | {"description"}
        if "delimiters" in cands and self._explained_by(self.old_fd, self.new_fd, o, n, every=True):
            return causes | {"delimiters"}
        causes |= set(cands)
        if not causes:
            causes = set(self.run_prompt_causes) or {"prompt"}
        return causes

    @staticmethod
    def _explained_by(old_s: Any, new_s: Any, o: str, n: str, every: bool = False) -> bool:
        if not isinstance(old_s, str) or not isinstance(new_s, str) or old_s == new_s:
            return False
        if not every and o.startswith(old_s) and n.startswith(new_s) and o[len(old_s) :] == n[len(new_s) :]:
            return True
        return bool(old_s) and o.replace(old_s, new_s, -1 if every else 1) == n

    def doc(self, doc_id: int, og: DocGroup | None, ng: DocGroup | None) -> None:
        """One document: added, removed, or compared field by field and Instance by Instance."""
        td = self.td
        if og is None:
            assert ng is not None
            td.docs_added += 1
            td.instances_added += len(ng.instances)
            td.to_execute += len(ng.instances)
            self._prompt_whole(doc_id, ng.instances, "added")
            return
        if ng is None:
            td.docs_removed += 1
            td.instances_removed += len(og.instances)
            self._prompt_whole(doc_id, og.instances, "removed")
            return
        oi, ni = og.instances, ng.instances
        doc_causes = self._doc_causes(doc_id, og.doc, ng.doc)
        inst_causes: dict[str, int] = {}
        changed: list[ChangedInstance] = []
        for idx in sorted(set(oi) | set(ni)):
            ch = self._instance(oi.get(idx), ni.get(idx), idx, doc_causes)
            if ch is not None:
                for cause in ch.causes:
                    inst_causes[cause] = inst_causes.get(cause, 0) + 1
                changed.append(ch)
        for c in doc_causes:
            self._stat(c).docs += 1
        for c, k in inst_causes.items():
            st = self._stat(c)
            st.instances += k
            if c not in doc_causes:
                st.docs += 1
        if doc_causes or changed or len(oi) != len(ni) or set(oi) != set(ni):
            td.docs_changed += 1
        if changed:
            self._prompt_changed(doc_id, changed)

    def _doc_causes(self, doc_id: int, od: dict[str, Any], nd: dict[str, Any]) -> set[str]:
        """The causes of a document's own fields changing (examples recorded per cause)."""
        doc_causes: set[str] = set()
        for f in _DOC_FIELDS:
            ov, nv = od.get(f), nd.get(f)
            if ov == nv and same_value(ov, nv) or (isinstance(ov, list) and ov == nv):
                continue
            cause = {"doc": "doc", "target": "target", "choices": "choices", "fewshot_ids": "fewshot"}[f]
            if self.format_changed and cause in _FORMAT_PARTS:
                cause = "format"
            doc_causes.add(cause)
            st = self._stat(cause)
            if len(st.examples) < _EXAMPLES:
                if cause == "doc":
                    fields = sorted(k for k in set(ov or {}) | set(nv or {}) if (ov or {}).get(k) != (nv or {}).get(k))
                    st.examples.append({"doc_id": doc_id, "fields": fields})
                else:
                    st.examples.append({"doc_id": doc_id, "old": ov, "new": nv})
        return doc_causes

    def _instance(
        self, o: dict[str, Any] | None, n: dict[str, Any] | None, idx: int, doc_causes: set[str]
    ) -> ChangedInstance | None:
        """One Instance counted (added, removed, to execute); its causes when it changed."""
        td = self.td
        if o is None:
            td.instances_added += 1
            td.to_execute += 1
            return None
        if n is None:
            td.instances_removed += 1
            return None
        diff = [f for f in _INST_FIELDS if o.get(f) != n.get(f)]
        if o.get("request_hash") != n.get("request_hash") or diff:
            td.to_execute += 1
        if not diff:
            return None
        td.instances_changed += 1
        causes: set[str] = set()
        if "context" in diff:
            causes |= self._context_causes(o["context"], n["context"], doc_causes)
        if "continuation" in diff:
            if "delimiters" in self.task_prompt_causes:
                causes.add("delimiters")
            elif "chat_template" in self.task_prompt_causes or "chat_template" in self.run_prompt_causes:
                causes.add("chat_template")
            else:
                causes.add("choices")
        if "generation_kwargs" in diff or "repeats" in diff:
            causes.add("generation_kwargs")
        if "request_type" in diff:
            causes.add("request_type")
        ids_only = ("context_ids" in diff or "continuation_ids" in diff) and not {"context", "continuation"} & set(diff)
        if ids_only and not causes & _TEXT_CAUSES:
            causes.add("token_ids")
        if "tools" in diff:  # the tools handed to the chat template (and to a chat endpoint) changed
            causes.add("tools")
        if "messages" in diff and not causes:  # the chat messages alone: what a chat endpoint is sent changed
            causes.add("prompt")
        if "media" in diff:
            causes.add("images")
        if self.format_changed:
            causes = {"format" if c in _FORMAT_PARTS else c for c in causes}
        return ChangedInstance(idx, o, n, causes)

    # --- prompt diffs -------------------------------------------------------------------------------------
    def _room(self) -> bool:
        return len(self.report.prompts) < self.report.show

    def _label(self, side: int, doc_id: int, idxs: list[int]) -> str:
        span = f"idx {idxs[0]}" if len(idxs) == 1 else f"idx {','.join(map(str, idxs))}"
        return f"{self.labels[side]}  {self.td.name} doc {doc_id} {span}"

    def _prompt_whole(self, doc_id: int, insts: dict[int, dict[str, Any]], kind: str) -> None:
        self.report.prompts_total += 1
        if not self._room() or not insts:
            return
        idxs = sorted(insts)
        first = insts[idxs[0]]
        old, new = ("", first.get("context", "")) if kind == "added" else (first.get("context", ""), "")
        lines = unified(old, new, self._label(0, doc_id, idxs), self._label(1, doc_id, idxs))
        self.report.prompts.append(PromptDiff(self.td.name, doc_id, idxs, kind, [], "\n".join(lines)))

    def _prompt_changed(self, doc_id: int, pairs: list[ChangedInstance]) -> None:
        groups: dict[tuple[str, str], list[ChangedInstance]] = {}
        for p in pairs:
            groups.setdefault((p.old["context"], p.new["context"]), []).append(p)
        for (oc, nc), items in groups.items():
            self.report.prompts_total += 1
            if not self._room():
                continue
            idxs = [p.idx for p in items]
            causes = sorted(set().union(*(p.causes for p in items)))
            lines: list[str] = []
            if oc != nc:
                lines += unified(oc, nc, self._label(0, doc_id, idxs), self._label(1, doc_id, idxs))
            else:
                lines += [
                    f"--- {self._label(0, doc_id, idxs)}",
                    f"+++ {self._label(1, doc_id, idxs)}",
                    "  (context unchanged)",
                ]
            kind = "changed"
            for idx, o, n, _ in items:
                if o.get("continuation") != n.get("continuation"):
                    a, b = short_pair(o.get("continuation"), n.get("continuation"), 80)
                    lines.append(f"  idx {idx} continuation: {a} → {b}")
                if o.get("generation_kwargs") != n.get("generation_kwargs"):
                    for ch in dict_changes(o.get("generation_kwargs"), n.get("generation_kwargs"), "generation_kwargs"):
                        a, b = short_pair(ch.old, ch.new, 80)
                        lines.append(f"  idx {idx} {ch.path}: {a} → {b}")
                if o.get("repeats") != n.get("repeats"):
                    lines.append(f"  idx {idx} repeats: {o.get('repeats')} → {n.get('repeats')}")
                if o.get("request_type") != n.get("request_type"):
                    lines.append(f"  idx {idx} request type: {o.get('request_type')} → {n.get('request_type')}")
                lines += media_lines(idx, o.get("media"), n.get("media"))
                ids_moved = o.get("context_ids") != n.get("context_ids") or o.get("continuation_ids") != n.get(
                    "continuation_ids"
                )
                if oc == nc and o.get("continuation") == n.get("continuation") and ids_moved:
                    kind = "token_ids"
                    lines.append(
                        f"  idx {idx} token ids: context {_ids_change(o.get('context_ids'), n.get('context_ids'))}, "
                        f"continuation {_ids_change(o.get('continuation_ids'), n.get('continuation_ids'))}"
                    )
            lines.append(f"  causes: {', '.join(causes)}")
            self.report.prompts.append(PromptDiff(self.td.name, doc_id, idxs, kind, causes, "\n".join(lines)))

    def finish(self) -> None:
        self.td.causes = list(self.stats.values())


def media_lines(idx: int, old: list[dict[str, Any]] | None, new: list[dict[str, Any]] | None) -> list[str]:
    """One line per image position whose image changed: its sha256 (12 digits), size and pixels, old → new."""
    a, b = old or [], new or []
    out: list[str] = []
    for k in range(max(len(a), len(b))):
        x, y = (a[k] if k < len(a) else None), (b[k] if k < len(b) else None)
        if x == y:
            continue
        what = "pixels changed" if x and y and x.get("pixels") != y.get("pixels") else "same pixels"
        if x is None or y is None:
            what = "added" if x is None else "removed"
        out.append(f"  idx {idx} image {k}: {_image(x)} → {_image(y)} ({what})")
    return out


def _image(m: dict[str, Any] | None) -> str:
    if m is None:
        return "none"
    return f"{str(m.get('sha256'))[:12]} {m.get('width')}x{m.get('height')} {m.get('mime')} {m.get('size')} B"


def _ids_change(a: list[int] | None, b: list[int] | None) -> str:
    if a == b:
        return "same"
    if a is None or b is None:
        return f"{'none' if a is None else len(a)} → {'none' if b is None else len(b)} tokens"
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    return f"{len(a)} → {len(b)} tokens, first difference at position {i}"


def diff_task(
    old: PlanReader,
    new: PlanReader,
    ot: TaskSummary,
    nt: TaskSummary,
    run_causes: dict[str, list[Change]],
    report: DiffReport,
    labels: tuple[str, str],
) -> TaskDiff:
    name = ot.name if ot.name == nt.name else f"{ot.name} -> {nt.name}"  # one task in two formats
    td = TaskDiff(name, "changed", ot.task_hash, nt.task_hash, ot.n_docs, nt.n_docs, ot.n_instances, nt.n_instances)
    td.changes = summary_changes(ot, nt)
    task_causes = fold_format(group_by_cause(td.changes))
    if ot.name == nt.name and same_task_records(old.layout, new.layout, ot.name):
        td.records_identical = True
        td.scoring_only = bool(task_causes) and set(task_causes) <= {"scoring"}
        _TaskDiffer(td, task_causes, run_causes, ot, nt, report, labels).finish()
    else:
        n_prompts, n_total = len(report.prompts), report.prompts_total
        try:
            td = _join_task(old, new, ot, nt, td, task_causes, run_causes, report, join_sorted, labels)
        except Unordered:
            del report.prompts[n_prompts:]
            report.prompts_total = n_total
            fresh = TaskDiff(
                td.name,
                td.status,
                td.old_hash,
                td.new_hash,
                td.old_docs,
                td.new_docs,
                td.old_instances,
                td.new_instances,
                changes=td.changes,
            )
            td = _join_task(old, new, ot, nt, fresh, task_causes, run_causes, report, join_dict, labels)
    if (
        not td.records_identical
        and not any((c.docs or c.instances) for c in td.causes)
        and not (td.docs_added or td.docs_removed or td.instances_added or td.instances_removed)
    ):
        # record bytes differ, yet no field we compare does (e.g. a doc_hash or request_hash recomputed)
        td.causes.append(CauseStat("prompt", examples=[{"note": "records differ only in derived hashes"}]))
    return td


def _join_task(
    old: PlanReader,
    new: PlanReader,
    ot: TaskSummary,
    nt: TaskSummary,
    td: TaskDiff,
    task_causes: dict[str, list[Change]],
    run_causes: dict[str, list[Change]],
    report: DiffReport,
    join: Any,
    labels: tuple[str, str],
) -> TaskDiff:
    differ = _TaskDiffer(td, task_causes, run_causes, ot, nt, report, labels)
    for doc_id, og, ng in join(doc_groups(old, ot.name), doc_groups(new, nt.name)):
        differ.doc(doc_id, og, ng)
    differ.finish()
    return td
