"""A student at a JupyterHub, without a browser: log in through the hub's REST API,
start the server, and run a chapter's cells in a kernel *of that server*.

Used by the classroom's tests and benchmark (``bench/hub_start.py``). Everything goes
through the hub's public port, as a browser's requests would: the token comes from
``POST /hub/api/users/<name>/tokens`` authenticated by the student's password, the
server is started with ``POST /hub/api/users/<name>/server``, the notebook is read with
the server's contents API, and each code cell is an ``execute_request`` on the kernel's
websocket (jupyter_server's JSON protocol: one message per text frame, with a
``channel`` key).
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import requests

from ...errors import LabError
from ...waiting import wait_until


def body(rsp: requests.Response) -> Any:
    """A success's JSON body, or None: for an error status the caller accepted (a 404
    of a missing file) None, whatever the body -- jupyter_server's 404 is labelled
    ``application/json`` but its body is plain text (``404: Not Found``)."""
    if not rsp.ok or not rsp.content:
        return None
    return rsp.json()


class CellFailed(LabError):
    """A cell raised in the student's kernel: the message carries its error and output."""


@dataclass
class Executed:
    """What a cell printed (stdout/stderr streams) and, for an expression, its value."""

    stdout: str = ""
    result: str | None = None
    outputs: list[dict[str, Any]] = field(default_factory=list)


class Student:
    """One student's session with the hub at ``url`` (``http://127.0.0.1:8000``)."""

    def __init__(self, url: str, name: str, password: str) -> None:
        self.url, self.name, self.password = url.rstrip("/"), name, password
        self.http = requests.Session()
        self.token: str | None = None

    # --- the hub -----------------------------------------------------------------------

    def _hub(self, method: str, path: str, ok: tuple[int, ...], **kw: Any) -> Any:
        headers = {"Authorization": f"token {self.token}"} if self.token else {}
        rsp = self.http.request(method, f"{self.url}/hub/api{path}", headers=headers,
                                timeout=30, **kw)
        if rsp.status_code not in ok:
            raise LabError(f"{method} /hub/api{path} as {self.name}: HTTP "
                           f"{rsp.status_code} {rsp.text[:300]}")
        return body(rsp)

    def login(self) -> Student:
        """A token for this student, issued against their password (403 if wrong)."""
        got = self._hub("POST", f"/users/{self.name}/tokens", (200, 201), json={
            "auth": {"username": self.name, "password": self.password},
            "note": "deliverylab classroom client", "expires_in": 4 * 3600})
        self.token = got["token"]
        return self

    def model(self) -> dict[str, Any]:
        return self._hub("GET", f"/users/{self.name}", (200,))

    def start_server(self) -> None:
        self._hub("POST", f"/users/{self.name}/server", (201, 202, 400))

    def wait_ready(self, timeout: float = 180.0) -> float:
        """Wait until the server answers; returns the seconds waited."""
        t0 = time.monotonic()
        seen: list[Any] = [None]

        def ready() -> bool:
            seen[0] = self.model().get("servers", {}).get("")
            return bool(seen[0] and seen[0].get("ready"))

        wait_until(f"{self.name}'s server to be ready", ready, timeout, interval=0.5,
                   explain=lambda: f" (its state: {seen[0]})")
        return time.monotonic() - t0

    def stop_server(self, timeout: float = 120.0) -> None:
        self._hub("DELETE", f"/users/{self.name}/server", (202, 204, 400))
        self.wait_stopped(timeout)

    def wait_stopped(self, timeout: float = 120.0) -> None:
        wait_until(f"{self.name}'s server to stop",
                   lambda: not self.model().get("servers", {}).get(""), timeout, interval=0.5)

    # --- the student's server ----------------------------------------------------------

    def api(self, method: str, path: str, ok: tuple[int, ...] = (200, 201), **kw: Any) -> Any:
        rsp = self.http.request(method, f"{self.url}/user/{self.name}/api{path}",
                                headers={"Authorization": f"token {self.token}"},
                                timeout=60, **kw)
        if rsp.status_code not in ok:
            raise LabError(f"{method} /user/{self.name}/api{path}: HTTP {rsp.status_code} "
                           f"{rsp.text[:300]}")
        return body(rsp)

    def notebook(self, path: str) -> dict[str, Any]:
        return self.api("GET", f"/contents/{path}?content=1")["content"]

    def file_text(self, path: str) -> str | None:
        """A text file of the server (contents API), or None if there is none (404)."""
        got = self.api("GET", f"/contents/{path}?content=1&type=file&format=text",
                       ok=(200, 404))
        if got is None:
            return None
        if not isinstance(got, dict) or not isinstance(got.get("content"), str):
            raise LabError(f"GET /user/{self.name}/api/contents/{path}: not a text file's "
                           f"model: {str(got)[:200]}")
        return got["content"]

    def delete(self, path: str) -> None:
        """Delete a file of the server if it is there (a previous run's results)."""
        self.api("DELETE", f"/contents/{path}", ok=(204, 404))

    def kernel(self, notebook_path: str) -> Kernel:
        """A kernel for ``notebook_path`` (its folder is the kernel's working folder, as
        when the student opens the notebook)."""
        session = self.api("POST", "/sessions", json={
            "path": notebook_path, "type": "notebook", "name": notebook_path.split("/")[-1],
            "kernel": {"name": "python3"}})
        return Kernel(self, session["kernel"]["id"])


