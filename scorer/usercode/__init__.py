"""User code: the scoring hooks a plan references (``!function`` filters, metrics, aggregations,
``process_results``), the consent that lets them run (``Trust``, from ``--trust-code``), the check ``lmeval run``
makes before a model runs (``check_user_code``), and lmeval's own built-in hooks for code tasks
(``builtin_hooks``: sandboxed pass@k, the humaneval/mbpp prediction builders)."""

from collections.abc import Callable
from typing import Any

from lmeval.scorer.usercode.consent import check_user_code
from lmeval.scorer.usercode.refs import Located, Trust, is_ref, load_ref, locate_ref, ref_name

__all__ = ["Located", "Trust", "builtin_hooks", "check_user_code", "is_ref", "load_ref", "locate_ref", "ref_name"]


def builtin_hooks() -> dict[str, Callable[..., Any]]:
    """lmeval's built-in hooks by name (``!function lmeval_builtin.NAME``), imported on first use."""
    from lmeval.scorer.usercode.hooks import HOOKS

    return HOOKS
