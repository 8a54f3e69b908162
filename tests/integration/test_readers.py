"""Readers on real brokers: complete reads, or an error naming what they waited for."""

from __future__ import annotations

import pytest

from deliverylab import values
from deliverylab.clients import TxnProducer
from deliverylab.errors import LabError
from deliverylab.history import History
from deliverylab.nemesis import Nemesis
from deliverylab.readers import (
    ReadTimeout,
    bounds,
    peek,
    read_back,
    read_records,
    wait_stable,
)
from deliverylab.workload import ProducerWorkload

pytestmark = pytest.mark.cluster


def test_read_back_reads_everything(cluster, topic_name):
    topic = cluster.create_topic(topic_name, partitions=3)
    ProducerWorkload(cluster, topic, "AT_LEAST_ONCE", process="p").run(30)
    reads = read_back(cluster, [topic])
    assert sorted(r.value for r in reads) == sorted(f"p:{i}" for i in range(30))


def test_one_partition_as_records_and_a_count_that_must_arrive(cluster, topic_name):
    """The workload sends seq % 2 to partition seq % 2: partition 0 holds the even ones,
    each with its producer's key and a broker timestamp. A count the topic can never
    reach raises, naming it and what the last complete read held."""
    topic = cluster.create_topic(topic_name, partitions=2)
    ProducerWorkload(cluster, topic, "AT_LEAST_ONCE", process="p").run(20)
    records = read_records(cluster, [topic], partition=0)
    assert sorted(values.decode(r.value).seq for r in records) == list(range(0, 20, 2))
    assert {(r.topic, r.partition, r.key) for r in records} == {(topic, 0, b"p")}
    assert [r.offset for r in records] == list(range(10))
    assert all(r.timestamp_ms > 0 for r in records)
    assert [r.value for r in read_back(cluster, [topic], partition=0)] == [
        str(values.decode(r.value)) for r in records]
    assert len(read_records(cluster, [topic], expect=20)) == 20
    with pytest.raises(ReadTimeout, match=f"21 records in {topic} .*held 20"):
        read_records(cluster, [topic], expect=21, timeout=3)


def test_a_read_back_that_times_out_raises_instead_of_inventing_losses(cluster, topic_name):
    """With every byte to and from the leader delayed (1.5 s each way), the first fetch
    cannot come back within the read's 1 s: the read must raise, naming the partition,
    not return what it has. (The watermark lookup before it has 10 s: a few delayed
    round trips fit.)"""
    topic = cluster.create_topic(topic_name, partitions=1)
    ProducerWorkload(cluster, topic, "AT_LEAST_ONCE", process="p").run(20)
    nemesis = Nemesis(cluster, History())
    nemesis.delay_client(cluster.leader(topic, 0), ms=1500)
    try:
        with pytest.raises(ReadTimeout, match=rf"did not reach the end of {topic}/0"):
            read_back(cluster, [topic], timeout=1)
    finally:
        nemesis.heal()
    assert len(read_back(cluster, [topic])) == 20  # healed: the whole topic again


def test_an_open_transaction_holds_readers_back_and_wait_stable_says_so(cluster, topic_name):
    topic = cluster.create_topic(topic_name, partitions=2)
    history = History()
    shop = TxnProducer(cluster, topic, history, process="shop")
    shop.begin()
    shop.write()
    held = bounds(cluster, topic)
    assert all(b["last_stable_offset"] < b["high_watermark"] for b in held)
    assert peek(cluster, topic, "read_committed", seconds=2) == []
    assert len(peek(cluster, topic, "read_uncommitted", seconds=2)) == 2
    with pytest.raises(LabError, match="still has an open transaction"):
        wait_stable(cluster, topic, timeout=2)
    shop.commit()
    settled = wait_stable(cluster, topic, timeout=30)
    assert all(b["last_stable_offset"] == b["high_watermark"] for b in settled)
    assert sorted(r.value for r in read_back(cluster, [topic])) == ["shop:0", "shop:1"]
    assert [op.kind for op in history if op.kind != "send"] == [
        "init_txn", "begin_txn", "commit_txn"]
