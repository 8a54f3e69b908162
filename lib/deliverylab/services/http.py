"""A small real HTTP service (a payment provider) that logs every request it receives.

Chapter 06's service instances call it once per order. It runs in its own process on
127.0.0.1 (``python -m deliverylab.services.http``), so a killed instance cannot take it
down, and it records each request to a call log (JSON Lines) *before* it answers:
whatever the caller later believes, the log says what reached the service.

Idempotency keys: a request that carries an ``Idempotency-Key`` header takes effect
once per key; a repeat gets the first answer again and is logged with
``effect: false``. A request without a key always takes effect: that is how duplicate
calls become duplicate payments. So the log tells *calls* (requests) from *effects*.

One module, three sides, each importing its own standard library where it starts: the
service (:func:`serve`, ``http.server``), the client (:func:`call`, ``urllib.request``: an
instance's and a graded student's process, which import nothing of the service's) and the
owner (:class:`HttpService`). A child that is one side does not pay for the others'.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

from ..errors import LabError
from ..history import JsonLines, read_json_lines
from ..process.children import Children, child_env, python_module
from ..waiting import wait_until

#: The header carrying the caller's idempotency key (the common name, as in Stripe's API).
KEY_HEADER = "Idempotency-Key"


class CallLog:
    """The service's memory: one JSON line per request, and the effect taken per key.

    Not an op log (:class:`~deliverylab.history.OpLog`): a client's ops say what it
    attempted and was told; this is the world's side, what reached the service and
    which requests took effect (``effect``, per idempotency key) -- the evidence the
    instances' ops are judged against, as a topic's read-back is for a producer's.
    Written as op logs are, through :class:`~deliverylab.history.JsonLines`: a line is
    on disk before the answer leaves, whatever kills the service after.
    """

    def __init__(self, path: Path) -> None:
        self.log = JsonLines(path)
        self.path = self.log.path
        self._lock = threading.Lock()
        self._effects: dict[str, dict[str, Any]] = {}
        self._seq = 0

    def handle(self, body: dict[str, Any], key: str | None) -> dict[str, Any]:
        """Apply one request: an effect unless its key was seen; log it; the answer."""
        with self._lock:
            self._seq += 1
            replay = key is not None and key in self._effects
            if replay:
                answer = dict(self._effects[key], replayed=True)
            else:
                answer = {"payment": self._seq, "replayed": False}
                if key is not None:
                    self._effects[key] = answer
            record = {"call": self._seq, "time": time.monotonic(), "wall": time.time(),
                      "run": body.get("run"), "message_id": body.get("message_id"),
                      "instance": body.get("instance"), "key": key, "effect": not replay,
                      "payment": answer["payment"]}
            self.log.append(record)
            return answer


def serve(port: int, log: Path) -> None:
    """Run the service until killed; prints ``port <n>`` once it listens."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    calls = CallLog(log)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 -- http.server's name
            self._reply(200, {"ok": True})

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                self._reply(400, {"error": "the body must be JSON"})
                return
            self._reply(200, calls.handle(body, self.headers.get(KEY_HEADER)))

        def _reply(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:  # the call log is the record
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print(f"port {server.server_address[1]}", flush=True)
    server.serve_forever()


def call(url: str, body: dict[str, Any], key: str | None = None,
         timeout: float = 10.0) -> dict[str, Any]:
    """POST ``body`` to the service (with ``key`` as its idempotency key); its answer."""
    import urllib.request

    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers[KEY_HEADER] = key
    req = urllib.request.Request(url + "/pay", json.dumps(body).encode(), headers)
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return json.loads(resp.read())


def read_calls(path: Path) -> list[dict[str, Any]]:
    """Every request the service logged (a missing log: none yet; a line torn by the
    service's kill: skipped, see :func:`~deliverylab.history.read_json_lines`)."""
    return list(read_json_lines(path).records)


class HttpService:
    """The HTTP service as a child process of ``children`` (reaped with its owner)."""

    def __init__(self, children: Children, workdir: Path, timeout: float = 20.0) -> None:
        self.children = children
        self.log = Path(workdir) / "http-calls.jsonl"
        self.stderr = Path(workdir) / "http-service.log"
        self.proc = children.start("the HTTP service", python_module(
            "services.http", "--port", "0", "--log", str(self.log)), self.stderr,
            env=child_env(), stdout_pipe=True)
        line = self.proc.stdout.readline().split()
        if len(line) != 2 or line[0] != "port":
            children.check(self.proc)
            raise LabError(f"the HTTP service did not say its port; log: {self.stderr}")
        self.port = int(line[1])
        self.url = f"http://127.0.0.1:{self.port}"
        wait_until(f"the HTTP service at {self.url} to answer", self._up, timeout)

    def _up(self) -> bool:
        import urllib.error
        import urllib.request

        self.children.check(self.proc)
        try:
            with urllib.request.urlopen(self.url + "/health", timeout=2):
                return True
        except (urllib.error.URLError, OSError):
            return False

    @property
    def pid(self) -> int:
        return self.proc.pid

    def calls(self, run: str | None = None) -> list[dict[str, Any]]:
        """The call log (of one run, if given)."""
        return [c for c in read_calls(self.log) if run is None or c.get("run") == run]

    def stop(self) -> None:
        self.children.stop(self.proc)

    def __repr__(self) -> str:
        state = "running" if self.proc.poll() is None else "stopped"
        return f"<HttpService {self.url} {state}, log {self.log}>"


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m deliverylab.services.http",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--log", type=Path, required=True)
    args = parser.parse_args(argv)
    serve(args.port, args.log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
