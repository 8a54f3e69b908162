"""The Spark JVM's own output goes to a log file, not into the student's cell: a process
launched inside ``_jvm_output`` (as pyspark launches its gateway JVM) writes to the log
for its whole life, and this process's file descriptors are restored right after."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from deliverylab.spark import session


def test_a_process_launched_inside_writes_to_the_log_and_ours_are_restored(tmp_path: Path):
    log = tmp_path / "spark.log"
    before = [os.fstat(1).st_ino, os.fstat(2).st_ino]
    # The child outlives the block, like the JVM: it writes again after we restored ours.
    code = ("import sys, time; print('WARNING: Using incubator modules', file=sys.stderr, "
            "flush=True); print('jvm stdout', flush=True); sys.stdin.readline(); "
            "print('later, from the running JVM', file=sys.stderr, flush=True)")
    with session._jvm_output(log) as where:
        child = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE)
    assert where == log
    assert [os.fstat(1).st_ino, os.fstat(2).st_ino] == before
    child.communicate(b"go\n", timeout=30)
    text = log.read_text()
    assert "WARNING: Using incubator modules" in text
    assert "jvm stdout" in text
    assert "later, from the running JVM" in text


def test_the_log_is_per_process_in_the_temporary_folder():
    assert session.jvm_log().name == f"deliverylab-spark-{os.getpid()}.log"
