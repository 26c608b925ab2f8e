"""A rich progress bar on the terminal: Instances done of total, Instances and tokens per second, ETA. Silent
when disabled or when the stream is not a terminal."""

from __future__ import annotations

import sys
import time
from typing import Any


class _TokensPerSecond:
    """A rich column rendering the task's ``tokens`` field per elapsed second."""

    def __new__(cls) -> Any:
        from rich.progress import ProgressColumn
        from rich.text import Text

        class Column(ProgressColumn):
            def render(self, task: Any) -> Text:
                elapsed = task.elapsed or 0.0
                tokens = task.fields.get("tokens", 0)
                rate = tokens / elapsed if elapsed > 0 else 0.0
                return Text(f"{rate:,.0f} tok/s", style="progress.data.speed")

        return Column()


class _InstancesPerSecond:
    """A rich column rendering Instances finished per second (rich's running estimate)."""

    def __new__(cls) -> Any:
        from rich.progress import ProgressColumn
        from rich.text import Text

        class Column(ProgressColumn):
            def render(self, task: Any) -> Text:
                elapsed = task.elapsed or 0.0
                done = task.completed - task.fields.get("start", 0)
                speed = done / elapsed if elapsed > 0 else 0.0
                return Text(f"{speed:,.1f} inst/s", style="progress.data.speed")

        return Column()


class Progress:
    def __init__(self, enabled: bool, total: int, done: int, description: str = "execute", stream: Any = None) -> None:
        self._bar: Any = None
        self._task: Any = None
        self._tokens = 0
        self.started = time.monotonic()
        stream = stream if stream is not None else sys.stderr
        if not (enabled and stream.isatty()):
            return
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn
        from rich.progress import Progress as RichProgress

        self._bar = RichProgress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            _InstancesPerSecond(),
            _TokensPerSecond(),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            console=Console(file=stream),
            transient=False,
            # rich would otherwise swap sys.stdout/sys.stderr for proxies printing above the bar: vLLM's
            # logging, set up while the bar runs, would then write to the terminal instead of engine.log
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self._bar.start()
        self._task = self._bar.add_task(description, total=total, completed=done, tokens=0, start=done)

    def phase(self, description: str) -> None:
        if self._bar is not None:
            self._bar.update(self._task, description=description)

    def advance(self, instances: int, tokens: int) -> None:
        self._tokens += tokens
        if self._bar is not None:
            self._bar.update(self._task, advance=instances, tokens=self._tokens)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
