"""The grader proves it can fail, and that it fails only the wrong: calibration on real
brokers.

For each exercise: every correct solution (any ``correct_*.py``; the reference is graded
by its chapter's test, see :data:`GRADED_BY_ITS_CHAPTER`) must pass every cell -- every
fault, every searched crash point, every seed, each run judged (a run "not judged" is no
pass); each known-wrong solution must fail the cell it names
(``EXPECTED_FAILURE`` in its file) on every seed, at one crash point at least (tried
first at the point it names, ``EXPECTED_POINT``, then, if it passed there, at every
searched point); the student's
starter must fail somewhere. A wrong solution that passes, or a correct one that fails,
is a failing test. The detection table is printed (``-s``), with where each wrong one was
caught.

The crash points are searched (every boundary over the first batches), so a seed only
varies what timing varies; a wrong solution is graded under its own fault only, and
first at its own point when it names one: the point where its mistake shows, found by the search
(``bench/grade.py --seeds 20`` searches every point on every seed and prints where each
was caught). Searching the points before it cost the calibration of 02 and 04 ~40 runs
that could only pass (a seed is caught at the point that exposes the mistake, never
earlier); the correct solutions and the starter are still graded at every point.
"""

from __future__ import annotations

import re
from dataclasses import astuple

import pytest

import deliverylab as dl
from deliverylab.grade import EXERCISES
from deliverylab.grade.exercises import declared_failure

#: One seed: the crash points are searched (6 per crash fault), so a second seed would
#: only vary timing, at twice the cost; bench/grade.py --seeds 20 measures stability.
SEEDS = [1]
#: Fewer seeds and points where a run starts a Spark driver (exercise 05): ~15 s each.
SEEDS_OF = {"05": [2]}
POINTS_OF = {"05": ["batch#2"]}
#: Correct solutions this test leaves to another: the reference is graded by its
#: chapter's headless run (tests/labs/test_chapters.py injects it as ``solution``, and
#: the chapter expects every cell passed: every fault, every crash point, seed 1 -- the
#: same runs as here, and for 05 every point where this test takes one). Grading it
#: twice cost every `make test` ~2 minutes of both cores.
GRADED_BY_ITS_CHAPTER = {"reference"}
#: The one fault each starter is graded under: the starter must fail honestly somewhere,
#: and one fault it cannot survive shows that at a fraction of a whole grade (04's whole
#: grade of its starter cost 40 s of an idle machine, under this one 19 s). 02's starter
#: leaves auto-commit on and so redoes what it had written; 04's sends no offsets with
#: its transactions; 05's and 06's write without remembering what they wrote.
STARTER_FAULTS = {"02": ["crash_consumer"], "04": ["crash_consumer"], "05": ["crash_query"],
                  "06": ["lose_ack"]}


@pytest.fixture
def drivers():
    """One driver server for every grade of exercise 05 here: Spark starts once for the
    drivers no fault kills, not once per solution graded (each run still imports its
    solution afresh). It starts nothing until a run asks, so the other exercises pay
    nothing."""
    from deliverylab.grade.spark_server import DriverServer

    with DriverServer() as server:
        yield server


@pytest.mark.cluster
@pytest.mark.timeout(1500)
@pytest.mark.parametrize("exercise_id", [pytest.param(e, marks=pytest.mark.spark)
                                         if EXERCISES[e].kind == "foreach_batch" else e
                                         for e in sorted(EXERCISES)])
def test_grader_calibration(exercise_id: str, cluster, drivers):
    ex = EXERCISES[exercise_id]
    seeds = SEEDS_OF.get(ex.id, SEEDS)
    points = POINTS_OF.get(ex.id)
    wrong = ex.wrong()
    # Enough ways to be wrong and to be right that the grader is tried, not sampled.
    assert len(wrong) >= 6, f"exercise {ex.id} ships {len(wrong)} known-wrong solutions"
    assert len(ex.correct()) >= 2, f"exercise {ex.id}: {len(ex.correct())} correct solutions"
    table = []
    problems = []

    for what, path in ex.correct().items():
        if what in GRADED_BY_ITS_CHAPTER:
            continue
        report = dl.grade(ex.id, path, seed_list=seeds, cluster=cluster, drivers=drivers,
                          show=False, points=points)
        table.append((what, "every cell", f"{report.closing()}", report))
        if not report.ok:
            problems.append(f"{what} is correct and was not passed:\n{report}")

    for what, path in wrong.items():
        fault, prop, point = astuple(declared_failure(path))
        if fault not in ex.faults:
            problems.append(f"wrong_{what} names fault {fault!r}, not one of {ex.faults}")
            continue
        # Its own point first; the point is a shortcut, not the contract (the cell is what
        # must catch it), so a miss there searches every point, as a student's grade does.
        missed = ""
        for at_points in ([point], points) if point else (points,):
            report = dl.grade(ex.id, path, faults=[fault], seed_list=seeds, cluster=cluster,
                              drivers=drivers, show=False, points=at_points,
                              until_fails=prop)
            caught = sorted({r.seed for r in report.cell(fault, prop).failing})
            if caught == sorted(seeds):
                break
            missed = f" (not at its {point}: searched)"
        cell = report.cell(fault, prop)
        at = sorted({r.point for r in cell.failing if r.point})
        table.append((f"wrong_{what}", f"{fault} x {prop}",
                      f"caught on {len(caught)}/{len(seeds)} seeds "
                      f"({len(cell.failing)}/{len(cell.runs)} runs){' at ' if at else ''}"
                      f"{', '.join(at)}{missed}", report))
        if caught != sorted(seeds):
            problems.append(f"wrong_{what} passed {fault} x {prop} on seed(s) "
                            f"{sorted(set(seeds) - set(caught))}:\n{report}")

    starter = dl.grade(ex.id, ex.starter, seed_list=seeds[:1], cluster=cluster,
                       drivers=drivers, show=False, faults=STARTER_FAULTS[ex.id],
                       points=points)
    table.append(("starter", "any cell", f"{starter.failed} cell(s) failed", starter))
    if starter.failed == 0:
        problems.append(f"the starter passes: it must fail honestly:\n{starter}")

    print(f"\ndetection table, exercise {ex.id} ({ex.name}), seeds {seeds}:")
    for what, cell_name, verdict, report in table:
        # The cost of each row, so the calibration's share of `make test` can be read.
        # The overlap fault's hold (04: until the auto-commit timer committed, or 0.5 s
        # with no timer), as its words say it: its share of the row's seconds.
        holds = [m.group(1) for r in report.runs if r.fault == "zombie_producer"
                 for m in [re.search(r"for (\d+\.\d) s, then paused", r.crash)] if m]
        held = f"; zombie held {', '.join(holds)} s" if holds else ""
        print(f"  {what:<36} {cell_name:<36} {verdict}  [{len(report.runs)} runs, "
              f"{report.seconds:.0f} s{held}]")
    assert not problems, "\n\n".join(problems)
