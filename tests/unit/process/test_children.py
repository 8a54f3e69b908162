"""The one child-process launcher, on real (tiny) Python children: the log, the tail in
the error, the group kill, and the reaper that outlives its owner."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from deliverylab.process.children import (
    ChildExited,
    Children,
    child_env,
    python_module,
    start_reaper,
    tail,
)
from deliverylab.waiting import wait_until

LIB = str(Path(__file__).resolve().parents[3] / "lib")


def test_a_child_that_dies_is_reported_with_its_log_tail(tmp_path):
    children = Children()
    try:
        proc = children.start("the doomed child", [sys.executable, "-c",
                              "import sys; print('line one'); sys.exit('went wrong')"],
                              tmp_path / "logs" / "doomed.log")
        proc.wait(10)
        with pytest.raises(ChildExited, match=r"the doomed child \(pid \d+\) exited with "
                                              r"code 1; log: .*doomed.log") as caught:
            children.check(proc)
        assert "went wrong" in str(caught.value.log_tail)
    finally:
        children.close()


def test_kill_takes_the_whole_process_group(tmp_path):
    children = Children()
    try:
        # the child starts a grandchild in its own group, then both sleep
        proc = children.start("parent", [sys.executable, "-c",
                              "import subprocess, sys, time; "
                              "p = subprocess.Popen([sys.executable, '-c', "
                              "'import time; time.sleep(60)']); print(p.pid, flush=True); "
                              "time.sleep(60)"], tmp_path / "parent.log", stdout_pipe=True)
        grandchild = int(proc.stdout.readline())
        children.kill(proc)
        assert proc.returncode is not None
        wait_until(f"the grandchild {grandchild} to end with its group",
                   lambda: not _alive(grandchild), 5, interval=0.05)
        assert children.alive == []
    finally:
        children.close()


def test_the_reaper_kills_a_watched_child_when_its_owner_is_gone(tmp_path):
    reaper = start_reaper()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                             start_new_session=True)
    reaper.stdin.write(f"watch {child.pid}\ncleanup {tmp_path / 'gone'}\n")
    reaper.stdin.flush()
    (tmp_path / "gone").mkdir()
    reaper.stdin.close()  # what the owner's death looks like to the reaper: EOF
    reaper.wait(10)
    assert child.wait(5) == -9
    assert not (tmp_path / "gone").exists()


def test_children_run_this_library_and_tail_reads_the_end(tmp_path):
    argv = python_module("values")
    assert argv[:3] == [sys.executable, "-m", "deliverylab.values"]
    out = subprocess.run([sys.executable, "-c", "import deliverylab; print(deliverylab.__file__)"],
                         env=child_env(), capture_output=True, text=True, timeout=30)
    assert out.stdout.startswith(LIB)  # the child runs this checkout's library
    assert child_env()["PYTHONPATH"].split(os.pathsep)[0] == LIB
    log = tmp_path / "x.log"
    log.write_text("\n".join(f"line {i}" for i in range(100)))
    assert tail(log, 2) == "line 98\nline 99"
    assert tail(tmp_path / "missing.log") == ""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped by its dead parent's init) counts as gone
        return "Z" not in Path(f"/proc/{pid}/stat").read_text().split()[2]
    except OSError:
        return False
