"""Downloading pinned jars from a real HTTP server on 127.0.0.1 (no mocks of the network).

A tiny lock with two made-up jars stands in for the committed one, so each test runs in
milliseconds while going through sockets, partial files and renames for real.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from deliverylab.errors import JarsUnavailable
from deliverylab.runtime import download, jars

FILES = {"org/x/a/1/a-1.jar": b"A" * 300_000, "org/x/b/2/b-2.jar": b"B" * 1000}


class Repo:
    """A Maven-like repository on 127.0.0.1; ``mode`` decides how it misbehaves."""

    def __init__(self) -> None:
        self.mode = "ok"  # "ok", "die" (dies mid-stream), "wrong" (serves other bytes)
        self.hits: list[str] = []
        repo = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                path = self.path.split("/maven2/", 1)[-1]
                repo.hits.append(path)
                body = FILES.get(path)
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if repo.mode == "die":
                    self.wfile.write(body[: len(body) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(body if repo.mode == "ok" else body[::-1][:-1] + b"X")

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/maven2"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Repo]:
    """The server, a lock pinning its two files as component ``jdbc``, an empty cache."""
    lock = {"components": {"jdbc": {"jars": [
        {"coord": f"org.x:{p.split('/')[2]}:1", "path": p, "size": len(b),
         "sha256": hashlib.sha256(b).hexdigest()} for p, b in FILES.items()]}}}
    (tmp_path / "lock.json").write_text(json.dumps(lock))
    monkeypatch.setattr(jars, "LOCK_FILE", tmp_path / "lock.json")
    monkeypatch.setenv("DELIVERYLAB_CACHE", str(tmp_path / "cache"))
    server = Repo()
    monkeypatch.setenv(download.REPO_ENV, server.url)
    yield server
    server.server.shutdown()


def cached(name: str) -> Path:
    return jars.component_dir("jdbc") / name


def test_fill_downloads_every_pinned_file_and_shows_progress(repo, capsys):
    got = download.fill(["jdbc"])
    assert sorted(p.name for p in got) == ["a-1.jar", "b-2.jar"]
    assert cached("a-1.jar").read_bytes() == FILES["org/x/a/1/a-1.jar"]
    shown = capsys.readouterr()
    # On stdout: progress is not an error (a notebook shows stderr as a red box).
    assert "downloading 2 jar(s), 0.3 MB" in shown.out and "[2/2] b-2.jar" in shown.out
    assert shown.err == ""
    assert download.fill(["jdbc"]) == []  # second run: nothing to do
    assert len(repo.hits) == 2


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_downloaded_jars_get_the_mode_the_umask_asks_for(repo, mask):
    """Not mkstemp's 0600: a cache of 0600 jars, copied into the broker image, is
    unreadable by the broker's user there (every container broker died)."""
    old = os.umask(mask)
    try:
        download.fill(["jdbc"])
    finally:
        os.umask(old)
    for name in ("a-1.jar", "b-2.jar"):
        assert stat.S_IMODE(cached(name).stat().st_mode) == 0o666 & ~mask, name


def test_a_cached_jar_of_another_mode_is_given_the_umask_s_mode_back(repo):
    download.fill(["jdbc"])
    cached("a-1.jar").chmod(0o600)  # what an earlier version of fetch_one left
    old = os.umask(0o022)
    try:
        assert download.fill(["jdbc"]) == []  # nothing downloaded again...
    finally:
        os.umask(old)
    assert stat.S_IMODE(cached("a-1.jar").stat().st_mode) == 0o644  # ...but readable


def test_umask_is_read_without_being_changed():
    old = os.umask(0o027)
    try:
        assert download.umask() == 0o027
        assert download.file_mode() == 0o640
        assert os.umask(0o027) == 0o027  # still what it was
    finally:
        os.umask(old)


