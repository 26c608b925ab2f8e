"""The filter registry: one implementation per filter name, equal to lm-eval 0.4.13's own filter classes on
random pipelines, for responses as a polars column (generated text) and as Python objects (log-likelihood
pairs, what a custom filter returns)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from lmeval.plans.vocab import scoring
from lmeval.scorer import filters
from lmeval.scorer.errors import ScoreError

TEXTS = ["The answer is 42", "#### 17", "(A)", "(B) yes", "  b  ", "x", "", "ÉCOLE  ", "answer: B", "#### -3,000.5",
         "(a)", "ǅ", "42\n", "no"]  # fmt: skip
OBJECTS = [1, 1.0, True, (1, 2), (-0.5, False), "x", None, "a", ["l"]]
STRING_STEPS: list[dict[str, Any]] = [
    {"function": "regex", "regex_pattern": r"#### (\-?[0-9\.\,]+)"},
    {"function": "regex", "regex_pattern": r"(\d+)", "group_select": -1, "fallback": "?"},
    {"function": "regex", "regex_pattern": r"\((A|B)\)|(yes)", "fallback": "[x]"},
    {"function": "lowercase"},
    {"function": "uppercase"},
    {"function": "remove_whitespace"},
    {"function": "multi_choice_regex", "regex_pattern": r"\((A|B)\)", "ignore_case": True},
]
ANY_STEPS: list[dict[str, Any]] = [
    {"function": "take_first"},
    {"function": "take_first_k", "k": 2},
    {"function": "majority_vote"},
    {"function": "map", "mapping_dict": {"x": "X", "(A)": "A"}, "default_value": "other"},
    {"function": "map", "mapping_dict": {"x": 1, "b": None, "a": (0, 1)}},
    {"function": "regex", "regex_pattern": r"(\w)", "fallback": "?"},
]


def _lm_eval(steps: list[dict[str, Any]], resps: list[Any], docs: list[dict[str, Any]]) -> Any:
    import lm_eval.filters  # noqa: F401  (registers the filters)
    from lm_eval.api.registry import get_filter

    out: Any = resps
    for st in steps:
        kw = {k: v for k, v in st.items() if k != "function"}
        out = list(get_filter(st["function"])(**kw).apply(out, docs))
    return out


def _ours(steps: list[dict[str, Any]], resps: Any, docs: list[dict[str, Any]]) -> Any:
    return filters.apply_pipeline(filters.Pipeline("f", steps), resps, lambda: docs, "t", None).to_py()


def _outcome(fn: Any, *args: Any) -> tuple[str, Any]:
    try:
        return "ok", repr(fn(*args))
    except (ScoreError, IndexError, KeyError, TypeError, ValueError, AssertionError, AttributeError):
        return "error", None


def test_registry_holds_exactly_the_contracts_filters() -> None:
    assert set(filters.FILTERS) == set(scoring.FILTER_SPECS)
    assert all(f.name == name for name, f in filters.FILTERS.items())
    with pytest.raises(ValueError, match="registered twice"):
        filters.register_filter("regex")(lambda st, kw, ctx: st)


@pytest.mark.parametrize("seed", range(2))
def test_pipelines_equal_lm_evals_filters(seed: int) -> None:
    rnd = random.Random(seed)
    checked = 0
    for _ in range(80):
        n = rnd.randint(1, 4)
        k = rnd.choice([1, 2, 3])
        strings = rnd.random() < 0.6
        pool = TEXTS if strings else OBJECTS
        insts = [[rnd.choice(pool) for _ in range(k)] for _ in range(n)]
        docs = [{"choices": ["yes", "no"]} for _ in range(n)]
        steps = [rnd.choice(STRING_STEPS + ANY_STEPS if strings else ANY_STEPS) for _ in range(rnd.randint(1, 3))]
        want = _outcome(_lm_eval, steps, [list(x) for x in insts], docs)
        got = _outcome(_ours, steps, [list(x) for x in insts], docs)
        assert got == want, (steps, insts)
        if strings:  # the same responses as a polars column, as generate_until results arrive
            col = pl.Series(insts, dtype=pl.List(pl.String))
            assert _outcome(_ours, steps, col, docs) == want, (steps, insts)
        checked += want[0] == "ok"
    assert checked > 25  # most pipelines run (the others fail in both, e.g. take_first_k past the end)


def test_object_responses_keep_their_identity() -> None:
    """Equal objects of different types count as one vote (Counter's ==), each Instance keeps its own
    first-seen object, and take_first_k after take_first slices the value as lm-eval does."""
    got = _ours([{"function": "majority_vote"}], [[1.0, 1, True, 2], [True, 2, 2]], [])
    assert repr(got) == "[[1.0], [2]]"
    assert _ours([{"function": "take_first"}, {"function": "take_first_k", "k": 2}], [["abc"], ["de"]], []) == [
        "ab",
        "de",
    ]
    pairs = [[(-1.5, True)], [(-0.25, False)]]
    assert _ours([{"function": "take_first"}], pairs, []) == [(-1.5, True), (-0.25, False)]


def test_string_filter_on_objects_is_a_one_line_error() -> None:
    with pytest.raises(ScoreError, match=r"step 0 \(lowercase\): TypeError: lowercase needs string responses"):
        _ours([{"function": "lowercase"}], [[1, "a"]], [])


def test_user_custom_filter_runs_with_consent_only(tmp_path: Path) -> None:
    """A ``custom`` step with the user's ``filter_fn`` (``!function utils.add_answer``) in the middle of a
    pipeline, on the gsm8k golden's responses: it runs only under --trust-code, and the steps after it see
    what it returned (every response gains a trailing "#### 7": strict-match then finds the model's own
    answer where there was one, else 7)."""
    import hashlib

    from lmeval.scorer.score import score_run
    from tests.scorer.golden_io import build, load_golden

    src = tmp_path / "utils.py"
    src.write_text("def add_answer(resps, docs):\n    return [[r + ' #### 7' for r in inst] for inst in resps]\n")
    digest = hashlib.sha256(src.read_bytes()).hexdigest()
    ref = {"__function__": "utils.add_answer", "file": "utils.py", "sha256": digest, "files": {"utils.py": digest}}
    golden = load_golden("fake")
    strict = next(f for f in golden["tasks"]["gsm8k"]["filter_list"] if f["name"] == "strict-match")
    custom = {"name": "custom-strict", "filter": [{"function": "custom", "filter_fn": ref}, *strict["filter"]]}
    _, rdir = build(golden, tmp_path / "run", ["gsm8k"], patch={"gsm8k": {"filter_list": [strict, custom]}})
    with pytest.raises(ScoreError, match="--trust-code"):
        score_run(str(rdir))
    score_run(str(rdir), trust_code=True, include_path=[tmp_path])
    samples = pl.read_parquet(rdir / "samples.parquet").sort("doc_id")
    plain = samples.filter(pl.col("filter") == "strict-match")["filtered"].to_list()
    got = samples.filter(pl.col("filter") == "custom-strict")["filtered"].to_list()
    assert got == ["7" if p == "[invalid]" else p for p in plain]
    assert "7" in got and any(p != "[invalid]" for p in plain)
    em_plain = samples.filter(pl.col("filter") == "strict-match")["exact_match"].to_list()
    em_got = samples.filter(pl.col("filter") == "custom-strict")["exact_match"].to_list()
    assert [a for a, p in zip(em_got, plain, strict=True) if p != "[invalid]"] == [
        b for b, p in zip(em_plain, plain, strict=True) if p != "[invalid]"
    ]


def test_the_old_registry_name_still_works_with_a_deprecation_warning() -> None:
    """``lmeval.scorer.filters.FILTER_REGISTRY`` (documented until 0.1.0) is ``FILTERS`` for one release."""
    with pytest.warns(DeprecationWarning, match="use lmeval.scorer.filters.FILTERS"):
        old = filters.FILTER_REGISTRY
    assert old is filters.FILTERS
