"""Chapter 04's live zombie without brokers: the verdict on a hand-written History, and
the pause detection on a real stopped child process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from deliverylab.chapters.transactions.zombie import GENERATION_FENCING, _stopped, judge
from deliverylab.history import History, Read
from deliverylab.waiting import wait_until

IN, OUT = "zin", "zout"


def history(zombie_error: str | None) -> History:
    """orders writes 0..3; instance-a commits 0..1, pauses in txn-2 after writing 2..3;
    instance-b copies 2..3 and commits; instance-a resumes and is refused."""
    h = History()
    for i in range(4):
        h.record("orders", "send", "ok", [f"orders:{i}"], topic=IN, partition=0, offset=i)
    a1, a2, b1 = "instance-a/txn-1", "instance-a/txn-2", "instance-b/txn-1"
    h.record("instance-a", "begin_txn", "ok", txn=a1)
    for i in range(2):
        h.record("instance-a", "send", "ok", [f"orders:{i}"], topic=OUT, partition=0,
                 offset=i, txn=a1)
    h.record("instance-a", "send_offsets", "ok", txn=a1, detail=f"{IN}/0@2")
    h.record("instance-a", "commit_txn", "ok", txn=a1)
    h.record("instance-a", "begin_txn", "ok", txn=a2)
    for i in (2, 3):  # offsets 3, 4 (2 is txn-1's marker)
        h.record("instance-a", "send", "ok", [f"orders:{i}"], topic=OUT, partition=0,
                 offset=i + 1, txn=a2)
    h.record("instance-a", "fault", "info", fault="zombie_producer", txn=a2)
    h.record("instance-b", "begin_txn", "ok", txn=b1)
    for i in (2, 3):
        h.record("instance-b", "send", "ok", [f"orders:{i}"], topic=OUT, partition=0,
                 offset=i + 3, txn=b1)
    h.record("instance-b", "send_offsets", "ok", txn=b1, detail=f"{IN}/0@4")
    h.record("instance-b", "commit_txn", "ok", txn=b1)
    if zombie_error:
        h.record("instance-a", "send_offsets", "fail", txn=a2, error=zombie_error)
        h.record("instance-a", "abort_txn", "ok", txn=a2)
    else:
        h.record("instance-a", "send_offsets", "ok", txn=a2)
        h.record("instance-a", "commit_txn", "ok", txn=a2)
    return h


def reads(zombie_committed: bool) -> tuple[list[Read], list[Read]]:
    inp = [Read(IN, 0, i, f"orders:{i}") for i in range(4)]
    a_first = [Read(OUT, 0, i, f"orders:{i}") for i in range(2)]
    zombie = [Read(OUT, 0, 3, "orders:2"), Read(OUT, 0, 4, "orders:3")]
    b = [Read(OUT, 0, 6, "orders:2"), Read(OUT, 0, 7, "orders:3")]
    committed = inp + a_first + (zombie if zombie_committed else []) + b
    return committed, a_first + zombie + b


def test_a_fenced_zombie_leaves_nothing_visible_and_the_output_exactly_once():
    committed, uncommitted = reads(zombie_committed=False)
    z = judge(history("ILLEGAL_GENERATION"), committed, uncommitted, (IN, OUT), 9.0)
    assert z.fenced_by_generation and z.zombie_call == "send_offsets"
    assert (z.zombie_records, z.visible_committed, z.visible_uncommitted) == (2, 0, 2)
    assert z.result.counts["pipeline_extra"] == 0 and z.result.counts["pipeline_missing"] == 0
    assert z.facts["instance_b_commits"] == 1 and "ILLEGAL_GENERATION" in z.summary()


def test_a_zombie_that_got_through_is_reported_with_its_copies():
    committed, uncommitted = reads(zombie_committed=True)
    z = judge(history(None), committed, uncommitted, (IN, OUT), 9.0)
    assert not z.fenced_by_generation and z.zombie_error is None
    assert z.visible_committed == 2 and z.result.counts["pipeline_extra"] == 2


def test_generation_fencing_names_the_coordinators_answers():
    assert {"ILLEGAL_GENERATION", "UNKNOWN_MEMBER_ID"} <= GENERATION_FENCING


def test_a_child_that_stopped_itself_is_seen_stopped(tmp_path: Path):
    flag = tmp_path / "paused"
    code = (f"import os, signal, pathlib; pathlib.Path({str(flag)!r}).touch(); "
            "os.kill(os.getpid(), signal.SIGSTOP)")
    proc = subprocess.Popen([sys.executable, "-c", code])
    try:
        wait_until("the child to stop itself (SIGSTOP)", lambda: _stopped(proc.pid, flag), 10,
                   interval=0.05)
        assert proc.poll() is None  # stopped, not reaped
    finally:
        os.kill(proc.pid, signal.SIGCONT)
        proc.wait(10)
    assert proc.returncode == 0
