"""The sizing arithmetic on hand-made inputs: the marginal slope, the fit of a host and
its hub settings, the report from saved measurements. No process is started."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from deliverylab.classroom.sizing import plan
from deliverylab.classroom.sizing.measure import GB
from deliverylab.classroom.sizing.plan import Figures
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


# --- the heaviest chapter, measured whole through a hub (issue 31) ----------------------

MIB = 2**20


def _light_folder(folder: Path, chapters: list[dict] | None) -> Path:
    """Chapter 02 measured by make classroom-plan for the light profile (stacks 1, 2, 3
    at 0.7, 1.3, 1.9 GB; its whole run 0.81 GB PSS, 0.92 GB RSS), and ``chapters`` as
    bench/hub_course.py --save writes them (none: no file)."""
    stack = {"chapter": "02_at_least_once", "profile": "light", "peak_pss": 0.7 * GB,
             "peak_rss": 0.8 * GB, "start_wall_s": 7.0, "start_cpu_s": 8.0}
    (folder / "stacks-light.json").write_text(json.dumps([stack]))
    for n, total in ((1, 0.7 * GB), (2, 1.3 * GB), (3, 1.9 * GB)):
        run = _class_run("light", n, total)
        run["peak_rss"] = run["per_student"]["s1"]["peak_rss"] = 0.8 * GB
        (folder / f"class-light-{n}.json").write_text(json.dumps(run))
    whole = _class_run("light", 1, 0.81 * GB)
    whole["per_student"]["s1"].update(peak_rss=0.92 * GB, cpu_s=18.0, wall_s=56.0)
    (folder / "chapter-light.json").write_text(json.dumps(whole))
    if chapters is not None:
        (folder / "chapters-light.json").write_text(json.dumps(chapters))
    return folder


def _row(chapter: str, pss: int | None, rss: int | None, cgroup: int | None,
         held: bool = True, students: int = 1) -> dict:
    return {"chapter": chapter, "students": students,
            "peak_pss": None if pss is None else pss * MIB,
            "peak_rss": None if rss is None else rss * MIB,
            "cgroup_peak": None if cgroup is None else cgroup * MIB,
            "wall_s": 100.0, "held": held}


def test_a_heavier_chapter_raises_the_limit_and_lowers_the_seats(tmp_path: Path):
    (tmp_path / "a").mkdir()
    base = plan.figures(plan.load(_light_folder(tmp_path / "a", None)), "light")
    rows = [_row("02_at_least_once", 919, 1014, 1190),
            _row("00_tour", 1049, None, 1029),  # no RSS sampled: counts for PSS only
            _row("05_spark_pipeline", 1346, 1521, 1363),
            _row("07_exactly_once_sources", 1976, 2263, 2867)]
    (tmp_path / "b").mkdir()
    data = plan.load(_light_folder(tmp_path / "b", rows))
    fig = plan.figures(data, "light")
    # chapter 02 alone: 0.6 GB a stack + 0.11 GB its whole run adds; the limit its RSS
    assert base.marginal_pss == pytest.approx(0.71 * GB)
    assert base.peak_rss == pytest.approx(0.92 * GB)
    assert fig.limit_chapter == fig.seat_chapter == "07_exactly_once_sources"
    assert fig.peak_rss == 2263 * MIB
    # a seat holds chapter 07's run: 1976 - 919 MiB above chapter 02's, both via the hub
    assert fig.marginal_pss == pytest.approx(0.71 * GB + (1976 - 919) * MIB)
    old, new = plan.fit(base, 16, 64.0), plan.fit(fig, 16, 64.0)
    assert (old.mem_limit_gb, new.mem_limit_gb) == (1.25, 3.0)  # 2263 MiB x 1.25 = 2.76
    assert (old.by_memory, new.by_memory) == (87, 35)  # 62 GB / 0.71, / 1.74
    assert new.students == 35 < old.students == 49  # memory binds now, not CPU
    text = plan.report(data, cores=16, memory_gb=64.0)
    assert "memory limit set by 07_exactly_once_sources, memory per seat 1.74 GB set by " \
           "07_exactly_once_sources" in text
    assert "memory limit from 07_exactly_once_sources's peak RSS 2.21 GB x 1.25" in text
    assert "+ 1.03 GB for 07_exactly_once_sources, whose run peaks at PSS 1.93 GB against " \
           "02_at_least_once's 0.90 GB (both through the hub, 1 student(s) at once)" in text
    assert "c.Spawner.mem_limit = '3G'" in text
    assert "| light | 07_exactly_once_sources | 1 | 1.93 GB | 2.21 GB | 2.80 GB | 100 | held |" \
        in text and "| light | 00_tour | 1 | 1.02 GB | - | 1.00 GB |" in text
    assert "not measured whole, so not covered: 01_at_most_once, 02b_consumer_groups, " \
           "03_idempotent_producer, 04_transactions, 06_side_effects, 08_cost_of_guarantees, " \
           "09_kafka_bugs" in text


def test_without_chapter_02_through_the_hub_the_papermill_run_is_the_reference(
        tmp_path: Path):
    data = plan.load(_light_folder(tmp_path, [_row("07_exactly_once_sources", 1976, 2263,
                                                   2867, students=3)]))
    fig = plan.figures(data, "light")
    assert fig.marginal_pss == pytest.approx(0.71 * GB + 1976 * MIB - 0.81 * GB)
    assert any("07_exactly_once_sources through the hub, 02_at_least_once without one: "
               "papermill in place of the server" in n for n in fig.notes)


def test_rows_of_different_class_sizes_are_compared_as_measured_and_said(tmp_path: Path):
    fig = plan.figures(plan.load(_light_folder(tmp_path, [
        _row("02_at_least_once", 880, 1000, 1199, students=3),
        _row("07_exactly_once_sources", 1976, 2263, 2867)])), "light")
    assert fig.marginal_pss == pytest.approx(0.71 * GB + (1976 - 880) * MIB)
    assert any("both through the hub, 1 and 3 students at once" in n for n in fig.notes)


def test_a_lighter_chapter_changes_nothing_and_a_failed_run_is_said(tmp_path: Path):
    fig = plan.figures(plan.load(_light_folder(tmp_path, [
        _row("02_at_least_once", 919, 1014, 1190),
        _row("03_idempotent_producer", 874, 961, 801, held=False)])), "light")
    assert (fig.limit_chapter, fig.peak_rss) == ("02_at_least_once", 1014 * MIB)
    assert fig.seat_chapter == "02_at_least_once"
    assert fig.marginal_pss == pytest.approx(0.71 * GB)
    assert any("03_idempotent_producer's claim did not hold" in n for n in fig.notes)


def test_with_no_chapter_measured_whole_the_report_says_what_to_run(tmp_path: Path):
    data = plan.load(_light_folder(tmp_path, None))
    fig = plan.figures(data, "light")
    assert (fig.limit_chapter, fig.seat_chapter) == ("02_at_least_once",) * 2
    assert fig.peak_rss == pytest.approx(0.92 * GB)
    text = plan.report(data, cores=2, memory_gb=24.0)
    assert "c.Spawner.mem_limit = '1.25G'" in text
    assert "the limit and the seats cover 02_at_least_once only" in text
    assert ("bench/hub_course.py --students 1 --profile light --chapters 00 01 02 02b 03 04 05 "
            f"06 07 08 09 --save {tmp_path}") in text
    assert "(none measured: bench/hub_course.py --save)" in text


@pytest.mark.parametrize(("text", "says"), [
    ("{half", "not JSON"),
    ('{"chapter": "07"}', "not a list but dict"),
    ('[{"chapter": "07_exactly_once_sources"}]', "row 0 lacks students, peak_pss"),
    (json.dumps([{**_row("07_exactly_once_sources", 1976, 2263, 2867), "peak_rss": "2G"}]),
     "row 0 (07_exactly_once_sources): peak_rss='2G'"),
])
def test_a_bad_chapters_file_is_named_in_one_line(tmp_path: Path, text: str, says: str):
    _light_folder(tmp_path, None)
    (tmp_path / "chapters-light.json").write_text(text)
    with pytest.raises(LabError, match=re.escape(says)) as err:
        plan.load(tmp_path)
    assert str(err.value).startswith(f"{tmp_path / 'chapters-light.json'}: ")
    assert "\n" not in str(err.value)


def test_a_class_file_without_its_fields_is_named(tmp_path: Path):
    (tmp_path / "class-light-1.json").write_text('{"students": 1}')
    with pytest.raises(LabError, match=r"class-light-1.json: not a measurement .* 'profile'"):
        plan.load(tmp_path)


# --- the record: one sizing for doctor, the hub's default cap, Kubernetes, the guides ----

ROOT = Path(__file__).resolve().parents[4]


@pytest.mark.parametrize("cores, memory, light_students, spawn", [
    (2, 24.0, 6, 1), (8, 32.0, 17, 7), (16, 64.0, 35, 14), (32, 128.0, 72, 28)])
def test_the_record_gives_the_guides_table(cores, memory, light_students, spawn):
    """The checked-in record reproduces the fit both guides print, row by row: the
    figures a reader meets are the ones the code sizes with."""
    f = plan.fit(plan.recorded("light"), cores, memory)
    assert (f.students, f.mem_limit_gb, f.concurrent_spawn_limit, f.cpu_limit) == (
        light_students, 3.0, spawn, 1.0)
    row = f"| {cores} cores, {memory:g} GB"
    for guide in ("docs/instructors.md", "docs/measurements.md"):
        line = next(ln for ln in (ROOT / guide).read_text().splitlines()
                    if ln.startswith(row))
        assert f"| {light_students} (" in line and f"concurrent_spawn_limit={spawn}`" in line
    assert round(plan.recorded("light").marginal_pss / GB, 2) == 1.74
    assert "30 x 1.74 + 2 = 54 GB" in (ROOT / "docs/instructors.md").read_text()


def test_a_record_round_trips_and_a_bad_one_is_named(tmp_path: Path):
    path = tmp_path / "sizing.json"
    path.write_text(plan.record_text([FIG], {"peak_rss": 2 * GB}, "hand-made"))
    got = plan.recorded("light", path)
    assert (got.marginal_pss, got.peak_rss, got.run_cpu_s) == (0.9 * GB, 1.3 * GB, 120.0)
    with pytest.raises(BadValue, match="profile='default'"):
        plan.recorded("default", path)
    path.write_text(json.dumps({"profiles": {"light": {"peak_rss": 1}}, "one_student": {}}))
    with pytest.raises(LabError, match="profile light lacks marginal_pss"):
        plan.recorded("light", path)
    path.write_text("{half")
    with pytest.raises(LabError, match="sizing.json: not a sizing record"):
        plan.read_record(path)


def test_a_saved_heavier_chapter_raises_the_default_cap_above_the_records(tmp_path: Path):
    assert plan.default_mem_limit_gb(tmp_path) == 3.0  # nothing saved: the record's
    (tmp_path / "chapters-light.json").write_text(json.dumps([_row("08_cost", 3000, 3100,
                                                                   3300)]))
    assert plan.default_mem_limit_gb(tmp_path) == 4.0  # 3100 MiB x 1.25 = 3.78, up


def test_without_measurements_the_plan_prints_the_recorded_fit(tmp_path: Path, capsys):
    assert plan.main(["--out", str(tmp_path), "--cores", "16", "--memory", "64"]) == 0
    out = capsys.readouterr()
    assert "the fit from the recorded figures" in out.err
    assert "### Profile light (recorded) on 16 cores, 64.0 GB\n35 students" in out.out
    assert "c.Spawner.mem_limit = '3G'" in out.out


def test_record_writes_the_measured_figures(tmp_path: Path, capsys):
    folder = tmp_path / "m"
    folder.mkdir()
    _light_folder(folder, [_row("02_at_least_once", 919, 1014, 1190),
                           _row("07_exactly_once_sources", 1976, 2263, 2867)])
    out = tmp_path / "sizing.json"
    assert plan.main(["--out", str(folder), "--record", str(out), "--cores", "2",
                      "--memory", "24"]) == 0
    got = plan.recorded("light", out)
    assert got.peak_rss == 2263 * MIB and got.limit_chapter == "07_exactly_once_sources"
    assert plan.read_record(out)["one_student"] == plan.read_record()["one_student"]
