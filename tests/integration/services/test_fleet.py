"""Chapter 06's services on real parts: brokers, SQLite / PostgreSQL, the HTTP service,
instances in their own processes -- and nothing left when the owning kernel dies."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import psutil
import pytest

from deliverylab.chapters.side_effects.runs import run_fault
from deliverylab.cluster import Cluster
from deliverylab.nemesis import Nemesis
from deliverylab.services.fleet import SideEffects
from deliverylab.waiting import Deadline, wait_until

LIB = str(Path(__file__).resolve().parents[3] / "lib")


def _gone(pid: int) -> bool:
    return not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


@pytest.fixture(scope="module")
def cluster():
    with Cluster.start(brokers=1, proxy=True) as c:
        yield c


@pytest.mark.cluster
@pytest.mark.parametrize("database, fault", [("sqlite", "kill_after_db"),
                                             ("postgres", "lose_ack")])
def test_fault_duplicates_without_a_pattern_and_never_with_the_fixes(cluster, database,
                                                                       fault):
    lab = SideEffects(cluster, database)
    try:
        run = run_fault(lab, fault, orders=12, nemesis=Nemesis(cluster), timeout=120)
    finally:
        lab.stop()
    print(run.summary())
    none = run.effects["none"]
    assert none.duplicate_rows >= 1 and none.duplicate_calls >= 1, none.summary()
    assert none.duplicate_effects >= 1
    for pattern in ("idempotent", "outbox"):
        e = run.effects[pattern]
        assert e.duplicates == 0 and e.missing_rows == 0, e.summary()
        assert e.faults or e.input_copies, f"{pattern}: the fault never happened"
    if fault == "lose_ack":
        assert run.effects["offset_keyed"].duplicate_rows >= 1, "offset keys miss it"
    assert lab.pids == [], "stop() left processes running"


@pytest.mark.cluster
@pytest.mark.timeout(300)
def test_killed_kernel_leaves_no_database_http_service_or_instance(tmp_path):
    """A kernel restart is a SIGKILL of the kernel: the reaper takes PostgreSQL, the
    HTTP service and the service instances down, and removes their directories."""
    from jupyter_client.manager import KernelManager

    env = {**os.environ, "PYTHONPATH": LIB,
           "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"]}
    km = KernelManager(kernel_name="python3")
    km.start_kernel(env=env, cwd=str(tmp_path))
    kc = km.client()
    kc.start_channels()
    out: list[str] = []
    try:
        kc.wait_for_ready(timeout=60)
        code = ("import deliverylab as dl\n"
                "lab = dl.SideEffects('127.0.0.1:1', 'postgres')\n"
                "fleet = lab.fleet('orders', 'none', instances=2)\n"
                "print('PIDS', *lab.pids, 'DIRS', lab.workdir, lab.postgres.dir)\n")
        reply = kc.execute_interactive(code, timeout=120, output_hook=lambda m: out.append(
            m["content"].get("text", "")) if m["msg_type"] == "stream" else None)
        assert reply["content"]["status"] == "ok", reply["content"]
        kernel_pid = km.provisioner.process.pid
        os.kill(kernel_pid, signal.SIGKILL)  # as a kernel restart does
        km.provisioner.process.wait(10)
    finally:
        kc.stop_channels()
        if km.is_alive():
            km.shutdown_kernel(now=True)
        km.cleanup_resources()
    line = next(x for x in "".join(out).splitlines() if x.startswith("PIDS"))
    pids_part, dirs_part = line[5:].split(" DIRS ")
    pids = [int(p) for p in pids_part.split()]
    dirs = [Path(d) for d in dirs_part.split()]
    assert len(pids) == 4, line  # PostgreSQL, the HTTP service, two instances
    assert _gone(kernel_pid)
    deadline = Deadline(20)  # one for both waits, as before
    wait_until("the kernel's processes to end with it", lambda: all(_gone(p) for p in pids),
               deadline, interval=0.2,
               explain=lambda: f"; still running: {[p for p in pids if not _gone(p)]}")
    wait_until(f"{[str(d) for d in dirs]} to be removed",
               lambda: not any(d.exists() for d in dirs), deadline, interval=0.2)
