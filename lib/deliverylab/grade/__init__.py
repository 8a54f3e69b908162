"""The grader: the student writes the code, the lab breaks it.

``dl.grade("02")`` (or ``python -m deliverylab.grade 02 my_loop.py``) runs a student's
solution of one exercise (:data:`~deliverylab.grade.exercises.EXERCISES`) in a child
process of its own, against a real cluster, under each of the exercise's faults x N
seeds; the children's events become a History, the Checker judges it, and a
:class:`~deliverylab.grade.report.Report` says, cell by cell, what held. One cluster
serves a whole grade (fresh topics and groups per run): pass one, or the grader
starts a one-broker cluster with a fault proxy and stops it afterwards.

Nothing outside this folder imports it, except the package facade (``dl.grade``).

The names it re-exports load on first use (:func:`~deliverylab.process.lazy.lazy_names`):
``python -m deliverylab.grade.child``, a student's process (one or more each run of a
grade), runs this file first and needs none of them, and the report pulls in the runner,
the nemesis and the cluster.
"""

from __future__ import annotations

import functools
import sys
import time
import types
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import bad_value
from ..process.lazy import lazy_names

if TYPE_CHECKING:  # the names, for readers and the layout test's import graph
    from .exercises import EXERCISES, Exercise, exercise
    from .report import Report
    from .search import CrashPoint

__all__ = ["EXERCISES", "Exercise", "Report", "exercise", "grade"]
__getattr__, __dir__ = lazy_names(__name__, {
    "EXERCISES": ("exercises", "EXERCISES"), "Exercise": ("exercises", "Exercise"),
    "exercise": ("exercises", "exercise"), "Report": ("report", "Report")})


def _solution(ex: Exercise, solution: str | Path | None) -> Path:
    path = ex.starter if solution in (None, "") else Path(solution).expanduser()
    if not path.is_file() or path.suffix != ".py":
        raise bad_value("solution", str(solution), "a .py file holding "
                        f"{ex.function}() (the starter is {ex.starter})")
    return path.resolve()


def _points(ex: Exercise, fault: str, only: list[str] | None) -> list[CrashPoint | None]:
    every = ex.points(fault)
    if only is None or every == [None]:
        return every
    return [p for p in every if p is not None and p.name in only]