class Kernel:
    """A kernel of a student's server, driven over its websocket channels."""

    def __init__(self, student: Student, kernel_id: str) -> None:
        import websocket  # websocket-client

        self.student, self.id = student, kernel_id
        self.session = uuid.uuid4().hex
        ws_url = student.url.replace("http", "ws", 1)
        self.ws = websocket.create_connection(
            f"{ws_url}/user/{student.name}/api/kernels/{kernel_id}/channels"
            f"?session_id={self.session}",
            header=[f"Authorization: token {student.token}"], timeout=30)

    def execute(self, code: str, timeout: float = 600.0) -> Executed:
        """Run ``code``; raises :class:`CellFailed` with the traceback if it raised."""
        msg_id = uuid.uuid4().hex
        self.ws.send(json.dumps({
            "header": {"msg_id": msg_id, "username": self.student.name,
                       "session": self.session, "msg_type": "execute_request",
                       "version": "5.3", "date": datetime.now(UTC).isoformat()},
            "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
            "content": {"code": code, "silent": False, "store_history": True,
                        "user_expressions": {}, "allow_stdin": False,
                        "stop_on_error": True}}))
        done = Executed()
        reply = idle = None
        deadline = time.monotonic() + timeout
        while reply is None or idle is None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise LabError(f"{self.student.name}'s kernel did not finish a cell within "
                               f"{timeout:.0f} s: {code[:80]!r}; output so far: "
                               f"{done.stdout[-500:]}")
            self.ws.settimeout(min(left, 30))
            try:
                frame = self.ws.recv()
            except TimeoutError:
                continue
            if not isinstance(frame, str):
                continue  # binary buffers (widgets): nothing we read
            msg = json.loads(frame)
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream":
                done.stdout += content["text"]
            elif kind == "execute_result":
                done.result = content["data"].get("text/plain")
            elif kind == "status" and content["execution_state"] == "idle":
                idle = True
            elif kind == "execute_reply":
                reply = content
            if kind in ("stream", "execute_result", "display_data", "error"):
                done.outputs.append({"type": kind, **content})
        if reply["status"] != "ok":
            trace = "\n".join(reply.get("traceback", []))[-3000:]
            raise CellFailed(f"{self.student.name}: {reply.get('ename')}: "
                             f"{reply.get('evalue')}\n{trace}\ncell: {code[:200]!r}")
        return done

    def value(self, expression: str, timeout: float = 120.0) -> Any:
        """The JSON value of ``expression`` evaluated in the kernel."""
        out = self.execute(f"import json as _j; print(_j.dumps({expression}, default=str))",
                           timeout)
        return json.loads(out.stdout.strip().splitlines()[-1])

    def run_notebook(self, path: str, parameters: dict[str, Any],
                     timeout: float = 600.0) -> list[Executed]:
        """Every code cell of the server's ``path``, with ``parameters`` set right after
        the cell tagged ``parameters`` (as papermill does)."""
        cells = [c for c in self.student.notebook(path)["cells"] if c["cell_type"] == "code"]
        if not any("parameters" in c["metadata"].get("tags", []) for c in cells):
            raise LabError(f"{path} has no cell tagged 'parameters'")
        ran = []
        for cell in cells:
            source = cell["source"] if isinstance(cell["source"], str) \
                else "".join(cell["source"])
            ran.append(self.execute(source, timeout))
            if "parameters" in cell["metadata"].get("tags", []):
                ran.append(self.execute("\n".join(f"{k} = {v!r}" for k, v in
                                                  parameters.items()), timeout))
        return ran

    def pid(self) -> int:
        return int(self.value("__import__('os').getpid()"))

    def close(self) -> None:
        try:
            self.ws.close()
        except OSError:
            pass

    def shutdown(self) -> None:
        self.close()
        self.student.api("DELETE", f"/kernels/{self.id}", ok=(204, 404))
