"""Exercise 05's driver server without Spark: its protocol and how it names each end,
against a stand-in server -- the real server's loop (:func:`spark_server.main`) with a
``serve_one`` that does what the spec says instead of running a driver. What a real
driver does in it is judged on real brokers in tests/integration/grade."""

from __future__ import annotations

import functools
import json
import logging
import os
import sys
import uuid
from pathlib import Path

import psutil
import pytest

from deliverylab.grade import spark_child
from deliverylab.grade import spark_server as S
from deliverylab.grade.child import RAISED, load_solution
from deliverylab.history import read_json_lines
from deliverylab.waiting import wait_until

#: The stand-in: the server's own loop, each spec acted out by ``act``; its warm-up, by
#: $STAND_IN_WARM: seconds to sleep (default 0), ``fail`` (an error: the server goes on
#: cold) or ``exit`` (the process dies before it takes any spec). Never Spark.
STAND_IN = """
import json, os, signal, sys, time
from pathlib import Path
from deliverylab.grade import spark_server as S

def warm_up():
    how = os.environ.get("STAND_IN_WARM", "0")
    if how == "fail":
        raise RuntimeError("no Spark here")
    if how == "exit":
        os._exit(7)
    time.sleep(float(how))

def act(path, shared=True):
    spec = json.loads(Path(path).read_text())
    Path(spec["pid"]).write_text(f"{os.getpid()} {shared}")
    how = spec["act"]
    if how == "raised":
        return 3
    if how == "error":
        print("Traceback (most recent call last):", file=sys.stderr)
        print("RuntimeError: the grader's driver failed", file=sys.stderr)
        return 1
    if how == "hang":
        time.sleep(60)
    if how == "exit":  # the student's sys.exit(4) in their setup(db)
        sys.exit(4)
    if how == "kill":  # the student's os.killpg of their own driver: kill_driver's too
        os.killpg(os.getpgrp(), signal.SIGKILL)
    print(f"served {spec['process']}")
    return 0

S.warm_up, S.serve_one = warm_up, act
sys.exit(S.main())
"""


#: The stand-in server's command line.
ARGV = [sys.executable, "-u", "-c", STAND_IN]


@pytest.fixture
def server():
    drivers = S.DriverServer(ARGV)
    yield drivers
    drivers.close()


def serve(drivers: S.DriverServer, tmp_path: Path, act: str, process: str = "driver-0",
          limit: float = 30.0, alone: bool = False) -> tuple[tuple[str, str], int]:
    """One spec served (``alone``: in a spare); returns its ending and the pid of the
    server that served it."""
    work = tmp_path / f"{act}-{process}-{uuid.uuid4().hex[:8]}"
    work.mkdir()
    spec = {"process": process, "act": act, "pid": str(work / "pid")}
    ended = (drivers.serve_alone if alone else drivers.serve)(spec, work, limit)
    return ended, int((work / "pid").read_text().split()[0])


def gone(pid: int) -> bool:
    return not psutil.pid_exists(pid)


def test_one_server_serves_spec_after_spec_until_closed(server, tmp_path: Path):
    assert server.starts == 0  # nothing runs before the first spec
    first, pid = serve(server, tmp_path, "done")
    second, again = serve(server, tmp_path, "done", "driver-1")
    assert first == second == ("done", "") and again == pid and server.starts == 1
    assert "served driver-1" in server.log.read_text()
    home = server.home
    server.close()
    assert gone(pid) and not home.exists()


def test_the_students_raise_is_raised_and_the_server_goes_on(server, tmp_path: Path):
    assert serve(server, tmp_path, "raised")[0] == ("raised", "")
    _, pid = serve(server, tmp_path, "done")
    assert server.starts == 1 and not gone(pid)


def test_a_failed_driver_is_an_error_with_its_own_log_tail_and_a_fresh_server(
        server, tmp_path: Path):
    _, first = serve(server, tmp_path, "done")
    (ended, err), pid = serve(server, tmp_path, "error")
    assert ended == "error" and pid == first
    # the tail is this spec's: the line the spec before wrote is not in it
    assert err.splitlines() == ["Traceback (most recent call last):",
                                "RuntimeError: the grader's driver failed"]
    assert gone(pid)  # its Spark may be in a bad state: replaced
    _, after = serve(server, tmp_path, "done")
    assert after != pid and server.starts == 2


