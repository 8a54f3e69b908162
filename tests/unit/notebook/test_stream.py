"""The stream a notebook presses buttons during: scheduled presses land at their counts
(a stand-in workload and panel, no cluster)."""

from __future__ import annotations

import pytest

from deliverylab.errors import BadValue
from deliverylab.notebook.stream import Stream


class _Press:
    def __init__(self, name, sent, ok=True):
        self.name, self.sent, self.ok = name, sent, ok
        self.error = None if ok else RuntimeError(f"{name} failed")

    def line(self):
        return f"{self.name}@{self.sent}"


class _Panel:
    """The panel's side of a Schedule: ``apply`` presses, ``now`` is its clock."""

    def __init__(self, stream_ref, fail=()):
        self.stream_ref, self.fail, self.pressed = stream_ref, set(fail), []

    @property
    def presses(self):
        return self.pressed

    def spec(self, name):
        if name not in ("lose_ack", "heal"):
            raise BadValue(f"no button {name}")

    def now(self):
        return 0.0

    def apply(self, name):
        press = _Press(name, self.stream_ref[0].sent, ok=name not in self.fail)
        self.pressed.append(press)
        if press.error is not None:
            raise press.error
        return press


class _Workload:
    def run(self, count, start_seq=0, on_sent=None):
        import time as _time

        from deliverylab.workload import ProduceReport

        for n in range(1, count + 1):
            on_sent(n)
            _time.sleep(0.002)
        return ProduceReport("fake", sent=count, acked=count)


def test_stream_presses_the_schedule_at_its_counts(capsys):
    ref = []
    panel = _Panel(ref)
    stream = Stream(_Workload(), 90, panel=panel, faults=["lose_ack", "heal"])
    ref.append(stream)
    report = stream.start().wait(timeout=30)
    assert report.acked == 90 and not stream.running
    assert [p.name for p in panel.pressed] == ["lose_ack", "heal"]
    assert panel.pressed[0].sent >= 30 and panel.pressed[1].sent >= 60
    out = capsys.readouterr().out
    assert "scheduled presses: 'lose_ack' after 30, 'heal' after 60" in out
    assert "producing: 90/90" in out


def test_stream_refuses_unknown_buttons_and_reraises_a_failed_press():
    with pytest.raises(BadValue):
        Stream(_Workload(), 10, panel=_Panel([]), faults=["kill_everything"])
    with pytest.raises(BadValue):
        Stream(_Workload(), 10, faults=["lose_ack"])  # a schedule needs a panel
    ref = []
    stream = Stream(_Workload(), 20, panel=_Panel(ref, fail={"lose_ack"}),
                    faults=["lose_ack", "heal"])
    ref.append(stream)
    with pytest.raises(RuntimeError, match="lose_ack failed"):
        stream.start().wait(timeout=30)


