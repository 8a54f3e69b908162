"""The sizing arithmetic on hand-made inputs: the marginal slope, the fit of a host and
its hub settings, the report from saved measurements. No process is started."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deliverylab.classroom import plan
from deliverylab.classroom.measure import GB
from deliverylab.classroom.plan import Figures
from deliverylab.errors import BadValue, LabError


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
             "samples": 50, "parts": {"broker JVM": GB // 4, "Spark driver JVM": GB // 2}}
    (tmp_path / "stacks-default.json").write_text(json.dumps([stack]))
    for n, total in ((1, 1.2 * GB), (2, 2.2 * GB), (3, 3.2 * GB)):
        (tmp_path / f"class-default-{n}.json").write_text(json.dumps(
            _class_run("default", n, total)))
    # the whole chapter peaks 0.1 GB above its stack alone (the grader's children...)
    (tmp_path / "chapter-default.json").write_text(json.dumps(
        _class_run("default", 1, 1.3 * GB)))
    data = plan.load(tmp_path)
    fig = plan.figures(data, "default")
    assert fig.marginal_pss == pytest.approx(1.1 * GB)  # 1.0 per stack + 0.1
    assert fig.peak_rss == pytest.approx(1.2 * 1.4 * GB)  # the larger of the two runs
    assert (fig.run_cpu_s, fig.run_wall_s) == (100.0, 160.0)
    text = plan.report(data, cores=8, memory_gb=32.0)
    assert "1.00 GB per additional student (stacks); + 0.10 GB the whole chapter adds = " \
           "**1.10 GB with chapter 02 running**" in text
    assert "| 02_at_least_once | 1 + proxy | yes | 1.10 GB | 14 (21) |" in text
    assert "| 03_idempotent_producer | 1 + proxy | yes | same stack as 02_at_least_once |" \
        in text
    assert "00_tour" not in text  # neither measured nor the same as one measured
    assert "| default | 3 (stack) | 3.20 GB |" in text
    assert "c.Spawner.mem_limit = '2.25G'" in text  # 1.68 GB x 1.25, up to 0.25
    assert "### Profile light: no fit yet" in text
    assert "| Spark driver JVM | 0.50 |" in text and "| **total** | **0.75** |" in text


def test_load_names_a_bad_file(tmp_path: Path):
    (tmp_path / "class-default-1.json").write_text("{half")
    with pytest.raises(LabError, match="class-default-1.json: not JSON"):
        plan.load(tmp_path)


def test_figures_say_what_is_missing(tmp_path: Path):
    (tmp_path / "class-light-1.json").write_text(json.dumps(_class_run("light", 1, GB)))
    with pytest.raises(LabError, match=r"have students \[1\], stack no, chapter run no"):
        plan.figures(plan.load(tmp_path), "light")
