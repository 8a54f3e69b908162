"""Failure buttons for the chapters: a panel of buttons, a live status line, a log.

:class:`FaultPanel` is a row of buttons, a live status line and a log of what each press
did. It knows nothing about particular faults: a chapter hands it the cluster, a
nemesis (any object whose methods inject faults) and a list of :class:`FaultSpec` --
label, nemesis method name, keyword arguments. Why generic: the design rule is that *a
button and a papermill schedule call the very same function*. A click calls
:meth:`FaultPanel.press`, and so does a headless run's ``for f in faults:
panel.press(f)``; the panel adds no fault logic of its own that a schedule could miss.

Arguments that are only known at press time (which broker leads partition 0 *now*?)
are given as a callable, evaluated when the button is pressed: :func:`current_leader`
builds the common one.

Buttons that inject faults are named by their key in
:data:`deliverylab.faults.FAULTS` (the registry gives the label and the help), so a
click, the papermill ``faults`` schedule and the tests all use one name;
:func:`fault_buttons` builds the common sets. Buttons that are not faults (the
transaction console's Begin / Commit...) are plain actions with a callable.
"""

from __future__ import annotations

import atexit
import html
import inspect
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import ipywidgets as W

from ..cluster.quorum import with_quorum
from ..errors import bad_value
from ..faults import FAULTS
from ..history import History
from ..nemesis import CLUSTER_FAULTS
from .record import record_panel

#: Button colours ipywidgets knows (``button_style``).
BUTTON_STYLES = ("primary", "success", "info", "warning", "danger", "")

#: States a node can be in, as :meth:`Cluster.status` reports them, with their colour.
STATE_COLORS = {"up": "#009E73", "paused": "#E69F00", "dead": "#D55E00",
                "stopped": "#777777"}

#: How many log lines the output area shows (``FaultPanel.lines`` keeps them all).
LOG_LINES = 30

KwargsSource = Mapping[str, Any] | Callable[..., Mapping[str, Any]] | None

_PANELS: weakref.WeakSet[FaultPanel] = weakref.WeakSet()


# --- fault specs -----------------------------------------------------------------------


@dataclass(frozen=True)
class FaultSpec:
    """One button: what it says, which nemesis method it calls, with which arguments.

    Args:
        label: the button's text, also the name :meth:`FaultPanel.press` accepts.
        method: name of the nemesis method to call (``"kill_leader"``), or a callable
            (for a one-off action that is not a nemesis fault).
        kwargs: keyword arguments, or a callable returning them *at press time* (it may
            take no argument, or the panel: ``lambda panel: {"node": ...}``).
        help: tooltip: one sentence on what the fault does to the cluster.
        style: ipywidgets ``button_style`` (``"danger"``, ``"warning"``, ``"success"``...).
    """

    label: str
    method: str | Callable[..., Any]
    kwargs: KwargsSource = None
    help: str = ""
    style: str = "warning"

    def __post_init__(self) -> None:
        if not isinstance(self.label, str) or not self.label.strip():
            raise bad_value("label", self.label, "a non-empty button label")
        if not (isinstance(self.method, str) and self.method) and not callable(self.method):
            raise bad_value("method", self.method, "a nemesis method name or a callable")
        if self.style not in BUTTON_STYLES:
            raise bad_value("style", self.style, "one of " + ", ".join(map(repr, BUTTON_STYLES)))
        if self.kwargs is not None and not (isinstance(self.kwargs, Mapping)
                                            or callable(self.kwargs)):
            raise bad_value("kwargs", self.kwargs,
                            "None, a dict, or a callable returning a dict at press time")

    @property
    def method_name(self) -> str:
        return self.method if isinstance(self.method, str) else getattr(
            self.method, "__name__", "action")

    @classmethod
    def fault(cls, name: str, kwargs: KwargsSource = None, style: str | None = None,
              ) -> FaultSpec:
        """The button for registry fault ``name``: its label and help come from
        :data:`~deliverylab.faults.FAULTS`, so every chapter names it alike."""
        if name not in CLUSTER_FAULTS:
            raise bad_value("fault", name, "a cluster fault of the registry: "
                            + ", ".join(CLUSTER_FAULTS))
        entry = FAULTS[name]
        default = {"heal": "success", "kill_leader": "danger", "kill_broker": "danger",
                   "isolate_leader": "danger"}.get(name, "warning")
        return cls(entry.label, name, kwargs, entry.help, style or default)

    @classmethod
    def of(cls, spec: FaultSpec | tuple | Mapping[str, Any] | str) -> FaultSpec:
        """Accept the short forms a chapter writes: ``("Kill leader", "kill_leader")``,
        ``("Pause broker 2", "pause_broker", {"node": 2})``, a dict, or a bare method
        name (its label is made from the name)."""
        if isinstance(spec, FaultSpec):
            return spec
        if isinstance(spec, str):
            return cls.fault(spec)
        if isinstance(spec, Mapping):
            return cls(**spec)
        if isinstance(spec, tuple) and 2 <= len(spec) <= 5:
            return cls(*spec)
        raise bad_value("fault", spec, "a FaultSpec, (label, method[, kwargs]), a dict "
                        "or a nemesis method name")


