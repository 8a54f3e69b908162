"""A headless run's panels record what they showed after each press (for the book):
written only where ``DELIVERYLAB_PANEL_RECORD`` points, one JSON line per event."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deliverylab.history import History, Op
from deliverylab.notebook import record, widgets


class OneBroker:
    """A cluster as the panel sees it: one broker up, no metadata."""

    def status(self) -> dict[int, str]:
        return {1: "up"}

    def admin(self):
        raise RuntimeError("no admin in a unit test")


def _panel(history: History) -> widgets.FaultPanel:
    def lose(history=history):
        history.append(Op("nemesis", "fault", "ok", 2.0, fault="lose_ack",
                          detail="will drop the next 1 Produce response(s) of broker 1"))
        return "armed the proxy of broker 1"

    def broken():
        raise RuntimeError("the proxy is off\nlog tail...")

    return widgets.FaultPanel(OneBroker(), None, [("Lose ack", lose), ("Break", broken)],
                              history=history, title="Chapter 2: lose an ack")


def test_each_press_records_its_line_the_status_after_it_and_the_history(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    path = tmp_path / "02.panels.jsonl"
    monkeypatch.setenv(record.RECORD_ENV, str(path))
    history = History()
    for i in range(8):
        history.append(Op("producer-0", "send", "ok" if i != 5 else "info", 0.1 * i,
                          (f"producer-0:{i}",), "t", 0, i))
    panel = _panel(history)
    panel.press("Lose ack")
    panel.press("Break")
    shown, first, second = (json.loads(line) for line in path.read_text().splitlines())
    assert shown["event"] == "shown" and shown["model_id"] == panel.model_id
    assert shown["title"] == "Chapter 2: lose an ack"
    assert shown["buttons"] == ["Lose ack", "Break"]
    assert "broker 1: up" in shown["status_html"]
    assert first["line"].endswith("Lose ack: armed the proxy of broker 1 (0.0 s)")
    assert first["ok"] is True
    assert first["status"] == "brokers: 1:up | sends: 8 recorded, 7 acked, 1 unknown, 0 failed"
    assert len(first["history"]) == record.EXCERPT_OPS
    assert first["history"][-1].split() == ["2.00s", "nemesis", "lose_ack", "ok", "will",
                                            "drop", "the", "next", "1", "Produce",
                                            "response(s)", "of", "broker", "1"]
    assert "producer-0 send info producer-0:5 t/0@5" in first["history"][-4]
    assert second["ok"] is False and "FAILED -- RuntimeError: the proxy is off" in \
        second["line"]
    panel.close()


def test_a_live_notebook_records_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv(record.RECORD_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    panel = _panel(History())
    panel.press("Lose ack")
    assert list(tmp_path.iterdir()) == []
    panel.close()
