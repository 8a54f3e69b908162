"""The anomaly matrix in small: every mode under every fault, on real brokers.

Every cell is held to both halves of the course's claim: nothing outside what the mode
allows under that fault (``result.valid``), and the anomaly the course claims for the
cell (:data:`deliverylab.modes.CLAIMS`) -- in every run.
"""

from __future__ import annotations

import pytest

from deliverylab.matrix import run_matrix, table
from deliverylab.modes import MODES
from deliverylab.scenario import FAULTS, Scenario

pytestmark = pytest.mark.cluster


@pytest.mark.parametrize("mode", list(MODES))
def test_every_fault_matches_the_course_claims(cluster, mode):
    runs = run_matrix(cluster, modes=[mode], faults=FAULTS[1:], seeds=[7], values=100)
    print(table(runs))
    assert {run.fault for run in runs} == set(FAULTS[1:])
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
