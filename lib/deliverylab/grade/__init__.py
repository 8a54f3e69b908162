"""The grader: the student writes the code, the lab breaks it.

``dl.grade("02")`` (or ``python -m deliverylab.grade 02 my_loop.py``) runs a student's
solution of one exercise (:data:`~deliverylab.grade.exercises.EXERCISES`) in a child
process of its own, against a real cluster, under each of the exercise's faults x N
seeds; the children's events become a History, the Checker judges it, and a
:class:`~deliverylab.grade.report.Report` says, cell by cell, what held. One cluster
serves a whole grade (fresh topics and groups per run): pass one, or the grader
starts a one-broker cluster with a fault proxy and stops it afterwards.

Nothing outside this folder imports it, except the package facade (``dl.grade``).
"""

from __future__ import annotations

import sys
import time
import types
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..errors import bad_value
from .exercises import EXERCISES, Exercise, exercise
from .report import Report

__all__ = ["EXERCISES", "Exercise", "Report", "exercise", "grade"]


def _solution(ex: Exercise, solution: str | Path | None) -> Path:
    path = ex.starter if solution in (None, "") else Path(solution).expanduser()
    if not path.is_file() or path.suffix != ".py":
        raise bad_value("solution", str(solution), "a .py file holding "
                        f"{ex.function}() (the starter is {ex.starter})")
    return path.resolve()


def grade(exercise_id: str | Exercise, solution: str | Path | None = None, seeds: int = 3,
          faults: Iterable[str] | None = None, cluster: Any = None,
          seed_list: Iterable[int] | None = None, show: bool = True,
          out: str | Path | None = None) -> Report:
    """Grade ``solution`` (default: the exercise's file in ``labs/exercises``).

    Runs every fault of the exercise (or ``faults``) with seeds ``1..seeds`` (or
    ``seed_list``) on ``cluster`` (default: a one-broker cluster with a fault proxy,
    started here and stopped afterwards). ``show`` prints the report (and, in a
    notebook, draws the failing cells' timelines); ``out`` also writes the JSON result.
    """
    ex = exercise(exercise_id)
    if ex.kind == "foreach_batch":  # a Spark driver per run
        from .spark_run import run_spark as run_once
    else:
        from .runner import run_once  # the runner pulls in the clients

    path = _solution(ex, solution)
    chosen = list(ex.faults if faults is None else faults)
    for f in chosen:
        if f not in ex.faults:
            raise bad_value("fault", f, f"one of {', '.join(ex.faults)} (exercise {ex.id})")
    seed_values = list(range(1, seeds + 1) if seed_list is None else seed_list)
    if not seed_values or not all(isinstance(s, int) for s in seed_values):
        raise bad_value("seeds", seed_values, "one or more whole numbers")
    own = cluster is None
    if own:
        from ..cluster import Cluster

        cluster = Cluster.start(brokers=1, proxy=True, backend="local")
    t0 = time.monotonic()
    runs = []
    try:
        for f in chosen:
            for s in seed_values:
                run = run_once(ex, path, f, s, cluster)
                runs.append(run)
                if show:
                    bad = [p for p, ok in run.passed.items() if not ok]
                    print(f"  {f:<15} seed {s:<3} {run.seconds:5.1f} s  "
                          f"{'ok' if not bad else 'FAIL ' + ', '.join(bad)}", flush=True)
    finally:
        if own:
            cluster.stop()
    report = Report(ex, path, runs, time.monotonic() - t0)
    if out is not None:
        report.save(out)
    if show:
        print(report, flush=True)
        _draw(report)
    return report


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
