"""The grader proves it can fail: calibration on real brokers, a few seeds.

For each exercise: the reference solution must pass every cell (every fault x every
seed), each known-wrong solution must fail the cell it names (``EXPECTED_FAILURE`` in
its file) on every seed, and the student's starter must fail somewhere. A wrong
solution that passes is a failing test. The detection table is printed (``-s``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import deliverylab as dl
from deliverylab.grade import EXERCISES

SEEDS = [1, 2]
#: Fewer seeds where a run starts a Spark driver (exercise 05): ~15 s each, not ~4.
SEEDS_OF = {"05": [2]}
#: The faults a starter is graded under (default: all): 05's starter is its plain
#: insert, caught by the first crash already (a kill_driver run costs two drivers).
STARTER_FAULTS = {"05": ["crash_query"]}


def expected_failure(path: Path) -> tuple[str, str]:
    """The (fault, property) a wrong solution declares, read without running it."""
    for node in ast.parse(path.read_text()).body:
        if (isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "")
                == "EXPECTED_FAILURE"):
            fault, _, prop = node.value.value.partition(" x ")
            return fault, prop
    raise AssertionError(f"{path} declares no EXPECTED_FAILURE = 'fault x property'")


@pytest.mark.cluster
@pytest.mark.timeout(900)
@pytest.mark.parametrize("exercise_id", [pytest.param(e, marks=pytest.mark.spark)
                                         if EXERCISES[e].kind == "foreach_batch" else e
                                         for e in sorted(EXERCISES)])
def test_grader_calibration(exercise_id: str, cluster):
    ex = EXERCISES[exercise_id]
    seeds = SEEDS_OF.get(ex.id, SEEDS)
    wrong = ex.wrong()
    assert len(wrong) >= 3, f"exercise {ex.id} ships {len(wrong)} known-wrong solutions"
    table = []

    reference = dl.grade(ex.id, ex.reference, seed_list=seeds, cluster=cluster, show=False)
    table.append(("reference", "every cell", f"{reference.passed} passed, "
                  f"{reference.failed} failed"))
    problems = [] if reference.failed == 0 else [f"the reference fails:\n{reference}"]

    for what, path in wrong.items():
        fault, prop = expected_failure(path)
        report = dl.grade(ex.id, path, faults=[fault], seed_list=seeds, cluster=cluster,
                          show=False)
        cell = report.cell(fault, prop)
        table.append((f"wrong_{what}", f"{fault} x {prop}",
                      f"caught on {len(cell.failing)}/{len(cell.runs)} seeds"))
        if len(cell.failing) != len(cell.runs):
            problems.append(f"wrong_{what} passed {fault} x {prop} on "
                            f"{cell.passed} seed(s):\n{report}")

    starter = dl.grade(ex.id, ex.starter, seed_list=seeds[:1], cluster=cluster, show=False,
                       faults=STARTER_FAULTS.get(ex.id))
    table.append(("starter", "any cell", f"{starter.failed} cell(s) failed"))
    if starter.failed == 0:
        problems.append(f"the starter passes: it must fail honestly:\n{starter}")

    print(f"\ndetection table, exercise {ex.id} ({ex.name}), seeds {seeds}:")
    for row in table:
        print(f"  {row[0]:<28} {row[1]:<36} {row[2]}")
    assert not problems, "\n\n".join(problems)
