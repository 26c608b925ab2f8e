"""Report: scored results directories -> one self-contained HTML page (provenance, results and charts,
comparison with a baseline, sample browser, plan diff, diagnostics). A tool built on the contract: it reads
results directories and plans (``plans/``) and reuses the scorer's comparison; no stage imports it."""

from lmeval.report.build import build_report, write_report
from lmeval.report.errors import ReportError
from lmeval.report.export import export as export_results
from lmeval.report.trackers import LogTarget, log_run, parse_trackers, require

__all__ = [
    "LogTarget",
    "ReportError",
    "build_report",
    "export_results",
    "log_run",
    "parse_trackers",
    "require",
    "write_report",
]
