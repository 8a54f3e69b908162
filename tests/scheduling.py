"""How ``make test``'s parallel part hands tests to its workers: a module at a time.

xdist's ``--dist load`` hands out single tests, so the tests of one module spread over
every worker, and each worker starts the module's fixtures for itself: a cold run of
2026-11-29 started test_docker.py's 3-broker container cluster three times (54-64 s of
set-up each, on two loaded cores), the instructor view's graded class three times, the
Connect workers', the tools', the Spark inspector's and the Kafka-bug cluster's three
times each. :class:`ModuleScheduling` (``--dist loadscope``, scripts/test-suite.sh) hands
a worker a whole module, so its module fixtures start once; only the tests that take
minutes on their own (:data:`ALONE`: a chapter's headless run, a calibration of the
grader) are units of one test, so that they spread over the workers.

Units go out in the order the collection left them (tests/conftest.py: the longest
first, by :data:`WEIGHTS`), one more to a worker when it is down to its last test: a
worker runs a test only once it holds the next (xdist's worker loop needs the next item
to know which fixtures to tear down), so it holds at most two units, as ``--dist load
--maxschedchunk 1`` held two tests.

(Not ``--dist loadgroup`` with ``xdist_group`` marks: with pytest 9.2 it no longer
groups, pytest-xdist issue 1386.)
"""

from __future__ import annotations

from xdist.scheduler import LoadScopeScheduling

#: Tests that are units of their own: minutes each, so they must spread over workers.
ALONE = ("tests/labs/test_chapters.py::test_chapter_demonstrates_its_claim",
         "tests/integration/grade/test_grade_calibration.py::")

#: Seconds a module (or an ALONE test) took in a cold run of ``make test`` (2026-11-29,
#: three workers on two cores; set-up, call and tear-down summed): the order units go out
#: in, heaviest first. Only an order: a stale or missing entry costs time, never a result.
WEIGHTS = {
    "tests/integration/grade/test_grade_calibration.py::test_grader_calibration[06]": 535,
    "tests/integration/grade/test_grade_calibration.py::test_grader_calibration[04]": 533,
    "tests/labs/test_chapters.py::test_chapter_demonstrates_its_claim[01_at_most_once]": 532,
    "tests/integration/grade/test_grade_calibration.py::test_grader_calibration[02]": 503,
    "tests/integration/grade/test_grade_calibration.py::test_grader_calibration[05]": 402,
    "tests/labs/test_chapters.py::test_chapter_demonstrates_its_claim[05_spark_pipeline]": 400,
    "tests/labs/test_chapters.py::test_chapter_demonstrates_its_claim[07_exactly_once_sources]":
        366,
    "tests/integration/test_matrix.py": 360,
    # Estimated from the same run's durations, until a cold run measures them: test_sizes
    # holds test_nemesis.py's tests (321 s) and test_cluster.py's failover at every size
    # (~150 s of its 274), less the cluster starts they no longer make.
    "tests/integration/cluster/test_sizes.py": 350,
    "tests/integration/spark/test_inspector.py": 331,
    "tests/integration/cluster/test_docker.py": 316,
    "tests/integration/spark/test_scene.py": 290,
    "tests/integration/connect/test_connect.py": 286,
    "tests/labs/test_chapters.py::test_chapter_demonstrates_its_claim[04_transactions]": 266,
    "tests/integration/chapters/kafka_bugs/test_reproductions.py": 252,
    "tests/labs/test_chapters.py::test_chapter_demonstrates_its_claim[06_side_effects]": 238,
    "tests/labs/test_chapters.py::test_chapter_demonstrates_its_claim[02_at_least_once]": 212,
    "tests/labs/test_chapters.py::test_chapter_demonstrates_its_claim[09_kafka_bugs]": 204,
    "tests/integration/chapters/at_most_once/test_recipes.py": 200,
    "tests/browser/test_jupyterlab.py": 182,
    "tests/labs/test_chapters.py::test_chapter_demonstrates_its_claim[00_tour]": 133,
    "tests/labs/test_chapters.py::test_chapter_demonstrates_its_claim[02b_consumer_groups]":
        127,
    "tests/integration/cluster/test_cluster.py": 120,  # estimated, as test_sizes.py
    "tests/integration/runtime/test_jars.py": 110,
    "tests/integration/classroom/instructor/test_view.py": 110,
    "tests/browser/test_hub.py": 109,
    "tests/integration/cluster/test_tools.py": 104,
    "tests/labs/test_chapters.py::test_chapter_demonstrates_its_claim[03_idempotent_producer]":
        80,
}


def unit_of(nodeid: str) -> str:
    """The unit a test goes out in: itself if :data:`ALONE`, else its module."""
    return nodeid if nodeid.startswith(ALONE) else nodeid.split("::", 1)[0]


def weight_of(nodeid: str) -> float:
    """The measured seconds of a test's unit (0 when not measured)."""
    return WEIGHTS.get(unit_of(nodeid), 0)


class ModuleScheduling(LoadScopeScheduling):
    """xdist's scope scheduling with :func:`unit_of` as the scope, topped up one unit at
    a time (module docstring)."""

    def _split_scope(self, nodeid: str) -> str:
        return unit_of(nodeid)

    def _reschedule(self, node) -> None:  # noqa: ANN001 -- xdist's WorkerController
        if node.shutting_down:
            return
        if not self.workqueue:
            node.shutdown()  # after the tests it holds
            return
        if self._pending_of(self.assigned_work[node]) > 1:
            return
        self._assign_work_unit(node)