def fault_buttons(*names: str, topic: str | None = None,
                  partition: int = 0) -> list[FaultSpec]:
    """Buttons for registry faults; those that take a topic get ``topic``/``partition``.

    ``fault_buttons("lose_ack", "heal", topic=t)`` is chapter 02's and 03's panel;
    ``fault_buttons("pause_followers", "kill_leader", "heal", topic=t)`` chapter 01's.
    """
    from ..nemesis import Nemesis

    specs = []
    for name in names:
        FaultSpec.fault(name)  # an unknown name fails here, before the signature lookup
        params = inspect.signature(getattr(Nemesis, name)).parameters
        kwargs = ({"topic": topic, "partition": partition}
                  if topic is not None and "topic" in params else None)
        specs.append(FaultSpec.fault(name, kwargs))
    return specs


def current_leader(topic: str, partition: int = 0, key: str = "node",
                   **extra: Any) -> Callable[[FaultPanel], dict[str, Any]]:
    """Kwargs factory: ``{key: <leader of topic/partition at press time>, **extra}``.

    Why at press time: leadership moves when a broker dies, so a button built with
    "the leader" as a constant would hit the wrong broker from the second press on.
    """

    def kwargs(panel: FaultPanel) -> dict[str, Any]:
        return {key: panel.cluster.leader(topic, partition), **extra}

    kwargs.__name__ = f"leader_of_{topic}_{partition}"
    return kwargs


# --- presses ---------------------------------------------------------------------------


@dataclass
class Press:
    """What one press did: the panel's log line is made from this.

    ``result`` is whatever the nemesis method returned (e.g. a FaultRecord);
    ``error`` the exception it raised (kept whole for debugging, shown as one line).
    """

    label: str
    method: str
    kwargs: dict[str, Any]
    wall_time: float
    seconds: float = 0.0
    result: Any = None
    error: BaseException | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def clock(self) -> str:
        return time.strftime("%H:%M:%S", time.localtime(self.wall_time))

    def line(self) -> str:
        """One readable line: when, which button, and what happened (or why not)."""
        if self.error is not None:
            return f"[{self.clock}] {self.label}: FAILED -- {one_line(self.error)}"
        return f"[{self.clock}] {self.label}: {describe(self.result)} ({self.seconds:.1f} s)"

    def __str__(self) -> str:
        return self.line()


def one_line(error: BaseException) -> str:
    """An exception as one line: its type and the first line of its message.

    Why: a fault that fails in class (the broker is already dead, the proxy is off)
    must say so in words a student can act on, not bury the panel under a traceback;
    the lab's errors put the actionable part first and log tails after a newline.
    """
    text = str(error).strip().splitlines()
    first = text[0] if text else ""
    name = type(error).__name__
    line = f"{name}: {first}" if first else name
    return line if len(line) <= 300 else line[:297] + "..."


