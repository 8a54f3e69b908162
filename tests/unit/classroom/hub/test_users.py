"""The sweep that kills every process of a uid, and the removal of every file a uid
left in the shared folders."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from deliverylab.classroom.hub import users
from deliverylab.errors import LabError
from deliverylab.waiting import wait_until


@pytest.mark.skipif(os.geteuid() != 0, reason="setuid to another uid needs root")
def test_sweep_kills_every_process_of_the_uid_however_detached():
    uid = 64000 + os.getpid() % 1000  # no such user: a uid nobody else runs as
    proc = subprocess.Popen(["/bin/sh", "-c", "setsid sleep 300 & exec sleep 300"],
                            start_new_session=True, user=uid, group=uid, cwd="/")
    try:
        wait_until("the test's processes to start (the child and its detached grandchild)",
                   lambda: len(users.processes_of(uid)) >= 2, 10, interval=0.05)
        users.sweep(uid, timeout=10)
        assert users.processes_of(uid) == []
        assert proc.wait(5) == -9
    finally:
        proc.kill()


def test_sweep_refuses_root():
    with pytest.raises(LabError, match="uid 0"):
        users.sweep(0)


@pytest.mark.skipif(os.geteuid() != 0, reason="files of another uid need root (chown)")
def test_removing_a_student_removes_every_file_of_their_uid_in_the_shared_folders(
        tmp_path: Path):
    """As a class leaves them in /tmp: the JVMs' perf data folder, a native library
    copy in a folder of someone else's, a Spark folder; a link of theirs to a file of
    another's is removed, never followed."""
    uid, other = 64000 + os.getpid() % 1000, 65000 + os.getpid() % 500
    tmp, var = tmp_path / "tmp", tmp_path / "var-tmp"
    (tmp / "hsperfdata_dlab-ann").mkdir(parents=True)
    (tmp / "hsperfdata_dlab-ann" / "4242").write_bytes(b"perf")
    (tmp / "shared").mkdir()
    (tmp / "shared" / "liblz4-java-1.so").write_bytes(b"so")
    (tmp / "shared" / "keep.txt").write_text("another's")
    (var / "spark-1" / "blockmgr-2").mkdir(parents=True)
    (tmp / "link").symlink_to(tmp / "shared" / "keep.txt")
    for path in [tmp / "hsperfdata_dlab-ann", tmp / "hsperfdata_dlab-ann" / "4242",
                 tmp / "shared" / "liblz4-java-1.so", var / "spark-1",
                 var / "spark-1" / "blockmgr-2"]:
        os.chown(path, uid, uid)
    os.chown(tmp / "link", uid, uid, follow_symlinks=False)
    os.chown(tmp / "shared" / "keep.txt", other, other)
    removed = users.remove_files_of(uid, roots=(tmp, var, tmp_path / "absent"))
    assert sorted(removed) == sorted([tmp / "hsperfdata_dlab-ann", tmp / "link",
                                      tmp / "shared" / "liblz4-java-1.so", var / "spark-1"])
    assert sorted(p.name for p in tmp.rglob("*")) == ["keep.txt", "shared"]
    assert list(var.iterdir()) == []
    with pytest.raises(LabError, match="uid 0"):
        users.remove_files_of(0, roots=(tmp,))
