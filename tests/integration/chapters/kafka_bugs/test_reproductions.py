"""Kafka's published delivery bugs on a real broker: each one every time, its fix never.

A reproduction that shows its anomaly only sometimes teaches nothing, so each runs
``REPEAT`` times on fresh topics and must show it *every* time; its fixed contrast runs
as often and must show zero every time. Three times in ``make test`` (chapter 09's own
run adds one more); ``bench/loaded.py`` runs the same tests 50 times on a machine loaded
by CPU hogs (``DELIVERYLAB_REPEAT``). One single-broker cluster (fast to start,
transactions work on one broker) with a fault proxy serves the module.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from confluent_kafka.admin import ConfigResource, ResourceType

from deliverylab.chapters.kafka_bugs import reproductions as bugs
from deliverylab.cluster import Cluster

pytestmark = pytest.mark.cluster
#: How often each outcome is shown: 3 in make test, more in bench/loaded.py.
REPEAT = int(os.environ.get("DELIVERYLAB_REPEAT", "3"))


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with Cluster.start(brokers=1, proxy=True, overrides=bugs.OVERRIDES) as c:
        yield c


def test_a_retry_after_the_producer_expired_is_written_twice_every_time(cluster: Cluster):
    runs = [bugs.expired_producer(cluster, expiration_ms=1500) for _ in range(REPEAT)]
    assert [r.anomalies for r in runs] == [1] * REPEAT, [r.summary() for r in runs]
    assert all(r.late == ["NONE"] and r.variant == "bug" for r in runs)
    # The short expiration was for those runs only: the broker is back on its own setting.
    node = str(cluster.nodes[0])
    described = cluster.admin().describe_configs([ConfigResource(ResourceType.BROKER, node)])
    entry = next(iter(described.values())).result(30)["producer.id.expiration.ms"]
    assert entry.value == "86400000", entry  # Kafka's default: one day


def test_expiration_longer_than_the_delivery_timeout_deduplicates_every_time(cluster: Cluster):
    runs = [bugs.expired_producer(cluster, expiration_ms=60_000, hold_s=2.9)
            for _ in range(REPEAT)]
    assert [r.anomalies for r in runs] == [0] * REPEAT, [r.summary() for r in runs]
    assert all(r.result.valid and r.variant == "fixed" for r in runs)


def test_a_stale_end_txn_commits_the_next_transaction_every_time(cluster: Cluster):
    runs = [bugs.stale_end_txn(cluster) for _ in range(REPEAT)]
    assert [r.anomalies for r in runs] == [1] * REPEAT, [r.summary() for r in runs]
    assert all(r.late == ["NONE"] for r in runs)
    assert all(r.notes["abort_2"] == "INVALID_TXN_STATE" for r in runs), [r.notes for r in runs]


def test_the_java_client_refuses_the_stale_end_txn_every_time(cluster: Cluster):
    runs = [bugs.java_stale_end_txn(cluster) for _ in range(REPEAT)]
    assert all(r["late"] and r["late"][0] != "NONE" for r in runs), runs
    assert all(r["version"] >= 5 for r in runs), runs  # transaction protocol 2


def test_with_transaction_version_1_the_java_client_breaks_the_same_way(cluster: Cluster):
    with bugs.transaction_version(cluster, 1) as before:
        runs = [bugs.java_stale_end_txn(cluster) for _ in range(REPEAT)]
    assert before == 2 and bugs.finalized_transaction_version(cluster) == 2
    assert all(r["late"] == ["NONE"] for r in runs), runs  # accepted: a stale commit
    assert all(r["version"] < 5 for r in runs), runs  # the old protocol's EndTxn


def test_a_late_write_without_verification_hangs_its_partition_every_time(cluster: Cluster):
    runs = [bugs.hanging_transaction(cluster, verification=False) for _ in range(REPEAT)]
    assert [r.anomalies for r in runs] == [1] * REPEAT, [r.notes for r in runs]
    for r in runs:
        assert r.late == ["NONE"] and r.notes["abort"] == "ok"
        assert r.notes["read_committed_sees"] == 0 and r.notes["read_uncommitted_sees"] == 1
        assert len(r.notes["find_hanging"]) == 1  # Kafka's own tool lists it
        after = r.after_repair()[0]  # kafka-transactions abort cleared it
        assert after["last_stable_offset"] == after["high_watermark"]


def test_verification_refuses_the_late_write_every_time(cluster: Cluster):
    runs = [bugs.hanging_transaction(cluster, verification=True) for _ in range(REPEAT)]
    assert [r.anomalies for r in runs] == [0] * REPEAT, [r.notes for r in runs]
    assert all(r.late and r.late[0] != "NONE" and r.notes["find_hanging"] == []
               for r in runs), [(r.late, r.notes) for r in runs]
    # The client's held retries of the write (same sequence, same epoch) are refused too.
    assert all("NONE" not in r.notes["retries_answered"] for r in runs), [r.notes for r in runs]
