"""The HTTP service's call log and idempotency keys, served in-process on loopback."""

from __future__ import annotations

import math
import threading
from http.server import ThreadingHTTPServer

from deliverylab.services import http as H
from deliverylab.waiting import wait_until


def test_call_log_applies_one_effect_per_key(tmp_path):
    log = H.CallLog(tmp_path / "calls.jsonl")
    first = log.handle({"run": "r", "message_id": "o:1"}, "k1")
    again = log.handle({"run": "r", "message_id": "o:1"}, "k1")
    nokey = [log.handle({"run": "r", "message_id": "o:2"}, None) for _ in range(2)]
    assert first["payment"] == again["payment"] and again["replayed"] is True
    assert nokey[0]["payment"] != nokey[1]["payment"]
    calls = H.read_calls(log.path)
    assert [c["effect"] for c in calls] == [True, False, True, True]
    assert [c["key"] for c in calls] == ["k1", "k1", None, None]


def test_read_calls_of_a_missing_log_is_empty(tmp_path):
    assert H.read_calls(tmp_path / "none.jsonl") == []


def test_call_reaches_a_server_with_its_key(tmp_path, monkeypatch):
    servers = []
    real = ThreadingHTTPServer.serve_forever

    def capture(self, *a, **k):
        servers.append(self)
        return real(self, *a, **k)

    monkeypatch.setattr(ThreadingHTTPServer, "serve_forever", capture)
    thread = threading.Thread(target=H.serve, args=(0, tmp_path / "c.jsonl"), daemon=True)
    thread.start()
    # no deadline of its own, as before: pytest's timeout bounds the test
    wait_until("H.serve to reach serve_forever", lambda: servers, math.inf, interval=0.01)
    url = f"http://127.0.0.1:{servers[0].server_address[1]}"
    try:
        assert H.call(url, {"run": "r", "message_id": "o:1"}, "k")["replayed"] is False
        assert H.call(url, {"run": "r", "message_id": "o:1"}, "k")["replayed"] is True
    finally:
        servers[0].shutdown()
    assert [c["effect"] for c in H.read_calls(tmp_path / "c.jsonl")] == [True, False]
