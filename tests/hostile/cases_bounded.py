"""Template bombs (bounded rendering, ``compiler/build/bounded.py``): each is a one-line compile error naming the task
file, task, field and doc, within seconds; ``test_bounded.py`` measures their peak memory and time."""

from __future__ import annotations

import json
from pathlib import Path

from tests.hostile.corpus import MINI_YAML, Base, Case, case, compile_task, task_dir

BOMBS: dict[str, tuple[str, str]] = {  # name -> (doc_to_text template, a needle of the error)
    "str_repeat": ('{{ "x" * 10**10 }}', "limit of"),
    "list_repeat": ("{{ [1, 2] * 10**9 }}", "limit of"),
    "pow": ("{{ 9 ** 1000000 }}", "digits"),
    "int_mul_chain": (
        "{% set ns = namespace(n=10**300) %}{% for i in range(100) %}{% set ns.n = ns.n * ns.n %}"
        "{% endfor %}{{ ns.n }}",
        "digits",
    ),  # fmt: skip
    "int_literal_5000_digits": ("{{ 1" + "0" * 5000 + " }}", "4300 digits"),
    "percent_width": ('{{ "%0999999999d" % 1 }}', "width"),
    "format_width": ('{{ "{:>999999999}".format(question) }}', "width"),
    "format_filter_width": ('{{ "%999999999s"|format(question) }}', "width"),
    "center_filter": ("{{ question|center(10**9) }}", "center"),
    "center_method": ("{{ question.center(10**9) }}", "center"),
    "concat_doubling": (
        '{% set ns = namespace(s="xx") %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}'
        "{% endfor %}{{ ns.s|length }}",
        "limit of",
    ),  # fmt: skip
    "plus_doubling": (
        '{% set ns = namespace(s="xx") %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}',
        "limit of",
    ),  # fmt: skip
    "nested_loops_output": (
        "{% for i in range(100000) %}{% for j in range(100000) %}xxxxxxxx{% endfor %}{% endfor %}",
        "characters",
    ),  # fmt: skip
    "nested_loops_silent": (
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
        "limit of 10 s",
    ),  # fmt: skip
    "join_huge": ('{% set s = "x" * 4000000 %}{{ s.join(["a", "b", "c"]) }}', "limit of"),
}


def bomb_case(tmp: Path, base: Base, template: str, needle: str) -> Case:
    d = task_dir(tmp, MINI_YAML.replace('doc_to_text: "Q: {{question}}\\nA:"', f"doc_to_text: {json.dumps(template)}"))
    return Case(
        compile_task(d, "mini", base.data, tmp),
        (str(d / "t.yaml"), "task mini", "doc_to_text", needle),
        absent=[tmp / "out.msgpack"],
        timeout=60,
    )


def _register(name: str, template: str, needle: str) -> None:
    def build(tmp: Path, base: Base) -> Case:
        return bomb_case(tmp, base, template, needle)

    build.__name__ = f"jinja_bomb_{name}"
    case("jinja")(build)


for _name, (_tpl, _needle) in BOMBS.items():
    _register(_name, _tpl, _needle)
