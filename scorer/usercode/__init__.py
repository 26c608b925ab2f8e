"""User code: the scoring hooks a plan references (``!function`` filters, metrics, aggregations,
``process_results``), the consent that lets them run (``Trust``, from ``--trust-code``), the check ``lmeval run``
makes before a model runs (``check_user_code``), the global random state lm-eval gives that code
(``lm_eval_random``, ``task_loaded``), and lmeval's own built-in hooks for code tasks
(``builtin_hooks``: sandboxed pass@k, the humaneval/mbpp prediction builders)."""

from collections.abc import Callable
from typing import Any

from lmeval.scorer.usercode.consent import check_user_code as check_user_code
from lmeval.scorer.usercode.globalrandom import lm_eval_random as lm_eval_random
from lmeval.scorer.usercode.globalrandom import task_loaded as task_loaded
from lmeval.scorer.usercode.refs import Located as Located
from lmeval.scorer.usercode.refs import Trust as Trust
from lmeval.scorer.usercode.refs import is_ref as is_ref
from lmeval.scorer.usercode.refs import load_ref as load_ref
from lmeval.scorer.usercode.refs import locate_ref as locate_ref
from lmeval.scorer.usercode.refs import ref_name as ref_name


def builtin_hooks() -> dict[str, Callable[..., Any]]:
    """lmeval's built-in hooks by name (``!function lmeval_builtin.NAME``), imported on first use."""
    from lmeval.scorer.usercode.hooks import HOOKS

    return HOOKS
