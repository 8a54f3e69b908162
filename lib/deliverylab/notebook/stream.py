"""A producer run in a background thread, so the fault buttons stay live while it sends
(chapters 01-04 press them during a stream; papermill presses them on a schedule)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import LabError, bad_value
from ..schedule import Schedule
from ..workload import ProduceReport, ProducerWorkload
from .progress import progress
from .widgets import FaultPanel


class Stream:
    """A :class:`~deliverylab.workload.ProducerWorkload` run in a background thread.

    Why a thread: a notebook processes button clicks only while no cell is running, so
    a cell that produced in the foreground would make the buttons dead until it ended.
    :meth:`start` returns at once (a progress bar fills as values are sent); press the
    panel's buttons meanwhile; :meth:`wait` (in a later cell) joins it.

    ``faults`` (the papermill schedule, see :meth:`~deliverylab.schedule.Schedule.spread`)
    presses the panel's buttons from a second thread at the planned counts, through the
    one :class:`~deliverylab.schedule.Schedule`: ``panel.press(name)``, exactly what a
    click does.
    """

    def __init__(self, workload: ProducerWorkload, count: int, *,
                 panel: FaultPanel | None = None,
                 faults: Iterable[str | Mapping[str, Any]] = (), start_seq: int = 0,
                 description: str = "producing") -> None:
        if not isinstance(count, int) or count < 1:
            raise bad_value("count", count, "a whole number >= 1")
        self.workload = workload
        self.count = count
        self.panel = panel
        self.schedule = Schedule.spread(faults, count)
        if self.schedule.steps and panel is None:
            raise bad_value("panel", panel, "a FaultPanel to press the scheduled faults on")
        for step in self.schedule:
            panel.spec(step.fault)  # an unknown button fails now, not halfway through
        self.start_seq = start_seq
        self.description = description
        self.sent = 0
        self.report: ProduceReport | None = None
        self.presses: list[Any] = []
        self.errors: list[BaseException] = []
        self._bar: Any = None
        self._threads: list[threading.Thread] = []
        self._done = threading.Event()
        self._progress = threading.Condition()

    def start(self) -> Stream:
        self._bar = progress(self.count, self.description)
        self._threads = [threading.Thread(target=self._produce, name="stream", daemon=True)]
        if self.schedule.steps:
            self.schedule.start(self.panel)
            self._threads.append(threading.Thread(target=self._press, name="stream-faults",
                                                  daemon=True))
        for thread in self._threads:
            thread.start()
        if self.schedule.steps:
            planned = ", ".join(f"{s.fault!r} after {s.trigger.count}" for s in self.schedule)
            print(f"scheduled presses: {planned}", flush=True)
        return self

    @property
    def running(self) -> bool:
        return any(t.is_alive() for t in self._threads)

    def _on_sent(self, n: int) -> None:
        with self._progress:
            self.sent = n
            self._progress.notify_all()
        self._bar(n)

    def _produce(self) -> None:
        try:
            self.report = self.workload.run(self.count, start_seq=self.start_seq,
                                            on_sent=self._on_sent)
        except BaseException as exc:  # surfaced by wait()
            self.errors.append(exc)
        finally:
            self._done.set()
            with self._progress:
                self._progress.notify_all()

    def _press(self) -> None:
        try:
            for step in self.schedule.steps:
                with self._progress:
                    self._progress.wait_for(
                        lambda s=step.trigger.count: self.sent >= s or self._done.is_set())
                self.schedule.tick(max(self.sent, step.trigger.count))
        except BaseException as exc:  # surfaced by wait()
            self.errors.append(exc)
        self.presses = list(self.panel.presses)

    def wait(self, timeout: float = 300.0) -> ProduceReport:
        """Join the stream (and its scheduled presses); re-raise what went wrong there."""
        end = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, end - time.monotonic()))
        if self.running:
            raise LabError(f"the stream of {self.count} values did not finish within "
                           f"{timeout:.0f} s (sent {self.sent}); is a broker still paused? "
                           "press Heal")
        note = ""
        if self.report is not None:
            r = self.report
            note = f"{r.acked} acked, {r.unknown} unknown, {r.failed} failed"
        self._bar.close(note)
        for press in self.presses:
            print(press.line(), flush=True)
        if self.errors:
            raise self.errors[0]
        return self.report
