"""``lmeval export``: a scored run written in the formats other tools read.

- ``lm-eval-samples``: lm-eval 0.4.13's ``--log_samples`` files (``lm_eval_samples.py`` says what differs).
- ``lm-eval-0.5-samples``: lm-eval 0.5's sample logs (``lm_eval_05_samples.py``: ``scores_per_repeat``, the
  scorer's pipeline as ``filter``, the Instance's ``target``).
- ``hf-eval-results``: Hugging Face Hub ``.eval_results/<task>.yaml`` for a model repo (``hf_eval_results.py``).
- ``eee``: Every Eval Ever aggregate and instance-level files (``eee.py``; schemas in ``eee_schemas/``).
"""

from __future__ import annotations

from pathlib import Path

from lmeval.common import face_names
from lmeval.report.errors import ReportError
from lmeval.report.export.eee import write_eee
from lmeval.report.export.hf_eval_results import write_hf_eval_results
from lmeval.report.export.inputs import ExportRun as ExportRun
from lmeval.report.export.inputs import load_export_run as load_export_run
from lmeval.report.export.lm_eval_05_samples import write_lm_eval_05_samples
from lmeval.report.export.lm_eval_samples import write_lm_eval_samples

__all__ = face_names(__name__)


FORMATS = ("lm-eval-samples", "lm-eval-0.5-samples", "eee", "hf-eval-results")


def export(results_dir: str, fmt: str, out_dir: str, plan: str | None = None) -> list[Path]:
    """Write ``results_dir`` (a scored run) as ``fmt`` into ``out_dir``; the files written."""
    if fmt not in FORMATS:
        raise ReportError(f"unknown export format {fmt!r} (one of: {', '.join(FORMATS)})")
    run = load_export_run(results_dir, plan)
    if fmt == "eee":
        return write_eee(run, Path(out_dir))
    if fmt == "lm-eval-0.5-samples":
        return write_lm_eval_05_samples(run, Path(out_dir))
    if fmt == "hf-eval-results":
        written, skipped = write_hf_eval_results(run, Path(out_dir))
        if not written:
            raise ReportError(f"{results_dir}: no task has a Hub dataset to attach results to ({', '.join(skipped)})")
        return written
    return write_lm_eval_samples(run, Path(out_dir))