def grade(exercise_id: str | Exercise, solution: str | Path | None = None, seeds: int = 1,
          faults: Iterable[str] | None = None, cluster: Any = None,
          seed_list: Iterable[int] | None = None, show: bool = True,
          out: str | Path | None = None, points: Iterable[str] | None = None,
          until_fails: str | None = None, drivers: Any = None) -> Report:
    """Grade ``solution`` (default: the exercise's file in ``labs/exercises``).

    Runs every fault of the exercise (or ``faults``), a crash fault once per searched
    crash point (or only ``points``, e.g. ``["flush#2"]``), with seeds ``1..seeds`` (or
    ``seed_list``) on ``cluster`` (default: a one-broker cluster with a fault proxy,
    started here and stopped afterwards). A file that cannot run (it does not compile,
    or lacks the function) is named in one line, before any cluster starts. ``show``
    prints the report (and, in a notebook, draws the failing cells' timelines; after a
    whole grade that passed, the lab's own solution and how the student's differs); ``out``
    also writes the JSON result. ``until_fails`` (a property's name) skips a fault's
    remaining crash points for a seed once one run failed it: the calibration asks
    only whether a wrong solution's cell is caught. ``drivers``: for exercise 05, a
    :class:`~.spark_server.DriverServer` the caller owns and closes, so that grading
    several solutions starts Spark once (default: one of this grade's own, closed at its
    end; each run imports the student's file afresh either way). Its main server is
    started first, its Spark warming while the cluster starts, and spares for the
    ``kill_driver`` runs warm from a few runs before the first on, one Spark start at a
    time (:func:`~.spark_run.warm_ahead`); a caller's server is left with its main server
    running and no spare.
    """
    from .exercises import exercise  # here: a student's process runs this file first
    from .precheck import problem
    from .report import Report

    ex = exercise(exercise_id)
    path = _solution(ex, solution)
    chosen = list(ex.faults if faults is None else faults)
    for f in chosen:
        if f not in ex.faults:
            raise bad_value("fault", f, f"one of {', '.join(ex.faults)} (exercise {ex.id})")
    seed_values = list(range(1, seeds + 1) if seed_list is None else seed_list)
    if not seed_values or not all(isinstance(s, int) for s in seed_values):
        raise bad_value("seeds", seed_values, "one or more whole numbers")
    only = None if points is None else list(points)
    every = {p.name for f in chosen for p in ex.points(f) if p is not None}
    for name in only or []:
        if name not in every:
            raise bad_value("point", name, "one of " + (", ".join(sorted(every)) or
                                                         "none: no crash fault chosen"))
    broken = problem(path, ex.function, ex.params)
    if broken is not None:  # named first: no cluster, no run
        report = Report(ex, path, [], 0.0, broken=broken)
        if out is not None:
            report.save(out)
        if show:
            print(report, flush=True)
        return report
    # The runs, in the order the report lists them: fault by fault (the registry's
    # order: 05's crash_query runs, whose drivers share the main server, before its
    # kill_driver runs, whose spares warm meanwhile), seed by seed, point by point.
    planned = [(f, s, point) for f in chosen for s in seed_values
               for point in _points(ex, f, only)]
    own_drivers = drivers is None
    ahead: Any = None  # before each run: what the runs to come need started now
    if ex.kind == "foreach_batch":  # Spark drivers, warmed up before they are needed
        from .spark_run import run_spark, warm_ahead
        from .spark_server import DriverServer

        if own_drivers:
            drivers = DriverServer()
        run_once = functools.partial(run_spark, drivers=drivers)
        ahead = functools.partial(warm_ahead, drivers)
    else:
        from .runner import run_once  # the runner pulls in the clients
    own = cluster is None
    runs = []
    try:
        if ahead is not None:
            drivers.start()  # its Spark starts while the cluster does
        if own:
            from ..cluster import Cluster

            cluster = Cluster.start(brokers=1, proxy=True, backend="local")
        t0 = time.monotonic()
        caught: set[tuple[str, int]] = set()  # (fault, seed) failed: ``until_fails``
        for i, (f, s, point) in enumerate(planned):
            if (f, s) in caught:
                continue
            if ahead is not None:
                ahead([g for g, t, _ in planned[i:] if (g, t) not in caught])
            run = run_once(ex, path, f, s, cluster, point)
            runs.append(run)
            if show:
                print(f"  {f:<15} {run.label:<22} {run.seconds:5.1f} s  "
                      f"{_verdict(run)}", flush=True)
            if until_fails is not None and run.passed.get(until_fails) is False:
                caught.add((f, s))
    finally:
        if drivers is not None:
            if own_drivers:
                drivers.close()
            else:
                drivers.spares(0)  # a spare warmed for a run that did not come
        if own and cluster is not None:
            cluster.stop()
    report = Report(ex, path, runs, time.monotonic() - t0)
    if out is not None:
        report.save(out)
    if show:
        print(report, flush=True)
        _draw(report)
        if report.ok and faults is None and only is None:  # a whole grade, passed
            from .compare import lab_loop

            print("\n" + lab_loop(ex, path), flush=True)
    return report


def _verdict(run: Any) -> str:
    bad = [p for p, ok in run.passed.items() if ok is False]
    if bad:
        return "FAIL " + ", ".join(bad)
    if any(ok is None for ok in run.passed.values()):
        return "not judged: " + (run.reason.splitlines() or [run.state])[-1]
    return "ok"


def _draw(report: Report) -> None:
    """In a notebook, the timeline of each failing cell's first failing run."""
    if "IPython" not in sys.modules:
        return
    from IPython import get_ipython

    if get_ipython() is None:
        return
    from IPython.display import display

    for f in report.failures():
        if f["value"]:
            display(report.plot(f["fault"], f["property"]))


class _CallableModule(types.ModuleType):
    """``dl.grade(...)`` calls :func:`grade` even when ``deliverylab.grade`` was imported
    as a module first (importing a submodule sets it as the package's attribute)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Report:
        return grade(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