def test_a_spec_not_served_in_time_kills_the_server_and_is_a_timeout(server, tmp_path: Path):
    serve(server, tmp_path, "done")  # started (imports paid) before the short limit
    (ended, err), pid = serve(server, tmp_path, "hang", limit=1.0)
    assert (ended, err) == ("timeout", "driver-0 still ran after 1 s: killed")
    assert gone(pid)
    assert serve(server, tmp_path, "done")[0] == ("done", "") and server.starts == 2


@pytest.mark.parametrize("act, ending", [("exit", "error"), ("kill", "killed")])
def test_a_student_who_ends_the_server_is_named_as_a_fresh_driver_would_be(
        server, tmp_path: Path, act: str, ending: str):
    (ended, _), pid = serve(server, tmp_path, act, "driver-1")
    assert ended == ending and gone(pid)
    assert serve(server, tmp_path, "done")[0] == ("done", "") and server.starts == 2


def test_a_server_that_died_between_specs_is_replaced(server, tmp_path: Path):
    _, pid = serve(server, tmp_path, "done")
    os.killpg(pid, 9)
    server._main.proc.wait(10)
    assert serve(server, tmp_path, "done")[0] == ("done", "") and server.starts == 2


def test_serving_one_spec_names_its_end_as_the_fresh_child_exits(monkeypatch, tmp_path: Path,
                                                                capsys):
    spec = tmp_path / "driver-0.json"
    spec.write_text(json.dumps({"process": "driver-0"}))
    asked = []

    def raises(spec: dict, shared: bool = False) -> int:
        asked.append(shared)
        raise RuntimeError("no Spark here")

    monkeypatch.setattr(spark_child, "run", raises)
    assert S.serve_one(str(spec)) == 1 and S.serve_one(str(spec), shared=False) == 1
    assert asked == [True, False]  # a spare's one driver has the process to itself
    assert "RuntimeError: no Spark here" in capsys.readouterr().err
    monkeypatch.setattr(spark_child, "run", lambda spec, shared=False: RAISED)
    assert S.serve_one(str(spec)) == RAISED


def test_each_spec_imports_the_students_module_afresh(tmp_path: Path):
    # What a kill_driver restart must not inherit from the killed driver's memory.
    path = tmp_path / "solution.py"
    path.write_text("SEEN = []\n\ndef write_batch(df, batch_id, db):\n    SEEN.append(1)\n")
    first = load_solution(str(path), "write_batch")
    first(None, 0, None)
    second = load_solution(str(path), "write_batch")
    assert second.module is not first.module and second.module.SEEN == []


def test_grade_closes_its_driver_server_when_a_run_raises(monkeypatch, tmp_path: Path):
    import deliverylab as dl
    from deliverylab.grade import exercise, spark_run

    served: list[tuple[S.DriverServer, int]] = []
    monkeypatch.setattr(S, "DriverServer", functools.partial(S.DriverServer, ARGV))

    def run_spark(ex, path, fault, seed, cluster, point=None, drivers=None):
        served.append((drivers, serve(drivers, tmp_path, "done")[1]))
        raise RuntimeError("the run broke")

    monkeypatch.setattr(spark_run, "run_spark", run_spark)
    with pytest.raises(RuntimeError, match="the run broke"):
        dl.grade("05", exercise("05").reference, cluster=object(), show=False)
    drivers, pid = served[0]
    assert gone(pid) and drivers.home is None


