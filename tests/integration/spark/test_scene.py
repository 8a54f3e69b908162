"""The Spark pipeline on real brokers and real Spark: at-least-once under both
crashes (the duplicates are exactly the batch the checkpoint predicted), the three
exactly-once sinks under the same crash, the downstream dedup query."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from deliverylab.cluster import Cluster
from deliverylab.spark.scene import crash_scene, dedup_scene

pytestmark = [pytest.mark.spark, pytest.mark.cluster]


@pytest.fixture(scope="module")
def cluster1() -> Iterator[Cluster]:
    with Cluster.start(brokers=1) as cluster:
        yield cluster


@pytest.mark.parametrize("crash", ["crash_query", "kill_driver"])
def test_kafka_sink_replays_exactly_the_predicted_batch(cluster1: Cluster, crash: str):
    scene = crash_scene(cluster1, "kafka", crash, values=30, crash_at=1)
    assert scene.predicted == 9  # offsets/1 - offsets/0 over 3 partitions
    assert scene.extra == scene.predicted
    assert scene.result.counts["pipeline_extra"] == scene.predicted
    assert scene.result.counts["pipeline_missing"] == 0 and scene.result.counts["lost"] == 0
    assert [op.fault for op in scene.pipeline.history.faults()] == [crash]
    assert all(b.committed for b in scene.batches)
    if crash == "crash_query":
        dedup = dedup_scene(cluster1, scene)
        assert dedup["duplicates_in"] == scene.predicted
        assert dedup["duplicates_out"] == 0
        assert dedup["records_out"] == dedup["values_out"] == 30


@pytest.mark.parametrize("sink", ["files", "database", "kafka_txn"])
def test_exactly_once_sinks_hold_under_the_same_crash(cluster1: Cluster, sink: str):
    scene = crash_scene(cluster1, sink, "kill_driver" if sink == "kafka_txn" else
                        "crash_query", values=30, crash_at=1)
    assert scene.predicted == 9
    assert scene.extra == 0
    assert scene.result.counts["pipeline_extra"] == 0
    assert scene.result.counts["pipeline_missing"] == 0
    assert scene.result.valid, scene.result.summary()
    if sink == "kafka_txn":
        assert scene.facts["aborted_visible_uncommitted"] == scene.predicted
    if sink == "files":
        assert scene.facts["plain_reader_records"] == 30


def test_the_same_pipeline_runs_on_a_standalone_spark_cluster(cluster1: Cluster,
                                                              monkeypatch: pytest.MonkeyPatch):
    """A master and two workers from pip's pyspark; the driver here, executors there."""
    from deliverylab.spark import session as inspector
    from deliverylab.spark.standalone import SparkStandalone

    monkeypatch.setenv("SPARK_LOCAL_IP", "127.0.0.1")
    inspector.stop()  # the kernel's local[2] session, if an earlier test started one
    with SparkStandalone.start(workers=2) as spark_cluster:
        try:
            spark = inspector.session(spark_cluster.master_url)
            assert spark.sparkContext.master == spark_cluster.master_url
            scene = crash_scene(cluster1, "kafka", "crash_query", values=30, crash_at=1,
                                master=spark_cluster.master_url)
            executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size()
        finally:
            inspector.stop()
    assert executors == 3  # the driver and one executor per worker
    assert scene.predicted == 9 and scene.extra == scene.predicted
    assert spark_cluster.procs == []
