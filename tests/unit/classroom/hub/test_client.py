"""The hub client's reading of a student's files, against a local HTTP server that
answers as jupyter_server does: a 404 labelled JSON whose body is plain text."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from deliverylab.classroom.hub.client import Student
from deliverylab.errors import LabError

FILES = {"labs/results/00_tour.json": '{"chapter": "00_tour", "pass": true}'}


class ContentsAPI(BaseHTTPRequestHandler):
    """``/user/<name>/api/contents/<path>`` for :data:`FILES`; anything else is the
    404 jupyter_server sends: ``Content-Type: application/json``, body ``404: Not
    Found`` (seen through the hub, issue 40)."""

    def _send(self, status: int, body: bytes, ctype: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 -- http.server's name
        path = self.path.split("?")[0].removeprefix("/user/ann/api/contents/")
        if path == "labs/odd.json":
            self._send(200, json.dumps({"type": "directory", "content": []}).encode())
        elif path in FILES:
            self._send(200, json.dumps({"type": "file", "format": "text",
                                        "content": FILES[path]}).encode())
        else:
            self._send(404, b"404: Not Found")

    def do_DELETE(self) -> None:  # noqa: N802
        self._send(404, b"404: Not Found")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture()
def ann() -> Iterator[Student]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), ContentsAPI)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    student = Student(f"http://127.0.0.1:{server.server_address[1]}", "ann", "password")
    student.token = "t"
    try:
        yield student
    finally:
        server.shutdown()
        server.server_close()


def test_a_missing_file_is_none_though_its_404_is_plain_text(ann: Student):
    assert ann.file_text("labs/results/02_at_least_once.json") is None


def test_a_present_file_is_its_text(ann: Student):
    assert ann.file_text("labs/results/00_tour.json") == FILES["labs/results/00_tour.json"]


def test_deleting_a_missing_file_is_no_error(ann: Student):
    ann.delete("labs/results/02_at_least_once.json")


def test_a_folder_where_a_file_was_asked_is_an_error_naming_it(ann: Student):
    with pytest.raises(LabError, match="labs/odd.json: not a text file"):
        ann.file_text("labs/odd.json")


def test_a_status_not_accepted_still_raises_with_the_body(ann: Student):
    with pytest.raises(LabError, match="HTTP 404 404: Not Found"):
        ann.api("GET", "/contents/nowhere")