def describe(result: Any) -> str:
    """A fault's return value in words: a FaultRecord's ``did``, else a ``description``
    or ``summary``, else ``str``."""
    if result is None:
        return "done"
    for attr in ("did", "description", "summary"):
        value = getattr(result, attr, None)
        if callable(value):
            try:
                value = value()
            except Exception:  # a broken summary must not hide that the fault ran
                value = None
        if isinstance(value, str) and value:
            return value
    return str(result)


# --- the panel -------------------------------------------------------------------------


class FaultPanel(W.VBox):
    """Buttons for a chapter's faults, a live status line and a log of presses.

    Args:
        cluster: the running cluster (needs ``status()``; ``admin()`` for leaders).
        nemesis: the object whose methods inject the faults (a ``Nemesis``); None for
            a panel of actions only (a console's buttons).
        faults: the buttons, as :class:`FaultSpec` or its short forms (see
            :meth:`FaultSpec.of`).
        topic: the chapter's topic: the status line shows its leader per partition and
            counts the History's sends to it.
        history: a History, or a callable returning the current one (chapters start a
            new History per run); ``panel.history = h`` switches later.
        auto_refresh: seconds between background status refreshes (None: refresh after
            each press and on :meth:`refresh` only). The thread stops when the panel is
            closed, when the cluster stops, and at interpreter exit.
        title: a heading above the buttons.

    ``panel.press("Kill leader")`` does exactly what clicking that button does; it also
    accepts the method name (``panel.press("kill_leader")``), which is how a papermill
    schedule of method names drives the same buttons.
    """

    def __init__(self, cluster: Any, nemesis: Any, faults: Iterable[Any], *,
                 topic: str | None = None,
                 history: History | Callable[[], History | None] | None = None,
                 auto_refresh: float | None = None, title: str | None = None,
                 metadata_timeout: float = 3.0) -> None:
        # First, so that close() (also called by Widget.__del__) works on a panel whose
        # construction failed below.
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        specs = [FaultSpec.of(f) for f in faults]
        if not specs:
            raise bad_value("faults", faults, "at least one fault spec")
        labels = [s.label for s in specs]
        if len(set(labels)) != len(labels):
            raise bad_value("faults", labels, "specs with distinct labels")
        for spec in specs:
            if isinstance(spec.method, str) and nemesis is None:
                raise bad_value("nemesis", nemesis, f"a Nemesis: button {spec.label!r} "
                                f"calls its {spec.method!r}")
            if isinstance(spec.method, str) and not callable(getattr(nemesis, spec.method,
                                                                      None)):
                raise bad_value("method", spec.method,
                                f"a method of {type(nemesis).__name__} (it has: "
                                f"{', '.join(_public_methods(nemesis)) or 'none'})")
        self.cluster = cluster
        self.nemesis = nemesis
        self.specs: dict[str, FaultSpec] = {s.label: s for s in specs}
        self.topic = topic
        self.history = history
        self.metadata_timeout = metadata_timeout
        self.presses: list[Press] = []
        self.lines: list[str] = []
        self.status_text = ""
        self._press_lock = threading.Lock()
        self._refresh_lock = threading.Lock()

        self.buttons: dict[str, W.Button] = {}
        #: Buttons this cluster cannot honour (a partition on local brokers), and why:
        #: shown greyed out with the reason, never pretending to work.
        self.absent: dict[str, str] = {}
        unavailable = getattr(nemesis, "unavailable", None)
        for spec in specs:
            why = (unavailable(spec.method) if callable(unavailable)
                   and spec.method in CLUSTER_FAULTS else None)
            button = W.Button(description=spec.label, tooltip=why or spec.help
                              or spec.method_name, button_style=spec.style,
                              disabled=bool(why),
                              layout=W.Layout(width="auto", min_width="9em"))
            button.add_class("dl-fault-button")
            button.on_click(lambda _b, label=spec.label: self.press(label))
            self.buttons[spec.label] = button
            if why:
                self.absent[spec.label] = why
                self.lines.append(f"{spec.label}: not on this cluster: {why}")
        self.refresh_button = W.Button(description="Refresh", icon="refresh",
                                       tooltip="read the cluster's state again",
                                       layout=W.Layout(width="auto"))
        self.refresh_button.add_class("dl-refresh-button")
        self.refresh_button.on_click(lambda _b: self.refresh())
        self.status = W.HTML()
        self.status.add_class("dl-status")
        self.output = W.HTML(value=_log_html(self.lines))
        self.output.add_class("dl-log")
        self.title_text = title or "Failure buttons"
        heading = W.HTML(f"<b>{html.escape(self.title_text)}</b>"
                         + (f" &middot; topic <code>{html.escape(topic)}</code>" if topic
                            else ""))
        row = W.HBox([*self.buttons.values(), self.refresh_button],
                     layout=W.Layout(flex_flow="row wrap"))
        super().__init__([heading, row, self.status, self.output],
                         layout=W.Layout(border="1px solid #ccc", padding="6px"))
        self.add_class("dl-fault-panel")
        _PANELS.add(self)
        self.refresh()
        record_panel(self, "shown")
        if auto_refresh:
            self.start_auto_refresh(auto_refresh)

    # ---------------------------------------------------------------- faults
    def spec(self, name: str) -> FaultSpec:
        """The spec for a button label or a nemesis method name."""
        if name in self.specs:
            return self.specs[name]
        by_method = [s for s in self.specs.values() if s.method_name == name]
        if len(by_method) == 1:
            return by_method[0]
        raise bad_value("fault", name, "a button label or method name of this panel: "
                        + ", ".join(repr(s) for s in self.specs))

    def press(self, name: str, raise_errors: bool = False) -> Press:
        """Do what clicking the button ``name`` does, and return what happened.

        The nemesis method runs in this thread; the buttons are disabled meanwhile (a
        double click must not kill two leaders). A failing fault is logged as one line
        and returned with ``error`` set; ``raise_errors=True`` re-raises it instead,
        which a headless schedule may prefer.
        """
        spec = self.spec(name)
        with self._press_lock:
            started = time.time()
            t0 = time.monotonic()
            press = Press(spec.label, spec.method_name, {}, started)
            self._set_busy(True, f"[{press.clock}] {spec.label}: running...")
            try:
                press.kwargs = self._kwargs(spec)
                press.result = self._call(spec, press.kwargs)
            except Exception as exc:  # shown as one line; the object is kept on the Press
                press.error = exc
            finally:
                press.seconds = time.monotonic() - t0
                self.presses.append(press)
                self.lines.append(press.line())
                self._set_busy(False)
        self.refresh()
        record_panel(self, "press", press)
        if press.error is not None and raise_errors:
            raise press.error
        return press

    def apply(self, name: str, **args: Any) -> Press:
        """Press button ``name`` for a :class:`~deliverylab.schedule.Schedule` (the
        headless schedule's door): exactly a click, errors raised."""
        if args:
            raise bad_value("arguments", args, "none: a button carries its own")
        return self.press(name, raise_errors=True)

    def now(self) -> float:
        """The History's clock (a Schedule's time triggers use it)."""
        history = self.current_history
        return history.now() if history is not None else time.monotonic()

    def _call(self, spec: FaultSpec, kwargs: dict[str, Any]) -> Any:
        """Call the fault through the nemesis' own door for named faults (``apply``,
        which a Schedule uses too, and which checks the arguments) when it has one;
        otherwise the method itself."""
        if not isinstance(spec.method, str):
            return spec.method(**kwargs)
        apply = getattr(self.nemesis, "apply", None)
        if callable(apply) and spec.method in CLUSTER_FAULTS:
            return apply(spec.method, **kwargs)
        return getattr(self.nemesis, spec.method)(**kwargs)

    def _kwargs(self, spec: FaultSpec) -> dict[str, Any]:
        source = spec.kwargs
        if source is None:
            return {}
        if callable(source):
            takes_panel = _positional_params(source) >= 1
            source = source(self) if takes_panel else source()
        if not isinstance(source, Mapping):
            raise bad_value("kwargs", source, f"a dict of arguments for {spec.method_name}")
        return dict(source)

    def _set_busy(self, busy: bool, line: str | None = None) -> None:
        for label, button in self.buttons.items():
            button.disabled = busy or label in self.absent
        lines = self.lines + ([line] if line else [])
        self.output.value = _log_html(lines)

    # ---------------------------------------------------------------- status
    @property
    def current_history(self) -> History | None:
        source = self.history
        return source() if callable(source) and not isinstance(source, History) else source

    def refresh(self) -> str:
        """Read the cluster's state now, update the status line and return its text.

        Safe from any thread; a refresh already under way in another thread is waited
        for rather than doubled.
        """
        with self._refresh_lock:
            brokers = _safe(self.cluster.status, {})
            running = any(state != "stopped" for state in brokers.values())
            leaders = self._leaders() if running and self.topic else None
            counts = _send_counts(self.current_history, self.topic)
            self.status_text = _status_text(brokers, running, self.topic, leaders, counts)
            self.status.value = _status_html(brokers, running, self.topic, leaders, counts)
            self.status_text, self.status.value = with_quorum(self.cluster, self.status_text,
                                                              self.status.value)
            return self.status_text

    def _leaders(self) -> dict[int, int] | str:
        """Partition -> leader from one metadata request (or why there is none)."""
        try:
            md = self.cluster.admin().list_topics(self.topic, timeout=self.metadata_timeout)
        except Exception as exc:
            # A KafkaException's KafkaError says it in words ("Failed to get metadata:
            # Local: Timed out"); its repr is a struct dump nobody reads in a status line.
            error = exc.args[0] if exc.args else None
            said = getattr(error, "str", None)
            return f"unknown ({said() if callable(said) else one_line(exc)})"
        meta = md.topics.get(self.topic)
        if meta is None or meta.error is not None:
            return "topic not created yet" if meta is None or meta.error.code() == 3 \
                else f"unknown ({meta.error.str()})"
        return {p: meta.partitions[p].leader for p in sorted(meta.partitions)}

    # ---------------------------------------------------------- auto refresh
    def start_auto_refresh(self, interval: float = 2.0) -> None:
        """Refresh the status every ``interval`` s in a daemon thread, until
        :meth:`close`, the cluster stopping, or interpreter exit."""
        if not interval or interval <= 0:
            raise bad_value("interval", interval, "a positive number of seconds")
        self.stop_auto_refresh()
        self._stop = threading.Event()
        stop = self._stop
        ref = weakref.ref(self)

        def loop() -> None:
            while not stop.wait(interval):
                panel = ref()
                if panel is None:
                    return
                text = panel.refresh()
                if "cluster stopped" in text:
                    return
                del panel

        self._thread = threading.Thread(target=loop, name="fault-panel-refresh", daemon=True)
        self._thread.start()

    def stop_auto_refresh(self, timeout: float = 10.0) -> None:
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    @property
    def auto_refreshing(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def close(self) -> None:
        """Stop the refresh thread and close the widgets (the panel stops updating)."""
        self.stop_auto_refresh()
        for child in [*getattr(self, "buttons", {}).values(),
                      *(getattr(self, name, None) for name in
                        ("refresh_button", "status", "output"))]:
            if child is not None:
                child.close()
        super().close()

    # ------------------------------------------------------------ rendering
    def __repr__(self) -> str:
        return f"<FaultPanel {', '.join(self.specs)} | {self.status_text}>"

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any] | None:
        """Widget view plus a full text form: a papermill output or an export without
        a widget manager then still shows the status and what each press did."""
        data = super()._repr_mimebundle_(**kwargs) or {}
        lines = [f"FaultPanel: {', '.join(self.specs)}", self.status_text, *self.lines]
        data["text/plain"] = "\n".join(lines)
        return data