def test_grade_runs_in_the_callers_driver_server_and_leaves_it_open(monkeypatch,
                                                                    tmp_path: Path):
    """A caller grading several solutions (the calibration) hands grade() its server:
    every run of both grades is served by it, one process, still running after."""
    import deliverylab as dl
    from deliverylab.grade import exercise, spark_run

    pids: list[int] = []

    def run_spark(ex, path, fault, seed, cluster, point=None, drivers=None):
        pids.append(serve(drivers, tmp_path, "done")[1])
        raise RuntimeError("enough")

    monkeypatch.setattr(spark_run, "run_spark", run_spark)
    with S.DriverServer(ARGV) as mine:
        for _ in range(2):
            with pytest.raises(RuntimeError, match="enough"):
                dl.grade("05", exercise("05").reference, cluster=object(), show=False,
                         drivers=mine)
        assert len(pids) == 2 and len(set(pids)) == 1 and not gone(pids[0])
        assert mine.starts == 1
    assert gone(pids[0]) and mine.home is None


# --- warm servers and spares --------------------------------------------------------


@pytest.fixture
def noted():
    """What the driver servers write to the lab's log, as a list of messages."""
    messages: list[str] = []

    class Note(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            messages.append(record.getMessage())

    handler = Note()
    log = logging.getLogger(S.__name__)
    log.addHandler(handler)
    yield messages
    log.removeHandler(handler)


def records(drivers: S.DriverServer, which: str = "spare-driver-1") -> list[dict]:
    """What one server (``driver-server``: the main one) appended to its results file."""
    return list(read_json_lines(drivers.home / f"{which}.jsonl").records)


def wait_for(what: str, probe, limit: float = 20.0):
    """``probe``'s first truthy answer within ``limit`` seconds (the lab's one wait)."""
    return wait_until(what, probe, limit, interval=0.05)


def test_start_warms_the_main_server_before_any_spec(server, tmp_path: Path):
    server.start()
    pid = server._main.proc.pid
    wait_for("its warm-up", lambda: any(r.get("warm") is not None for r in
                                        records(server, "driver-server")))
    (ended, _), served_by = serve(server, tmp_path, "done")
    assert ended == "done" and served_by == pid and server.starts == 1
    server.start()  # running: nothing new
    assert server.starts == 1 and server.spare_starts == 0


def test_a_spare_serves_one_driver_in_a_process_of_its_own_and_the_next_warms_at_once(
        server, tmp_path: Path):
    """kill_driver's driver-0: a spare started ahead, killed by the spec's own SIGKILL of
    its process group (the fault); the next spare is up before the next spec, and none
    once the last one due was served."""
    server.spares(2)
    first = server._spares[0].proc.pid  # warming before any spec was sent
    assert server.starts == 0  # the main server is not involved
    (ended, err), pid = serve(server, tmp_path, "kill", alone=True)
    assert (ended, err) == ("killed", "") and pid == first and gone(first)
    second = server._spares[0].proc.pid  # started once the first was warm
    assert second != first and server._spares[0].up()
    (ended, _), pid = serve(server, tmp_path, "done", "driver-0", alone=True)
    assert ended == "done" and pid == second
    assert gone(second) and server._spares == [] and server.spare_starts == 2
    # a spare's one driver has the process to itself (no shared session)
    assert (tmp_path.glob("done-driver-0-*/pid").__next__().read_text().split()[1]
            == "False")
    assert server.starts == 0


def test_a_spare_still_warming_serves_its_spec_once_warm(server, tmp_path: Path,
                                                          monkeypatch):
    monkeypatch.setenv("STAND_IN_WARM", "1.0")
    server.spares(1)
    assert serve(server, tmp_path, "kill", alone=True)[0] == ("killed", "")
    kinds = [next(iter(r)) for r in records(server)]
    assert kinds[:2] == ["pid", "took"]  # warm first, then the spec: Spark was up


def test_a_spare_whose_warm_up_failed_serves_cold_as_a_fresh_driver_would(
        server, tmp_path: Path, monkeypatch):
    # The driver starts Spark itself then, and fails (or not) as a fresh process would.
    monkeypatch.setenv("STAND_IN_WARM", "fail")
    server.spares(1)
    assert serve(server, tmp_path, "done", alone=True)[0] == ("done", "")
    assert "RuntimeError: no Spark here" in (server.home / "spare-driver-1.log").read_text()


def test_a_spare_that_died_before_its_spec_is_replaced_and_the_log_says_so(
        server, tmp_path: Path, noted):
    server.spares(1)
    dead = server._spares[0].proc.pid
    os.killpg(dead, 9)
    server._spares[0].proc.wait(10)
    (ended, _), pid = serve(server, tmp_path, "kill", alone=True)
    assert ended == "killed" and pid != dead and server.spare_starts == 2
    assert any(f"pid {dead}) exited with code -9 before it was used" in m for m in noted)


def test_a_server_that_dies_before_it_takes_the_spec_is_replaced_once_never_judged(
        server, tmp_path: Path, monkeypatch, noted):
    """Dying before the student's code ran is the grader's failure: a fresh server gets
    the spec once; a second such death is an error, never ``done`` (its exit code 0
    would read so) nor ``killed`` (the fault)."""
    monkeypatch.setenv("STAND_IN_WARM", "exit")
    ended, err = server.serve_alone({"process": "driver-0"}, tmp_path, 30.0)
    assert ended == "error" and "exited (code 7) twice before it took driver-0" in err
    assert server.spare_starts == 2
    assert any("before it took driver-0's spec; a fresh one serves it" in m for m in noted)


def test_a_spare_not_done_in_time_is_killed_and_a_timeout(server, tmp_path: Path):
    server.spares(1)
    wait_for("its warm-up", lambda: records(server))  # its imports paid before the limit
    (ended, err), pid = serve(server, tmp_path, "hang", limit=2.0, alone=True)
    assert (ended, err) == ("timeout", "driver-0 still ran after 2 s: killed") and gone(pid)


def test_spares_zero_stops_the_spares_nobody_will_use(server, monkeypatch):
    monkeypatch.setenv("STAND_IN_WARM", "30")
    server.spares(3)
    pid = server._spares[0].proc.pid
    server.spares(3)  # one is still starting its Spark: no second yet
    assert server.spare_starts == 1
    server.spares(0)
    assert gone(pid) and server._spares == []


def test_spares_start_one_spark_start_at_a_time_and_at_most_spares_max(
        server, monkeypatch):
    """The main server's start first, then one spare after another, each once the one
    before is warm: two Spark starts at once would slow the one a run waits for."""
    monkeypatch.setenv("STAND_IN_WARM", "0.5")
    server.start()
    server.spares(5)
    assert server.spare_starts == 0  # the main server is still starting
    starts = []

    def look() -> bool:
        server.tend()
        if server.spare_starts > len(starts):  # one just started: the others were warm
            starts.append([s.warm_after() is not None for s in
                           [server._main, *server._spares[:-1]]])
        return server.spare_starts >= S.SPARES_MAX and all(
            s.warm_after() is not None for s in server._spares)

    wait_for("the spares", look)
    assert starts == [[True], [True, True]][:S.SPARES_MAX]
    server.tend()
    assert len(server._spares) == server.spare_starts == S.SPARES_MAX


def test_a_server_idle_too_long_exits_by_itself_and_the_next_spec_gets_a_fresh_one(
        tmp_path: Path):
    with S.DriverServer(ARGV, idle=0.5) as drivers:
        drivers.start()
        first = drivers._main.proc
        first.wait(20)  # nobody sent a spec: it left
        assert first.returncode == 0
        (ended, _), pid = serve(drivers, tmp_path, "done")
        assert ended == "done" and pid != first.pid and drivers.starts == 2


def test_the_servers_die_with_the_grading_process(tmp_path: Path):
    """A kernel restart SIGKILLs the grading process: its reaper takes the main server
    and the spare (their JVMs: their process groups) down, and removes their folder."""
    script = f"""
import os, signal, sys
from deliverylab.grade.spark_server import DriverServer
drivers = DriverServer({ARGV!r})
drivers.spares(1)
drivers.start()
print(drivers._main.proc.pid, drivers._spares[0].proc.pid, drivers.home, flush=True)
sys.stdin.readline()
os.kill(os.getpid(), signal.SIGKILL)
"""
    import subprocess

    owner = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": str(Path(S.__file__)
                                                                  .parents[2])})
    main, spare, home = owner.stdout.readline().split()
    assert not gone(int(main)) and not gone(int(spare))
    owner.stdin.write("\n")
    owner.stdin.flush()
    owner.wait(20)
    wait_for("the reaper", lambda: gone(int(main)) and gone(int(spare))
             and not Path(home).exists())


