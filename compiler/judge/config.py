"""A judge config: ``conf/judge/NAME.yaml`` (or a YAML file's path) with ``KEY=VALUE`` overrides on top (dotted
keys; values read as YAML, but the text keys ``TEXT_KEYS`` verbatim); its ``model`` is a conf/model entry whose
own keys take ``model.KEY=VALUE``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lmeval.compiler.errors import CompileError
from lmeval.plans import (
    MAX_YAML_BYTES,
    MODES,
    InputError,
    ParseRule,
    open_regular,
    override_problem,
    secret_problem,
    value_problem,
)

CONF = Path(__file__).resolve().parents[2] / "conf"


@dataclass(frozen=True)
class JudgeConfig:
    name: str
    mode: str
    rubric: str
    model: dict[str, Any]
    parse: ParseRule
    generation: dict[str, Any]
    system: str | None = None
    apply_chat_template: bool = True
    question: str | None = None
    reference: str | None = None
    max_answer_chars: int | None = None
    tasks: list[str] | None = None
    limit: int | None = None
    system_with_reference: str | None = None  # the system prompt of documents with a reference (MT-Bench's)

    def section(self) -> dict[str, Any]:
        """What the plan's ``config.judge`` holds (everything but the model, which is ``config.model``);
        ``system_with_reference`` only when set, so other judge plans keep their hashes."""
        extra = {"system_with_reference": self.system_with_reference} if self.system_with_reference else {}
        return extra | {
            "name": self.name,
            "mode": self.mode,
            "rubric": self.rubric,
            "system": self.system,
            "apply_chat_template": self.apply_chat_template,
            "question": self.question,
            "reference": self.reference,
            "max_answer_chars": self.max_answer_chars,
            "parse": self.parse.to_dict(),
            "generation": dict(self.generation),
            "tasks": self.tasks,
            "limit": self.limit,
        }


def _yaml(path: Path, what: str) -> dict[str, Any]:
    """A judge or model config, under the limits of a task YAML (``plans.limits``: a regular file of at most
    ``MAX_YAML_BYTES``, opened without blocking; values a plan can carry, an alias bomb stopped at once)."""
    import yaml

    try:
        with open_regular(path, max_bytes=MAX_YAML_BYTES, what=f"{what} config") as f:
            data = yaml.safe_load(f)
    except InputError as e:
        raise CompileError(str(e)) from None
    except (OSError, ValueError, yaml.YAMLError) as e:  # ValueError: not UTF-8
        why = f"{type(e).__name__}: {e}".split("\n")[0][:200]
        raise CompileError(f"{path}: cannot read the {what} config ({why})") from None
    if not isinstance(data, dict):
        raise CompileError(f"{path}: the {what} config is not a mapping")
    beyond = value_problem(data)
    if beyond is not None:
        raise CompileError(f"{path}: the {what} config: {beyond[1]}")
    data.pop("defaults", None)
    return data


def _find(name: str, kind: str) -> Path:
    p = Path(name)
    if p.suffix in (".yaml", ".yml") and p.is_file():
        return p
    q = CONF / kind / f"{name}.yaml"
    if not q.is_file():
        known = sorted(f.stem for f in (CONF / kind).glob("*.yaml"))
        raise CompileError(
            f"--judge {name}: no {q} (known: {', '.join(known)})"
            if kind == "judge"
            else f"judge model {name!r}: no conf/model/{name}.yaml"
        )
    return q


TEXT_KEYS = frozenset(
    {"name", "rubric", "system", "system_with_reference", "question", "reference", "parse.regex", "parse.fallback"}
)  # taken verbatim


def _value(text: str) -> Any:
    import yaml

    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    beyond = value_problem(value)
    if beyond is not None:
        raise CompileError(f"judge override value {text[:40]!r}: {beyond[1]}")
    return value


def _set(node: Any, keys: list[str], value: Any, path: Path) -> None:
    for k in keys[:-1]:
        if not isinstance(node.get(k), dict):
            node[k] = {}
        node = node[k]
    node[keys[-1]] = value


def load_judge_config(name: str, overrides: list[str] = ()) -> JudgeConfig:  # type: ignore[assignment]
    path = _find(name, "judge")
    raw = _yaml(path, "judge")
    plain = [o.lstrip("+") for o in overrides]
    if override_problem(plain):
        raise CompileError(f"{path}: {override_problem(plain, 'model')}")
    for o in plain:
        if "=" not in o:
            raise CompileError(f"judge override {o!r}: expected KEY=VALUE (e.g. generation.max_gen_toks=32)")
    model_name = next((o.split("=", 1)[1] for o in plain if o.split("=", 1)[0] == "model"), raw.get("model"))
    if isinstance(model_name, str):
        raw["model"] = _yaml(_find(model_name, "model"), "model")
    data: Any = raw
    for o in plain:
        key, _, value = o.partition("=")
        if key != "model":
            _set(data, key.split("."), value if key in TEXT_KEYS else _value(value), path)
    return _checked(data, path)


def _checked(d: dict[str, Any], path: Path) -> JudgeConfig:
    def bad(key: str, why: str) -> CompileError:
        return CompileError(f"{path}: judge.{key}: {why}")

    mode = d.get("mode")
    if mode not in MODES:
        raise bad("mode", f"one of {', '.join(MODES)}, got {mode!r}")
    for key in ("rubric",):
        if not isinstance(d.get(key), str) or not d[key].strip():
            raise bad(key, "a Jinja template (a non-empty string) is required")
    for key in ("system", "system_with_reference", "question", "reference"):
        if d.get(key) is not None and not isinstance(d[key], str):
            raise bad(key, f"a string or null, got {d[key]!r}")
    if not isinstance(d.get("model"), dict):
        raise bad("model", "a conf/model entry name (e.g. smollm2) is required")
    if secret_problem(d["model"]):
        raise CompileError(f"{path}: {secret_problem(d['model'], 'judge.model')}")
    gen = d.get("generation") or {}
    if not isinstance(gen, dict):
        raise bad("generation", "a map of generation settings (max_gen_toks, until, ...)")
    mgt = gen.get("max_gen_toks")
    if mgt is not None and (isinstance(mgt, bool) or not isinstance(mgt, int) or mgt < 1):
        raise bad("generation.max_gen_toks", f"a positive integer, got {mgt!r}")
    for key in ("limit", "max_answer_chars"):
        v = d.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise bad(key, f"a positive integer or null, got {v!r}")
    tasks = d.get("tasks")
    if tasks is not None and (not isinstance(tasks, list) or not all(isinstance(t, str) for t in tasks)):
        raise bad("tasks", f"a list of task names or null, got {tasks!r}")
    try:
        rule = ParseRule.from_dict(d.get("parse"), mode, f"{path}: judge.parse")
    except Exception as e:  # PlanError: one line already
        raise CompileError(str(e)) from None
    return JudgeConfig(
        name=str(d.get("name") or path.stem),
        mode=mode,
        rubric=d["rubric"],
        model=d["model"],
        parse=rule,
        generation=dict(gen),
        system=d.get("system"),
        apply_chat_template=bool(d.get("apply_chat_template", True)),
        question=d.get("question"),
        reference=d.get("reference"),
        max_answer_chars=d.get("max_answer_chars"),
        tasks=tasks,
        limit=d.get("limit"),
        system_with_reference=d.get("system_with_reference"),
    )
