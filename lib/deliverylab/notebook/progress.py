"""Progress on long work: a bar in a live notebook, plain text lines everywhere else.

:func:`progress` and :func:`busy` show how long work is going: an ipywidgets bar in a
live notebook, plain text lines elsewhere (papermill's stored output, a terminal,
pytest). In both cases the last line is printed text, so a saved notebook says how it
went even where widgets do not render.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import ipywidgets as W

from ..errors import bad_value

# --- progress --------------------------------------------------------------------------

PROGRESS_ENV = "DELIVERYLAB_PROGRESS"


class _Live:
    """One output that a widget occupies while work runs and a text line replaces.

    Why replace rather than print after: the widget needs a frontend to be seen, and
    papermill, nbconvert exports and a reopened notebook have none, so the line that
    stays in the notebook must be text; replacing the display (``update_display_data``,
    which JupyterLab and papermill's client both apply) leaves exactly one line, not a
    dead widget plus a duplicate.
    """

    def __init__(self, widget: W.Widget, text: str) -> None:
        from IPython.display import display

        self.widget = widget
        data = widget._repr_mimebundle_() or {}
        data["text/plain"] = text
        self.handle = display(data, raw=True, display_id=True)

    def finish(self, text: str) -> None:
        self.handle.update({"text/plain": text}, raw=True)
        for child in getattr(self.widget, "children", ()):
            child.close()
        self.widget.close()


def _widget_mode() -> bool:
    """Widgets in a Jupyter kernel, text elsewhere; ``DELIVERYLAB_PROGRESS=text`` forces text.

    A kernel cannot tell whether anyone renders its widgets (papermill does not), which
    is why the widget is replaced by a text line when the work ends.
    """
    if os.environ.get(PROGRESS_ENV, "").lower() == "text":
        return False
    shell = sys.modules.get("IPython")
    if shell is None:
        return False
    try:
        ip = shell.get_ipython()
    except Exception:
        return False
    return ip is not None and type(ip).__name__ == "ZMQInteractiveShell"


@dataclass
class Progress:
    """A counted progress bar: ``bar(n)`` sets the count, so it fits ``on_sent=bar``.

    Widget mode updates a bar at most every ``min_interval`` s (a comm message per
    value would slow the producer it measures); text mode prints at every quarter.
    :meth:`close` leaves one summary line either way.
    """

    total: int
    description: str = ""
    min_interval: float = 0.2
    widget: bool | None = None
    value: int = 0
    _t0: float = field(default_factory=time.monotonic, repr=False)
    _shown_at: float = field(default=0.0, repr=False)
    _quarter: int = field(default=0, repr=False)
    _bar: Any = field(default=None, repr=False)
    _label: Any = field(default=None, repr=False)
    _live: _Live | None = field(default=None, repr=False)
    _closed: bool = field(default=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.total, int) or self.total < 0:
            raise bad_value("total", self.total, "a whole number >= 0")
        if self.widget is None:
            self.widget = _widget_mode()
        if self.widget:
            self._bar = W.IntProgress(value=0, min=0, max=max(self.total, 1),
                                      layout=W.Layout(width="40%"))
            self._label = W.Label(f"0/{self.total}")
            self._live = _Live(W.HBox([W.Label(self.description), self._bar, self._label]),
                               f"{self.description}: 0/{self.total}")

    def __call__(self, n: int) -> None:
        self.update_to(n)

    def update(self, step: int = 1) -> None:
        self.update_to(self.value + step)

    def update_to(self, n: int) -> None:
        self.value = n
        if self._closed:
            return
        now = time.monotonic()
        if self.widget:
            if n >= self.total or now - self._shown_at >= self.min_interval:
                self._shown_at = now
                self._bar.value = min(n, self._bar.max)
                self._label.value = f"{n}/{self.total} ({now - self._t0:.1f} s)"
        elif self.total:
            quarter = min(4, 4 * n // self.total)
            if quarter > self._quarter and quarter < 4:
                self._quarter = quarter
                print(f"{self.description}: {n}/{self.total} ({now - self._t0:.1f} s)",
                      flush=True)

    def close(self, note: str = "") -> None:
        """Finish (once): the bar gives way to ``description: n/total in s``."""
        if self._closed:
            return
        self._closed = True
        seconds = time.monotonic() - self._t0
        extra = f" -- {note}" if note else ""
        line = f"{self.description}: {self.value}/{self.total} in {seconds:.1f} s{extra}"
        if self._live is not None:
            self._live.finish(line)
        else:
            print(line, flush=True)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def progress(total: int, description: str = "", **kwargs: Any) -> Progress:
    """A :class:`Progress` for ``total`` steps: ``with progress(200, "producing") as bar:
    workload.run(200, on_sent=bar)``."""
    return Progress(total, description, **kwargs)


class busy:  # noqa: N801 -- used like a function: ``with busy("starting 3 brokers"):``
    """Elapsed-time indicator for work that cannot report steps (a cluster start, a
    Spark session, a wait for a new leader): a bar with a running clock in a notebook,
    a start line as text; either way one ``description: done in N s`` line remains.

    The clock is a daemon thread that lives only inside the ``with`` block.
    """

    def __init__(self, description: str, widget: bool | None = None,
                 interval: float = 0.5) -> None:
        self.description = description
        self.widget = _widget_mode() if widget is None else widget
        self.interval = interval
        self.seconds = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._label: Any = None
        self._live: _Live | None = None

    def __enter__(self) -> busy:
        self._t0 = time.monotonic()
        if self.widget:
            bar = W.IntProgress(value=1, min=0, max=1, bar_style="info",
                                layout=W.Layout(width="20%"))
            self._label = W.Label(f"{self.description}...")
            self._live = _Live(W.HBox([bar, self._label]), f"{self.description}...")
            self._thread = threading.Thread(target=self._tick, name="busy-clock",
                                            daemon=True)
            self._thread.start()
        else:
            print(f"{self.description}...", flush=True)
        return self

    def _tick(self) -> None:
        while not self._stop.wait(self.interval):
            self._label.value = f"{self.description}... {time.monotonic() - self._t0:.0f} s"

    def __exit__(self, exc_type: type | None, exc: BaseException | None, tb: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        self.seconds = time.monotonic() - self._t0
        outcome = "done" if exc is None else f"failed ({type(exc).__name__})"
        line = f"{self.description}: {outcome} in {self.seconds:.1f} s"
        if self._live is not None:
            self._live.finish(line)
        else:
            print(line, flush=True)


__all__ = ["Progress", "busy", "progress"]
