"""Report: scored results directories -> one self-contained HTML page (provenance, results and charts,
comparison with a baseline, sample browser, plan diff, diagnostics). A tool built on the contract: it reads
results directories and plans (``plans/``) and reuses the scorer's comparison; no stage imports it."""

from lmeval.common import face_names
from lmeval.report.build import build_report as build_report
from lmeval.report.build import write_report as write_report
from lmeval.report.errors import ReportError as ReportError
from lmeval.report.export import export as export_results  # noqa: F401 (a renamed export, read by lazyface)
from lmeval.report.trackers import LogTarget as LogTarget
from lmeval.report.trackers import log_run as log_run
from lmeval.report.trackers import parse_trackers as parse_trackers
from lmeval.report.trackers import require as require

__all__ = face_names(__name__)
