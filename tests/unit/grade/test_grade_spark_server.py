"""Exercise 05's driver server without Spark: its protocol and how it names each end,
against a stand-in server -- the real server's loop (:func:`spark_server.main`) with a
``serve_one`` that does what the spec says instead of running a driver. What a real
driver does in it is judged on real brokers in tests/integration/grade."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import psutil
import pytest

from deliverylab.grade import spark_child
from deliverylab.grade import spark_server as S
from deliverylab.grade.child import RAISED, load_solution

#: The stand-in: the server's own loop, each spec acted out by ``act``.
STAND_IN = """
import json, os, signal, sys, time
from pathlib import Path
from deliverylab.grade import spark_server as S

def act(path):
    spec = json.loads(Path(path).read_text())
    Path(spec["pid"]).write_text(str(os.getpid()))
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
    if how == "kill":  # the student's os.killpg of their own driver
        os.killpg(os.getpgrp(), signal.SIGKILL)
    print(f"served {spec['process']}")
    return 0

S.serve_one = act
sys.exit(S.main())
"""


@pytest.fixture
def server():
    drivers = S.DriverServer([sys.executable, "-u", "-c", STAND_IN])
    yield drivers
    drivers.close()


def serve(drivers: S.DriverServer, tmp_path: Path, act: str, process: str = "driver-0",
          limit: float = 30.0) -> tuple[tuple[str, str], int]:
    """One spec served; returns its ending and the pid of the server that served it."""
    work = tmp_path / f"{act}-{process}-{drivers.starts}"
    work.mkdir()
    spec = {"process": process, "act": act, "pid": str(work / "pid")}
    ended = drivers.serve(spec, work, limit)
    return ended, int((work / "pid").read_text())


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
    server._proc.wait(10)
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
    assert S.serve_one(str(spec)) == 1 and asked == [True]
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

    def run_spark(ex, path, fault, seed, cluster, point=None, drivers=None):
        drivers.argv = [sys.executable, "-u", "-c", STAND_IN]
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
    with S.DriverServer([sys.executable, "-u", "-c", STAND_IN]) as mine:
        for _ in range(2):
            with pytest.raises(RuntimeError, match="enough"):
                dl.grade("05", exercise("05").reference, cluster=object(), show=False,
                         drivers=mine)
        assert len(pids) == 2 and len(set(pids)) == 1 and not gone(pids[0])
        assert mine.starts == 1
    assert gone(pids[0]) and mine.home is None
