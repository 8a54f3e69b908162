"""The sizing arithmetic on hand-made inputs: smaps_rollup parsing, tree sums, peaks,
the marginal slope and the fit. No process is started (one test reads this process's
own smaps_rollup, which every Linux >= 4.14 has)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from deliverylab.classroom import plan
from deliverylab.classroom.plan import GB, Figures, Memory, Sample
from deliverylab.errors import BadValue, LabError

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
    m = plan.parse_smaps_rollup(ROLLUP)
    assert m == Memory(pss=102400 * 1024, rss=204800 * 1024, pss_anon=80000 * 1024,
                       pss_file=22000 * 1024, swap_pss=0)


def test_parse_smaps_rollup_refuses_a_text_without_pss():
    with pytest.raises(ValueError, match="no 'Pss:' line"):
        plan.parse_smaps_rollup("Rss: 10 kB\n")


def test_parse_smaps_rollup_names_a_malformed_line():
    with pytest.raises(ValueError, match="Pss:  12 MB"):
        plan.parse_smaps_rollup("Pss:  12 MB\n")


def test_read_memory_of_this_process_and_of_a_gone_one(tmp_path: Path):
    m = plan.read_memory(os.getpid())
    assert m is not None and 0 < m.pss <= m.rss
    (tmp_path / "77").mkdir()
    (tmp_path / "77" / "smaps_rollup").write_text(ROLLUP)
    assert plan.read_memory(77, proc=tmp_path).pss == 102400 * 1024
    assert plan.read_memory(78, proc=tmp_path) is None  # gone: not a zero


def test_tree_memory_sums_the_processes_it_could_read(monkeypatch):
    monkeypatch.setattr(plan, "tree", lambda root: [root, 11, 12])
    table = {10: Memory(100, 300), 11: Memory(50, 200), 12: None}  # 12 exited meanwhile
    total, count = plan.tree_memory(10, read=table.get)
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
    p = plan.peaks(samples)
    assert p.total_pss == 16  # the third instant; the sum of peaks would be 22
    assert p.stack_pss == {"s1": 10, "s2": 12}
    assert p.stack_rss == {"s1": 20, "s2": 24}
    assert p.total_rss == 27 and p.samples == 3


def test_peaks_of_no_samples_is_an_error():
    with pytest.raises(ValueError, match="no samples"):
        plan.peaks([])


def test_sampler_samples_roots_added_later():
    calls = []

    def measure(pid: int) -> tuple[Memory, int]:
        calls.append(pid)
        return Memory(pid, pid), 1

    s = plan.Sampler({"a": 5}, measure=measure)
    s.sample()
    s.add("b", 7)
    last = s.sample()
    assert calls == [5, 5, 7] and last.total.pss == 12


@pytest.mark.parametrize("totals, slope", [
    ({1: 1.5, 2: 2.4}, 0.9),                   # two points: their difference
    ({1: 1.5, 2: 2.4, 3: 3.3}, 0.9),           # on a line
    ({1: 1.0, 2: 2.0, 3: 2.6}, 0.8),           # least squares: (2.6 - 1.0) / 2
])
def test_marginal_is_the_slope_over_class_sizes(totals, slope):
    assert plan.marginal(totals) == pytest.approx(slope)


def test_marginal_needs_two_class_sizes():
    with pytest.raises(BadValue, match="at least two"):
        plan.marginal({1: 1.5})


FIG = Figures("light", marginal_pss=0.9 * GB, peak_rss=1.3 * GB, run_cpu_s=120.0,
              run_wall_s=200.0, start_cpu_s=30.0, start_wall_s=15.0)


def test_fit_on_a_host_of_16_cores_and_64_gb():
    f = plan.fit(FIG, cores=16, memory_gb=64.0, class_size=30)
    assert f.by_memory == int((64 - 2) / 0.9)  # 68
    assert f.by_cpu == int(16 / 0.6)  # 26: a run uses 0.6 cores on average
    assert f.students == 26
    assert f.mem_limit_gb == 1.75  # 1.3 x 1.25 = 1.625, up to 0.25
    assert f.cpu_limit == 1.0
    assert f.concurrent_spawn_limit == 8  # a start takes 2 cores
    assert f.cull_timeout_s == plan.CULL_SHORT_S  # 30 students, 26 seats
    assert "30 students, 26 seats" in f.notes[-1]
    settings = plan.hub_settings(f)
    assert "c.Spawner.mem_limit = '1.75G'" in settings
    assert "c.JupyterHub.concurrent_spawn_limit = 8" in settings
    assert "c.JupyterHub.active_server_limit = 26" in settings


def test_fit_on_this_kind_of_machine_is_bound_by_cpu():
    f = plan.fit(FIG, cores=2, memory_gb=24.0)
    assert (f.by_memory, f.by_cpu, f.students) == (24, 3, 3)
    assert f.concurrent_spawn_limit == 1
    assert f.cull_timeout_s == plan.CULL_DEFAULT_S


def test_fit_refuses_what_cannot_be_a_host():
    with pytest.raises(BadValue, match="cores=0"):
        plan.fit(FIG, cores=0, memory_gb=64)
    with pytest.raises(BadValue, match="memory_gb=1.5"):
        plan.fit(FIG, cores=4, memory_gb=1.5)


def _class_run(profile: str, n: int, total: float) -> dict:
    per = {f"s{i + 1}": {"exit": 0, "cpu_s": 100.0, "wall_s": 160.0, "passed": True,
                         "error": None, "peak_pss": total / n, "peak_rss": 1.2 * GB}
           for i in range(n)}
    return {"chapter": "02_at_least_once", "profile": profile, "students": n,
            "peak_pss": total, "peak_rss": total * 1.4, "per_student": per, "samples": 9}


def test_report_from_saved_measurements(tmp_path: Path):
    stack = {"chapter": "02_at_least_once", "profile": "default", "brokers": 1,
             "proxy": True, "spark": True, "child_driver": False, "services": False,
             "connect_workers": 0, "peak_pss": 1.1 * GB, "peak_rss": 1.4 * GB, "procs": 6,
             "start_wall_s": 14.0, "start_cpu_s": 21.0, "cpu_s": 40.0, "wall_s": 30.0,
             "samples": 50}
    (tmp_path / "stacks-default.json").write_text(json.dumps([stack]))
    for n, total in ((1, 1.2 * GB), (2, 2.2 * GB), (3, 3.2 * GB)):
        (tmp_path / f"class-default-{n}.json").write_text(json.dumps(
            _class_run("default", n, total)))
    data = plan.load(tmp_path)
    fig = plan.figures(data, "default")
    assert fig.marginal_pss == pytest.approx(1.0 * GB)
    text = plan.report(data, cores=8, memory_gb=32.0)
    assert "1.00 GB per additional student" in text
    assert "| 02_at_least_once | 1 | yes | 1.10 GB | 14, 21 |" in text
    assert "3/3" in text and "c.Spawner.mem_limit = '1.5G'" in text


def test_load_names_a_bad_file(tmp_path: Path):
    (tmp_path / "class-default-1.json").write_text("{half")
    with pytest.raises(LabError, match="class-default-1.json: not JSON"):
        plan.load(tmp_path)


def test_figures_say_what_is_missing(tmp_path: Path):
    (tmp_path / "class-light-1.json").write_text(json.dumps(_class_run("light", 1, GB)))
    with pytest.raises(LabError, match=r"have students \[1\], stack no"):
        plan.figures(plan.load(tmp_path), "light")


def test_outlived_names_what_still_runs_and_forgets_the_gone():
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        [line] = plan.outlived([child.pid], grace=0.0)
        assert line.startswith(f"{child.pid} python")
    finally:
        child.kill()
        child.wait()
    assert plan.outlived([child.pid], grace=0.0) == []


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

    child = plan.Child([str(code)], "light", tmp_path / "c.log",
                       command=[sys.executable, "-c", CHILD])
    child.wait_for("ready", 30)
    assert child.cpu_at["ready"] >= child.cpu_at["begin"]
    exit_code, cpu, wall = child.wait(30)
    assert exit_code == code and cpu > 0 and wall > 0
    assert set(child.events) == {"begin", "ready", "stopped"}
    assert "PLAN" in (tmp_path / "c.log").read_text()


def test_a_child_that_dies_early_is_named_with_its_log(tmp_path):
    import sys

    child = plan.Child(["x"], "default", tmp_path / "d.log",
                       command=[sys.executable, "-c", "import sys; sys.exit(4)"])
    with pytest.raises(LabError, match=r"'x' exited \(4\) before 'ready'; its log: .*d.log"):
        child.wait_for("ready", 30)