def _positional_params(fn: Callable[..., Any]) -> int:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 0
    return sum(1 for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
               and p.default is p.empty)


def _public_methods(obj: Any) -> list[str]:
    return sorted(n for n in dir(obj) if not n.startswith("_") and callable(getattr(obj, n)))


def _safe(fn: Callable[[], Any], default: Any) -> Any:
    try:
        return fn()
    except Exception:
        return default


def _send_counts(history: History | None, topic: str | None) -> dict[str, int] | None:
    if history is None:
        return None
    counts = {"ok": 0, "info": 0, "fail": 0}
    for op in history:
        if op.kind == "send" and (topic is None or op.topic == topic):
            counts[op.outcome] = counts.get(op.outcome, 0) + len(op.values or ("",))
    return {"sent": sum(counts.values()), "acked": counts["ok"], "unknown": counts["info"],
            "failed": counts["fail"]}


def _leader_text(leaders: dict[int, int] | str | None) -> str:
    if isinstance(leaders, str):
        return leaders
    return " ".join(f"p{p}->{'none' if n < 0 else n}" for p, n in (leaders or {}).items())


def _status_text(brokers: dict[int, str], running: bool, topic: str | None,
                 leaders: dict[int, int] | str | None,
                 counts: dict[str, int] | None) -> str:
    """The status line as plain text (tests and papermill outputs read this one)."""
    if not running:
        parts = ["cluster stopped"]
    else:
        parts = ["brokers: " + " ".join(f"{n}:{s}" for n, s in sorted(brokers.items()))]
        if topic:
            parts.append(f"leaders of {topic}: {_leader_text(leaders)}")
    if counts is not None:
        parts.append(f"sends: {counts['sent']} recorded, {counts['acked']} acked, "
                     f"{counts['unknown']} unknown, {counts['failed']} failed")
    return " | ".join(parts)


