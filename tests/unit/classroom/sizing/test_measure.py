"""Reading and sampling memory on hand-made inputs: smaps_rollup parsing, tree sums,
peaks at one instant, a scripted child's marks and usage. The only processes started
are tiny Python scripts (one test also reads this process's own smaps_rollup, which
every Linux >= 4.14 has)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from deliverylab.classroom.sizing import measure
from deliverylab.classroom.sizing.measure import Memory, Sample
from deliverylab.errors import LabError

ROLLUP = """\
00400000-7fff12345000 ---p 00000000 00:00 0                              [rollup]
Rss:              204800 kB
Pss:              102400 kB
Pss_Dirty:         90000 kB
Pss_Anon:          80000 kB
Pss_File:          22000 kB
Pss_Shmem:           400 kB
Shared_Clean:     100000 kB
Swap:                  0 kB
SwapPss:               0 kB
Locked:                0 kB
"""

def test_parse_smaps_rollup_reads_kilobytes_as_bytes():
    m = measure.parse_smaps_rollup(ROLLUP)
    assert m == Memory(pss=102400 * 1024, rss=204800 * 1024, pss_anon=80000 * 1024,
                       pss_file=22000 * 1024, swap_pss=0)


def test_parse_smaps_rollup_refuses_a_text_without_pss():
    with pytest.raises(ValueError, match="no 'Pss:' line"):
        measure.parse_smaps_rollup("Rss: 10 kB\n")


def test_parse_smaps_rollup_names_a_malformed_line():
    with pytest.raises(ValueError, match="Pss:  12 MB"):
        measure.parse_smaps_rollup("Pss:  12 MB\n")


def test_read_memory_of_this_process_and_of_a_gone_one(tmp_path: Path):
    m = measure.read_memory(os.getpid())
    assert m is not None and 0 < m.pss <= m.rss
    (tmp_path / "77").mkdir()
    (tmp_path / "77" / "smaps_rollup").write_text(ROLLUP)
    assert measure.read_memory(77, proc=tmp_path).pss == 102400 * 1024
    assert measure.read_memory(78, proc=tmp_path) is None  # gone: not a zero


def test_tree_memory_sums_the_processes_it_could_read(monkeypatch):
    monkeypatch.setattr(measure, "tree", lambda root: [root, 11, 12])
    table = {10: Memory(100, 300), 11: Memory(50, 200), 12: None}  # 12 exited meanwhile
    total, count = measure.tree_memory(10, read=table.get)
    assert (total.pss, total.rss, count) == (150, 500, 2)


def test_pss_counts_a_shared_page_once_across_students():
    """Two students' JVMs map the same 100 MB archive: RSS counts it twice, PSS once."""
    archive = 100 * 2**20
    own = 300 * 2**20
    a = Memory(pss=own + archive // 2, rss=own + archive)
    b = Memory(pss=own + archive // 2, rss=own + archive)
    both = a + b
    assert both.pss == 2 * own + archive
    assert both.rss == 2 * own + 2 * archive


def _samples(*rows: dict[str, tuple[int, int]]) -> list[Sample]:
    return [Sample(float(i), {k: Memory(pss, rss) for k, (pss, rss) in row.items()},
                   {k: 1 for k in row}) for i, row in enumerate(rows)]


def test_peaks_take_the_total_at_one_instant_not_the_sum_of_peaks():
    samples = _samples({"s1": (10, 20), "s2": (1, 2)},
                       {"s1": (2, 3), "s2": (12, 24)},
                       {"s1": (8, 9), "s2": (8, 9)})
    p = measure.peaks(samples)
    assert p.total_pss == 16  # the third instant; the sum of peaks would be 22
    assert p.stack_pss == {"s1": 10, "s2": 12}
    assert p.stack_rss == {"s1": 20, "s2": 24}
    assert p.total_rss == 27 and p.samples == 3


def test_peaks_of_no_samples_is_an_error():
    with pytest.raises(ValueError, match="no samples"):
        measure.peaks([])


def test_sampler_samples_roots_added_later():
    calls = []

    def fake(pid: int) -> tuple[Memory, int]:
        calls.append(pid)
        return Memory(pid, pid), 1

    s = measure.Sampler({"a": 5}, measure=fake)
    s.sample()
    s.add("b", 7)
    last = s.sample()
    assert calls == [5, 5, 7] and last.total.pss == 12


def test_outlived_names_what_still_runs_and_forgets_the_gone():
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        [line] = measure.outlived([child.pid], grace=0.0)
        assert line.startswith(f"{child.pid} python")
    finally:
        child.kill()
        child.wait()
    assert measure.outlived([child.pid], grace=0.0) == []


CHILD = """
import json, sys, time
def say(e): print("PLAN " + json.dumps({"event": e, "t": time.monotonic()}), flush=True)
say("begin")
sum(range(3_000_000))  # some CPU
say("ready")
sys.stdin.read()
say("stopped")
sys.exit(int(sys.argv[1]))
"""


@pytest.mark.parametrize("code", [0, 3])
def test_a_child_s_marks_exit_and_cpu_are_read_without_losing_its_usage(tmp_path, code):
    import sys

    child = measure.Child([str(code)], "light", tmp_path / "c.log",
                       command=[sys.executable, "-c", CHILD])
    child.wait_for("ready", 30)
    assert child.cpu_at["ready"] >= child.cpu_at["begin"]
    exit_code, cpu, wall = child.wait(30)
    assert exit_code == code and cpu > 0 and wall > 0
    assert set(child.events) == {"begin", "ready", "stopped"}
    assert "PLAN" in (tmp_path / "c.log").read_text()


def test_a_child_that_dies_early_is_named_with_its_log(tmp_path):
    import sys

    child = measure.Child(["x"], "default", tmp_path / "d.log",
                       command=[sys.executable, "-c", "import sys; sys.exit(4)"])
    with pytest.raises(LabError, match=r"'x' exited \(4\) before 'ready'; its log: .*d.log"):
        child.wait_for("ready", 30)


@pytest.mark.parametrize("cmdline, part", [
    (["java", "-Xmx384m", "-cp", "libs/*", "kafka.Kafka", "server.properties"], "broker JVM"),
    (["java", "-cp", "x", "org.apache.spark.deploy.SparkSubmit", "pyspark-shell"],
     "Spark driver JVM"),
    (["python", "/lib/deliverylab/process/reaper.py"], "reapers"),
    (["python", "-m", "deliverylab.classroom.sizing.stacks", "stack", "02_at_least_once"],
     "kernel (Python)"),
    (["python", "-m", "ipykernel_launcher", "-f", "k.json"], "kernel (Python)"),
    (["sleep", "9"], "sleep"),
])
def test_each_process_is_named_by_its_part_in_the_stack(cmdline, part):
    assert measure.role(cmdline, cmdline[0]) == part


def test_the_breakdown_is_kept_at_the_peak():
    # A child of its own, with no children: the test process may have some (a test
    # session's brokers, under pytest-xdist), and their CPU would count in its tree.
    child = subprocess.Popen([sys.executable, "-c",
                              "import time\nt = time.process_time()\n"
                              "while time.process_time() - t < 0.05: pass\n"
                              "time.sleep(30)"])
    try:
        time.sleep(0.5)
        s = measure.Sampler({"me": child.pid})
        s.sample()
        assert s.breakdown["me"] and (sum(s.breakdown["me"].values())
                                      == s.samples[0].total.pss)
        assert 0 < s.cpu_seconds("me") == s.cpu["me"][child.pid]
        assert s.cpu_seconds("nobody") == 0
    finally:
        child.kill()
        child.wait()
