"""A student's cgroup on a host with only the unified (v2) hierarchy, on a fake cgroupfs
tree in a folder (this machine runs v1: no v2 host was available to test on), and the
hub's refusal to start a class it cannot cap."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from deliverylab.classroom.hub import hub
from deliverylab.classroom.hub import limits as caps
from deliverylab.classroom.hub.limits import GROUP, V1, V2, Limits
from deliverylab.classroom.hub.settings import HubSettings
from deliverylab.errors import LabError, TimedOut
from deliverylab.waiting import wait_until


def unified(tmp_path: Path, controllers: str = "cpuset cpu io memory hugetlb pids rdma",
            swap: bool = True) -> Path:
    """The files of a v2 root as the kernel shows them (a child folder's files are made
    by the kernel at mkdir; here only those the test reads back are written)."""
    root = tmp_path / "cgroup"
    root.mkdir()
    (root / "cgroup.controllers").write_text(controllers + "\n")
    (root / "cgroup.subtree_control").write_text("\n")
    (root / "cgroup.procs").write_text("1\n")
    (root / GROUP).mkdir()  # as the kernel makes it: with its own subtree_control
    (root / GROUP / "cgroup.subtree_control").write_text("\n")
    if swap:
        (root / GROUP / "ann").mkdir()
        (root / GROUP / "ann" / "memory.swap.max").write_text("max\n")
    return root


def test_a_unified_host_is_seen_as_v2_and_a_v1_one_as_v1(tmp_path: Path):
    assert caps.hierarchy(unified(tmp_path)) == V2
    v1 = tmp_path / "v1"
    for c in ("memory", "cpu"):
        (v1 / c).mkdir(parents=True)
        (v1 / c / "cgroup.procs").write_text("")
    (v1 / "unified").mkdir()  # a hybrid host: v1's controllers win
    assert caps.hierarchy(v1) == V1
    assert caps.hierarchy(tmp_path / "none") is None


def test_v2_delegates_memory_and_cpu_down_to_the_student_and_writes_the_caps(
        tmp_path: Path):
    root = unified(tmp_path)
    limits = Limits("ann", 3 * 2**30, 1.5, root=root)
    assert limits.layout == V2 and limits.dirs == [root / GROUP / "ann"]
    limits.create()
    mine = root / GROUP / "ann"
    # each parent hands both controllers down (v2: a controller reaches a child only so)
    assert (root / "cgroup.subtree_control").read_text() == "+memory +cpu"
    assert (root / GROUP / "cgroup.subtree_control").read_text() == "+memory +cpu"
    assert (mine / "memory.max").read_text() == str(3 * 2**30)
    assert (mine / "memory.swap.max").read_text() == "0"  # no swap beyond the cap
    assert (mine / "cpu.max").read_text() == "150000 100000"
    limits.join_fn()()  # what the spawner's preexec_fn does, as root, before setuid
    assert (mine / "cgroup.procs").read_text() == str(os.getpid())
    (mine / "memory.peak").write_text("123456789\n")
    (mine / "memory.current").write_text("1000\n")
    assert (limits.peak_bytes(), limits.usage_bytes()) == (123456789, 1000)
    assert limits.reset_peak() is False  # v2 has no reset for every reader


def test_v2_hands_down_only_what_is_missing_and_memory_alone_when_asked(tmp_path: Path):
    root = unified(tmp_path, swap=False)
    (root / "cgroup.subtree_control").write_text("cpu memory pids\n")  # as the kernel lists
    Limits("ben", 2**30, None, root=root).create()
    assert (root / "cgroup.subtree_control").read_text() == "cpu memory pids\n"
    assert (root / GROUP / "cgroup.subtree_control").read_text() == "+memory"
    assert not (root / GROUP / "ben" / "cpu.max").exists()
    assert not (root / GROUP / "ben" / "memory.swap.max").exists()  # no swap accounting


def test_a_controller_the_kernel_will_not_hand_down_is_one_line_naming_the_file(
        tmp_path: Path, monkeypatch):
    root = unified(tmp_path)
    real = Path.write_text

    def busy(path: Path, text: str, *a, **kw) -> int:
        if path.name == "cgroup.subtree_control":  # processes in the folder: EBUSY
            raise OSError(16, "Device or resource busy")
        return real(path, text, *a, **kw)

    monkeypatch.setattr(Path, "write_text", busy)
    with pytest.raises(LabError) as err:
        Limits("ann", 2**30, None, root=root).create()
    assert str(err.value).startswith(f"cgroup v2: cannot enable memory in {root}/cgroup."
                                     "subtree_control: [Errno 16] Device or resource busy")
    assert "Delegate=yes" in str(err.value) and "\n" not in str(err.value)


def test_removing_a_v2_student_removes_their_folder(tmp_path: Path):
    root = unified(tmp_path, swap=False)
    limits = Limits("cat", 2**30, 1.0, root=root)
    limits.create()
    for f in (root / GROUP / "cat").iterdir():  # the kernel's files vanish with rmdir
        f.unlink()
    caps.remove_all("cat", root=root)
    assert not (root / GROUP / "cat").exists()


def test_why_not_says_what_is_missing(tmp_path: Path):
    assert caps.why_not(unified(tmp_path)) is None
    assert "no cgroup memory and cpu controllers" in caps.why_not(tmp_path / "x")
    only_cpu = tmp_path / "cpu-only"
    only_cpu.mkdir()
    (only_cpu / "cgroup.controllers").write_text("cpu pids\n")
    assert "no cgroup memory" in caps.why_not(only_cpu)


def test_a_cgroup_that_stays_busy_times_out_naming_it_and_its_pids(tmp_path: Path):
    # On the fake tree the folder keeps files, so rmdir fails as a busy cgroup's does.
    root = unified(tmp_path, swap=False)
    limits = Limits("dan", 2**30, None, root=root)
    limits.create()
    mine = root / GROUP / "dan"
    (mine / "cgroup.procs").write_text("4242\n")
    with pytest.raises(TimedOut) as err:
        limits.remove(timeout=0.3)
    assert err.value.what == f"cgroup {mine} to be removed"
    assert str(err.value).endswith("(pids still in it: {4242})")
    assert "Directory not empty" in str(err.value) and mine.exists()
    for f in mine.iterdir():  # the last process reaped: the kernel's files go with rmdir
        f.unlink()
    limits.remove(timeout=0.3)
    assert not mine.exists()


def settings(tmp_path: Path, **kw) -> HubSettings:
    return HubSettings(**{"students": ["ann"], "password": "workshop-pw",
                          "state": str(tmp_path / "state"), **kw})


def test_caps_are_on_by_default_sized_by_the_plan(tmp_path: Path):
    from deliverylab.classroom.sizing import plan

    # chapter 07's recorded peak RSS, 2263 MiB, x 1.25 = 2.76 GiB, up to 0.25: the cap
    # the plan's fit gives (classroom/sizing/sizing.json), when nothing of this host is saved
    assert settings(tmp_path).mem_limit_gb == plan.default_mem_limit_gb(tmp_path) == 3.0
    with pytest.raises(LabError, match="no memory cap per student: give --mem-limit-gb"):
        settings(tmp_path, mem_limit_gb=None)
    assert settings(tmp_path, mem_limit_gb=None, allow_uncapped=True).mem_limit_gb is None


def test_a_host_that_cannot_cap_refuses_the_class_in_one_line_unless_allowed(
        tmp_path: Path, monkeypatch):
    monkeypatch.setattr(caps, "why_not", lambda root=None: "no cgroup here")
    with pytest.raises(LabError) as err:
        hub.check_caps(settings(tmp_path))
    assert str(err.value) == ("this host cannot cap each student's memory: no cgroup here; "
                              "refusing to start the class (--allow-uncapped, make "
                              "classroom ALLOW_UNCAPPED=1: run it without caps)")
    assert hub.check_caps(settings(tmp_path, allow_uncapped=True)) == "no cgroup here"
    monkeypatch.setattr(caps, "why_not", lambda root=None: None)
    assert hub.check_caps(settings(tmp_path)) is None


@pytest.mark.skipif(os.geteuid() != 0 or not __import__(
    "deliverylab.classroom.hub.limits", fromlist=["Limits"]).Limits.available(),
    reason="needs root and a writable cgroup v1 memory/cpu hierarchy")
def test_a_students_cgroup_caps_memory_and_cpu_and_holds_its_children():
    limits = Limits(f"dlunit-{os.getpid()}", 256 * 2**20, 0.5)
    limits.create()
    proc = subprocess.Popen(["/bin/sh", "-c", "sleep 300 & exec sleep 300"],
                            preexec_fn=limits.join_fn(), start_new_session=True)
    try:
        mem = limits.root / "memory" / GROUP / limits.name
        assert int((mem / "memory.limit_in_bytes").read_text()) == 256 * 2**20
        cpu = limits.root / "cpu" / GROUP / limits.name
        assert int((cpu / "cpu.cfs_quota_us").read_text()) == 50_000
        wait_until("the shell and its background child in the cgroup",
                   lambda: len(limits.pids()) >= 2, 10, interval=0.05,
                   explain=lambda: f"; pids in the cgroup: {limits.pids()}")
        assert proc.pid in limits.pids() and limits.peak_bytes() > 0
    finally:
        for pid in limits.pids():
            os.kill(pid, 9)
        proc.wait(5)
        limits.remove()
    assert not any(d.exists() for d in limits.dirs)


def test_limits_refuse_nonsense():
    with pytest.raises(LabError, match="below 64 MiB"):
        Limits("x", 1000, None)
    with pytest.raises(LabError, match="cpu_limit=0"):
        Limits("x", None, 0)