def test_warm_ahead_asks_for_spares_lead_runs_before_the_first_kill_driver():
    from deliverylab.grade.spark_run import warm_ahead

    class Drivers:
        asked: list[int] = []

        def spares(self, due: int) -> None:
            self.asked.append(due)

    d = Drivers()
    cq, kd = "crash_query", "kill_driver"
    warm_ahead(d, [cq, cq, cq, cq, kd], lead=3)  # four runs ahead: not yet
    assert d.asked == []
    warm_ahead(d, [cq, cq, cq, kd, kd, kd], lead=3)
    warm_ahead(d, [kd, kd], lead=3)
    warm_ahead(d, [cq], lead=3)
    assert d.asked == [3, 2]


def test_grade_warms_its_servers_ahead_and_lists_runs_in_the_registrys_order(
        monkeypatch, tmp_path: Path):
    """A quick grade of 05 on stand-ins: the main server is up before the first run;
    each kill_driver's driver-0 is served by a spare already up when its run began, a
    process of its own, and no spare starts after the last; the report lists
    crash_query's points, then kill_driver's."""
    import deliverylab as dl
    from deliverylab.grade import exercise, spark_run
    from deliverylab.grade.runner import Run

    monkeypatch.setattr(S, "DriverServer", functools.partial(S.DriverServer, ARGV))
    seen: list[dict] = []
    ex = exercise("05")

    def run_spark(ex, path, fault, seed, cluster, point=None, drivers=None):
        drivers.tend()
        spare = drivers._spares[0].proc.pid if drivers._spares else None
        at = {"fault": fault, "main": drivers._main.proc.pid, "spare": spare}
        if fault == "kill_driver":
            (at["ended"], _), at["alone"] = serve(drivers, tmp_path, "kill", alone=True)
            _, at["restart"] = serve(drivers, tmp_path, "done", "driver-1")
        else:
            _, at["served"] = serve(drivers, tmp_path, "done")
        at["drivers"] = drivers
        seen.append(at)
        return Run(ex.id, fault, seed, {}, {p.name: True for p in ex.properties},
                   point=point.name if point else "")

    monkeypatch.setattr(spark_run, "run_spark", run_spark)
    report = dl.grade("05", ex.reference, cluster=object(), show=False)
    faults = [r.fault for r in report.runs]
    n = faults.count("crash_query")
    assert faults == ["crash_query"] * n + ["kill_driver"] * (len(faults) - n) and n >= 2
    assert [r.point for r in report.runs] == [p.name for f in ex.faults
                                              for p in ex.points(f)]
    main = seen[0]["main"]
    assert all(s.get("served", main) == s.get("restart", main) == s["main"] == main
               for s in seen)  # one main server, up before the first run
    kills = seen[n:]
    assert all(s["spare"] is not None for s in kills)  # each up before its run began
    assert all(s["ended"] == "killed" and s["alone"] == s["spare"] != main for s in kills)
    assert len({s["alone"] for s in kills}) == len(kills)  # a fresh process each
    drivers = seen[0]["drivers"]
    assert drivers.spare_starts == len(kills) and drivers.home is None  # closed
    assert all(gone(p) for p in [main, *(s["alone"] for s in kills)])


def test_the_server_process_imports_none_of_the_graders_side(unneeded_imports):
    # Its Spark is its own cost; the grader's run, report, cluster and faults are not.
    assert unneeded_imports("deliverylab.grade.spark_server", (
        "deliverylab.grade.runner", "deliverylab.grade.report",
        "deliverylab.grade.exercises", "deliverylab.nemesis", "deliverylab.cluster",
        "deliverylab.proxy", "deliverylab.readers")) == []
