"""The anomaly matrix in small: every mode under every fault, on real brokers.

Every cell is held to both halves of the course's claim: nothing outside what the mode
allows under that fault (``result.valid``), and the anomaly the course claims for the
cell (:data:`deliverylab.modes.CLAIMS`) -- in every run.

Chapter 09 runs a small matrix of its own in every headless run
(tests/labs/test_chapters.py) and holds each of its cells to the same claim (its
``CLAIMS``: no cell not held, no promise broken). Its Python-stage cells are not run a
second time here: the rest of the matrix is.
:func:`test_the_cells_left_to_chapter_09_are_the_ones_it_runs` (no cluster) fails the
day the chapter stops running one of them. Its two Spark cells still run here too: one
run found no time saved by leaving them out, and only here is the transactional sink's
aborted count held to == predicted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from deliverylab.classroom.course import run as course
from deliverylab.matrix import plan, run_matrix, table
from deliverylab.modes import MODES
from deliverylab.scenario import FAULTS, Scenario

pytestmark = pytest.mark.cluster

LABS = Path(__file__).resolve().parents[2] / "labs"


def chapter_09_parameters() -> dict[str, Any]:
    """Chapter 09's parameters as its headless small run gets them: the notebook's
    parameters cell (plain assignments), then :data:`deliverylab.classroom.course.run.SMALL`."""
    return {**course.defaults("09_kafka_bugs", LABS),
            **course.parameters("09_kafka_bugs", small=True, results_path=Path("x"))}


def chapter_09_cells() -> set[tuple[str, str, str]]:
    """(stage, mode or sink, fault) of every cell chapter 09's small run holds."""
    p = chapter_09_parameters()
    if p["matrix_source"] != "run":
        return set()
    return set(plan("python,spark", p["matrix_modes"], p["matrix_sinks"],
                    p["matrix_faults"]).cells())


#: Held by chapter 09 in every run of the suite; its Python cells are left out below.
CHAPTER_09 = chapter_09_cells()


def test_the_cells_left_to_chapter_09_are_the_ones_it_runs():
    """The fold stays honest: the chapter runs these cells and its claim covers every
    one of them (a cell not held or a broken promise fails the chapter's test)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "chapter_claims", LABS.parent / "tests" / "labs" / "test_chapters.py")
    chapters = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(chapters)
    CLAIMS = chapters.CLAIMS  # noqa: N806 -- the name it has there

    assert CHAPTER_09 >= {("python", "AT_LEAST_ONCE", "lose_ack"),
                          ("python", "TRANSACTIONAL", "crash_consumer")}
    p = chapter_09_parameters()
    assert p["matrix_seeds"] >= 1
    held = {"matrix_runs": len(CHAPTER_09), "matrix_cells": len(CHAPTER_09),
            "matrix_not_held": {}, "matrix_broken": {}}
    # The chapter's claim fails on any cell not held or promise broken, whatever else.
    base = _chapter_09_observed_passing(p["runs"], p["java_runs"])
    assert CLAIMS["09_kafka_bugs"]({**base, **held})
    assert not CLAIMS["09_kafka_bugs"]({**base, **held, "matrix_not_held": {"x": "0/1"}})
    assert not CLAIMS["09_kafka_bugs"]({**base, **held, "matrix_broken": {"x": ["lost"]}})


def _chapter_09_observed_passing(runs: int, java_runs: int) -> dict[str, Any]:
    """A results file of chapter 09 that meets its claim (the matrix part aside)."""
    return {"runs": runs, "expired_duplicates": [1] * runs, "kept_duplicates": [0] * runs,
            "expired_late": [["NONE"]] * runs, "stale_aborted_reads": [1] * runs,
            "stale_late": [["NONE"]] * runs, "disk_commit_markers": 2,
            "java_runs": java_runs, "java_late": [["CONCURRENT_TRANSACTIONS"]] * java_runs,
            "java_v1_late": [["NONE"]] * java_runs, "java_v1_versions": [4] * java_runs,
            "transaction_version_restored": True, "hung_partitions": [1] * runs,
            "hung_found": [1] * runs, "hung_repaired": [True] * runs,
            "verified_partitions": [0] * runs, "verified_late": [["INVALID_TXN_STATE"]] * runs,
            "buttons_pressed": ["Stale EndTxn", "Expiration above timeout"],
            "matrix_spark_kafka": [[3, 3]]}


@pytest.mark.parametrize("mode", list(MODES))
def test_every_fault_matches_the_course_claims(cluster, mode):
    faults = [f for f in FAULTS[1:] if ("python", mode, f) not in CHAPTER_09]
    runs = run_matrix(cluster, modes=[mode], faults=faults, seeds=[7], values=100)
    print(table(runs))
    assert {run.fault for run in runs} == set(faults) and faults
    for run in runs:
        assert run.result.valid, (run.fault, run.result.summary())
    failures = [msg for run in runs for msg in run.failures()]
    assert failures == []
    # Each run ended healed: every broker up again, ready for the next run.
    assert set(cluster.status().values()) == {"up"}


def test_a_run_without_faults_is_valid_in_every_mode(cluster):
    for mode in MODES:
        run = Scenario(mode, "none", values=50).run(1, cluster)
        assert run.result.valid, run.result.summary()
        assert run.result.stats["values_sent"] == 50 + 50  # input sends + pipeline sends


@pytest.mark.spark
def test_spark_rows_replay_the_predicted_batch_or_nothing(cluster):
    """The Spark stage as matrix rows, one Spark session: the at-least-once Kafka sink
    replays exactly the batch offsets/N predicted; the exactly-once sinks under the
    same crash write nothing twice (the transactional one leaves an aborted attempt)."""
    runs = run_matrix(cluster, stages=["spark"], sinks=["kafka"],
                      spark_faults=["crash_query", "kill_driver"], seeds=[3],
                      spark_values=30)
    runs += run_matrix(cluster, stages=["spark"], sinks=["files", "database", "kafka_txn"],
                       spark_faults=["crash_query"], seeds=[3], spark_values=30)
    print(table(runs))
    assert [(r.mode, r.fault) for r in runs] == [
        ("spark/kafka", "crash_query"), ("spark/kafka", "kill_driver"),
        ("spark/files", "crash_query"), ("spark/database", "crash_query"),
        ("spark/kafka_txn", "crash_query")]
    for run in runs:
        assert run.stage == "spark" and run.faults[0]["name"] == run.fault
        assert run.facts["predicted"] > 0
        assert run.failures() == [], run.failures()
    kafka = runs[:2]
    assert all(r.facts["extra_records"] == r.facts["predicted"] for r in kafka)
    assert all(r.facts["extra_records"] == 0 for r in runs[2:])
    assert runs[-1].facts["aborted_visible_uncommitted"] == runs[-1].facts["predicted"]
    assert "spark/kafka" in table(runs) and "extra records == predicted batch" in table(runs)