def _status_html(brokers: dict[int, str], running: bool, topic: str | None,
                 leaders: dict[int, int] | str | None,
                 counts: dict[str, int] | None) -> str:
    """The same facts as :func:`_status_text`, coloured: the state is seen at a glance."""
    esc = html.escape
    if not running:
        cells = ["<b>cluster stopped</b>"]
    else:
        chips = " ".join(
            f"<span class='dl-broker dl-{esc(s)}' style='padding:1px 6px;border-radius:3px;"
            f"color:white;background:{STATE_COLORS.get(s, '#555')}'>broker {n}: {esc(s)}</span>"
            for n, s in sorted(brokers.items()))
        cells = [chips]
        if topic:
            cells.append(f"leaders of <code>{esc(topic)}</code>: "
                         f"<span class='dl-leaders'>{esc(_leader_text(leaders))}</span>")
    if counts is not None:
        cells.append(f"<span class='dl-sends'>sends: {counts['sent']} recorded, "
                     f"<span style='color:{STATE_COLORS['up']}'>{counts['acked']} acked</span>,"
                     f" <span style='color:{STATE_COLORS['paused']}'>{counts['unknown']} "
                     f"unknown</span>, <span style='color:{STATE_COLORS['dead']}'>"
                     f"{counts['failed']} failed</span></span>")
    return ("<div style='font-family:monospace;font-size:12px;line-height:1.9'>"
            + " &nbsp;|&nbsp; ".join(cells) + "</div>")


def _log_html(lines: list[str]) -> str:
    shown = lines[-LOG_LINES:]
    if not shown:
        return ("<div style='font-family:monospace;font-size:12px;color:#777'>"
                "no button pressed yet</div>")
    rows = "".join(
        f"<div class='dl-log-line' style='color:{'#D55E00' if 'FAILED' in s else 'inherit'}'>"
        f"{html.escape(s)}</div>" for s in shown)
    return f"<div style='font-family:monospace;font-size:12px'>{rows}</div>"


@atexit.register
def _stop_all_panels() -> None:
    for panel in list(_PANELS):
        panel._stop.set()


__all__ = ["FaultPanel", "FaultSpec", "Press", "current_leader", "describe",
           "fault_buttons", "one_line"]
