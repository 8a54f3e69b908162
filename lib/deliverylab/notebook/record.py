"""What a failure-button panel showed after each press, written down in headless runs.

A headless run presses the buttons, but nobody renders the widgets, and a widget does
not survive as HTML (its state is gone once the panel closes). So each
:class:`~deliverylab.notebook.widgets.FaultPanel` appends, where
``$DELIVERYLAB_PANEL_RECORD`` points (``make course`` sets it per chapter), one JSON
line when it is shown and one after every press, through
:class:`~deliverylab.history.JsonLines` (the one writer of such lines): the press line,
the status line after it and the History's last operations. The course book
(:mod:`deliverylab.classroom.course.book`) renders each panel from these lines. In a live
notebook the variable is unset and nothing is written.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Protocol

from ..errors import LabError
from ..history import History, JsonLines


class Panel(Protocol):
    """What a record reads of a ``widgets.FaultPanel``, named here because the panel
    imports this module (it records itself), not the other way round."""

    @property
    def model_id(self) -> str: ...
    @property
    def title_text(self) -> str: ...
    @property
    def specs(self) -> Mapping[str, Any]: ...
    @property
    def absent(self) -> Mapping[str, str]: ...
    @property
    def status_text(self) -> str: ...
    @property
    def status(self) -> Any: ...  # a widget with the status as HTML in ``value``
    @property
    def current_history(self) -> History | None: ...


class PanelPress(Protocol):
    """What a record reads of a ``widgets.Press``."""

    @property
    def label(self) -> str: ...
    @property
    def seconds(self) -> float: ...
    @property
    def ok(self) -> bool: ...
    def line(self) -> str: ...

#: Environment variable naming a JSON-lines file where every panel of the process
#: records itself and, after each press, what it then showed (headless runs: see
#: :func:`record_panel`). Unset in a live notebook: nothing is written.
RECORD_ENV = "DELIVERYLAB_PANEL_RECORD"

#: History operations shown after a press in the recorded excerpt.
EXCERPT_OPS = 6


def op_line(op: Any) -> str:
    """One History operation as a line of the recorded excerpt."""
    where = ""
    if op.topic is not None:
        where = f" {op.topic}"
        if op.partition is not None:
            where += f"/{op.partition}"
            if op.offset is not None:
                where += f"@{op.offset}"
    values = ",".join(op.values[:3]) + ("..." if len(op.values) > 3 else "")
    name = op.fault or op.kind
    tail = f" {op.error}" if op.error else (f" {op.detail}" if op.detail else "")
    return (f"{op.time:8.2f}s {op.process} {name} {op.outcome}"
            f"{' ' + values if values else ''}{where}{tail}")[:200]


def history_excerpt(history: History | None, count: int = EXCERPT_OPS) -> list[str]:
    """The last ``count`` operations of ``history``, one line each."""
    if history is None:
        return []
    ops = history.snapshot()
    return [op_line(op) for op in ops[-count:]]


def record_panel(panel: Panel, event: str, press: PanelPress | None = None) -> None:
    """Append what ``panel`` shows now to the file ``$DELIVERYLAB_PANEL_RECORD`` names.

    Why: a headless run presses the buttons, but nobody renders the widgets, and a
    widget does not survive as HTML (its state is gone once the panel closes). The
    course book (:mod:`deliverylab.classroom.course.book`) renders each recorded press
    from this file:
    the press line, the status line after it and the History's last operations.
    Keyed by the widget's model id, which the notebook's output of the panel names.
    A record that cannot be written must not break the press: it is skipped."""
    path = os.environ.get(RECORD_ENV)
    if not path:
        return
    entry: dict[str, Any] = {
        "event": event, "model_id": panel.model_id,
        "title": panel.title_text, "buttons": list(panel.specs),
        "absent": dict(panel.absent), "status": panel.status_text,
        "status_html": panel.status.value,
        "history": history_excerpt(panel.current_history)}
    if press is not None:
        entry.update(label=press.label, line=press.line(), ok=press.ok,
                     seconds=round(press.seconds, 3))
    try:
        JsonLines(path).append(entry)
    except (OSError, LabError):
        pass