def test_corrupt_cached_jar_is_noticed_and_fetched_again(repo):
    download.fill(["jdbc"])
    body = cached("a-1.jar").read_bytes()
    cached("a-1.jar").write_bytes(body[:-1] + b"Z")  # same size: only the sha256 tells
    assert jars.problems("jdbc") == []  # the cheap check cannot see it...
    assert jars.problems("jdbc", deep=True) == ["a-1.jar (corrupt: checksum differs from "
                                                "the pin)"]
    assert [p.name for p in download.fill(["jdbc"])] == ["a-1.jar"]  # ...set-up can
    assert cached("a-1.jar").read_bytes() == body


def test_download_dying_mid_stream_leaves_no_file_to_trust(repo):
    repo.mode = "die"
    with pytest.raises(JarsUnavailable) as err:
        download.fill(["jdbc"])
    assert "cannot download a-1.jar" in str(err.value)
    assert "make setup BUNDLE=" in str(err.value)
    folder = jars.component_dir("jdbc")
    assert list(folder.iterdir()) == []  # neither a-1.jar nor a hidden .part file
    repo.mode = "ok"
    download.fill(["jdbc"])
    assert jars.problems("jdbc", deep=True) == []


def test_ctrl_c_mid_download_removes_the_partial_file(repo):
    jar = jars.pinned("jdbc")[0]
    dest = cached(jar.name)
    dest.parent.mkdir(parents=True)

    def interrupt(n: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        download.fetch_one(f"{repo.url}/{jar.path}", dest, jar, progress=interrupt)
    assert list(dest.parent.iterdir()) == []


def test_a_file_that_differs_from_its_pin_is_refused(repo):
    repo.mode = "wrong"
    with pytest.raises(JarsUnavailable, match="does not match its pin"):
        download.fill(["jdbc"])
    assert list(jars.component_dir("jdbc").iterdir()) == []


def test_no_network_names_the_missing_files_and_both_ways_out(repo, monkeypatch):
    repo.server.shutdown()
    repo.server.server_close()
    with pytest.raises(JarsUnavailable) as err:
        download.fill(["jdbc"])
    text = str(err.value)
    assert "still missing: a-1.jar, b-2.jar" in text
    assert "`make setup` once with the network" in text and "BUNDLE=<folder>" in text
    assert "\n" not in text


def test_plain_http_is_refused_except_on_loopback(repo, monkeypatch):
    monkeypatch.setenv(download.REPO_ENV, "http://repo.example.org/maven2")
    with pytest.raises(JarsUnavailable, match="only downloaded over https://"):
        download.fill(["jdbc"])


SETTINGS = """<settings xmlns="http://maven.apache.org/SETTINGS/1.0.0"><mirrors>
<mirror><id>block</id><mirrorOf>external:http:*</mirrorOf><url>http://0.0.0.0/</url>
<blocked>true</blocked></mirror>
{extra}
</mirrors></settings>"""


@pytest.mark.parametrize(("mirror_of", "used"), [
    ("central", True), ("*", True), ("external:*", True), ("*,!central", False),
    ("other-repo", False)])
def test_a_mirror_of_central_in_maven_settings_is_honoured(tmp_path, monkeypatch,
                                                           mirror_of, used):
    monkeypatch.delenv(download.REPO_ENV, raising=False)
    monkeypatch.setattr(Path, "home", lambda: tmp_path)
    (tmp_path / ".m2").mkdir()
    (tmp_path / ".m2" / "settings.xml").write_text(SETTINGS.format(extra=(
        f"<mirror><id>corp</id><mirrorOf>{mirror_of}</mirrorOf>"
        "<url>https://nexus.example.org/maven2/</url></mirror>")))
    url, origin = download.repository()
    if used:
        assert (url, origin) == ("https://nexus.example.org/maven2",
                                 f"mirror in {tmp_path / '.m2' / 'settings.xml'}")
    else:
        assert url != "https://nexus.example.org/maven2"


def test_blocked_http_mirror_is_not_taken_for_central(tmp_path):
    settings = tmp_path / "settings.xml"
    settings.write_text(SETTINGS.format(extra=""))
    assert download.mirror_from_settings(settings) is None
