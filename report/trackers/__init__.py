"""``lmeval log RESULTS --to wandb|trackio|mlflow`` and ``lmeval score ... --log-to ...``: a scored run logged to
experiment trackers through their own libraries, offline by default (the stores under ``RESULTS/trackers``).

Each tracker gets the same ``Payload`` (``payload.py``): the provenance as config, the results table, the
per-task metrics (``arc_easy/acc,none``) and the samples as a table. A tracker's library is imported only here,
when it is asked for; one that is not installed is one line naming the pip install. Trackers write only into
their own stores: a tracker failing part way leaves the scored run as it was (and is one line, exit 2).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from lmeval.common import face_names
from lmeval.report.errors import ReportError
from lmeval.report.trackers.payload import Payload as Payload
from lmeval.report.trackers.payload import load_payload as load_payload

__all__ = face_names(__name__)


# tracker -> (module, function) logging a Payload to it: the registry, imported lazily (``_sink``)
SINKS: dict[str, tuple[str, str]] = {
    "wandb": ("lmeval.report.trackers.wandb_sink", "log_wandb"),
    "trackio": ("lmeval.report.trackers.trackio_sink", "log_trackio"),
    "mlflow": ("lmeval.report.trackers.mlflow_sink", "log_mlflow"),
}
TRACKERS = tuple(SINKS)
DEFAULT_PROJECT = "lmeval"
STORE_DIR = "trackers"  # RESULTS/trackers/<tracker>: where the offline stores go by default


def parse_trackers(values: Iterable[str]) -> list[str]:
    """``--log-to`` values (repeatable, or comma lists) -> tracker names, each once, in the order given."""
    names: list[str] = []
    for value in values:
        for name in (x.strip().lower() for x in value.split(",")):
            if not name:
                continue
            if name not in TRACKERS:
                raise ReportError(f"unknown tracker {name!r} (one of: {', '.join(TRACKERS)})")
            if name not in names:
                names.append(name)
    return names


def require(names: Iterable[str]) -> None:
    """Find each tracker's library (not imported: trackio reads its store folder at import); ``ReportError``
    naming the pip install for the first one missing."""
    for name in names:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            raise ReportError(f"{name}: the {name} library is not installed (pip install 'lmeval[{name}]')") from None


@dataclass
class LogTarget:
    """Where trackers log: ``project`` (W&B/Trackio project, MLflow experiment), the run's ``name`` (None: the
    results directory's name and plan hash) and ``store`` (None: ``RESULTS/trackers``), under which each
    tracker's offline store is ``<store>/<tracker>``."""

    project: str = DEFAULT_PROJECT
    name: str | None = None
    store: str | None = None


def _sink(name: str) -> Callable[[Payload, Path, str, str], str]:
    """The tracker's sink (``SINKS``), its module imported only now."""
    module, func = SINKS[name]
    return getattr(importlib.import_module(module), func)  # type: ignore[no-any-return]


def log_run(results_dir: str, names: list[str], target: LogTarget | None = None) -> list[str]:
    """Log the scored run ``results_dir`` to each tracker of ``names``; one line per tracker saying where it went.
    Every tracker is tried; ``ReportError`` after the last when any failed (the scored run is untouched)."""
    target = target or LogTarget()
    require(names)
    payload = load_payload(results_dir)
    base = Path(target.store) if target.store else Path(results_dir) / STORE_DIR
    done, failed = [], []
    for name in names:
        try:
            with contextlib.redirect_stdout(sys.stderr):  # the libraries' chatter; stdout is lmeval's
                where = _sink(name)(payload, base / name, target.project, target.name or payload.name)
        except Exception as e:  # noqa: BLE001 -- whatever a tracker's library raises, the run stays as it is
            msg = " ".join(str(e).split())[:300]
            failed.append(f"{name}: {type(e).__name__}: {msg}")
            continue
        done.append(f"{name}: {where}")
    if failed:
        raise ReportError(
            f"logging {results_dir} failed ({'; '.join(failed)}); the scored run is unchanged; "
            f"retry with `lmeval log {results_dir} --to {','.join(n.split(':')[0] for n in failed)}`"
            + (f"; logged: {'; '.join(done)}" if done else "")
        )
    return done
