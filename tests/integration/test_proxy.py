"""The fault proxy and the Nemesis on the shared real 3-broker cluster (the ``cluster``
fixture of tests/conftest.py, healed after each test). The recipes built on them are
tested in tests/integration/chapters/at_most_once/test_recipes.py and
at_least_once/test_lost_ack.py."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import KafkaError, Producer

from deliverylab import values
from deliverylab.clients import config
from deliverylab.cluster import Cluster
from deliverylab.history import History
from deliverylab.nemesis import Nemesis
from deliverylab.readers import read_records
from deliverylab.schedule import Schedule, Sent
from deliverylab.waiting import wait_until

pytestmark = pytest.mark.cluster
REPEAT = 5


def fresh(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


# --- the proxy under ordinary traffic -------------------------------------------------


def test_proxy_passes_ordinary_traffic_unchanged(cluster: Cluster):
    topic = cluster.create_topic(fresh("passthrough"), partitions=3)
    before = {n: p.stats() for n, p in cluster.proxies.items()}
    producer = Producer(config(cluster.bootstrap_servers, **{
        "enable.idempotence": True, "acks": "all", "linger.ms": 5}))
    sent = [values.encode("pass", seq, payload_size=seq % 200) for seq in range(10_000)]
    failed = []
    for value in sent:
        producer.produce(topic, value, key=values.key("pass"),
                         on_delivery=lambda err, _msg: err and failed.append(err))
        producer.poll(0)
    assert producer.flush(60) == 0 and not failed
    got = [r.value for r in read_records(cluster.bootstrap_servers, [topic], "read_uncommitted",
                                         60, expect=len(sent))]
    assert len(got) == len(sent)
    assert sorted(got) == sorted(sent)  # byte for byte, no loss, no duplicate
    stats = {n: p.stats() for n, p in cluster.proxies.items()}
    assert sum(s["requests"].get("Produce", 0) for s in stats.values()) > 0
    assert sum(s["bytes_to_broker"] - before[n]["bytes_to_broker"]
               for n, s in stats.items()) > 10_000 * 50
    assert all(s["acks_dropped"] == before[n]["acks_dropped"] and s["faults"] == []
               for n, s in stats.items())


def test_transaction_through_proxy(cluster: Cluster):
    topic = cluster.create_topic(fresh("txn"), partitions=2)
    producer = Producer(config(cluster.bootstrap_servers, **{
        "transactional.id": fresh("txn-producer")}))
    producer.init_transactions(30)
    committed = [values.encode("txn", seq) for seq in range(20)]
    aborted = [values.encode("txn", seq) for seq in range(20, 30)]
    producer.begin_transaction()
    for value in committed:
        producer.produce(topic, value)
    producer.commit_transaction(30)
    producer.begin_transaction()
    for value in aborted:
        producer.produce(topic, value)
    producer.flush(30)
    producer.abort_transaction(30)
    visible = [r.value for r in read_records(cluster.bootstrap_servers, [topic], "read_committed",
                                             60, expect=len(committed))]
    assert sorted(visible) == sorted(committed)
    raw = [r.value for r in read_records(cluster.bootstrap_servers, [topic], "read_uncommitted",
                                         60, expect=30)]
    assert sorted(raw) == sorted(committed + aborted)  # aborted records are in the log


# --- faults through the Nemesis -------------------------------------------------------


def test_partitioned_client_times_out_and_heal_restores(cluster: Cluster):
    topic = cluster.create_topic(fresh("blackhole"), partitions=1)
    leader = cluster.wait_leader(topic)
    history = History()
    nemesis = Nemesis(cluster, history)
    producer = Producer(config(cluster.bootstrap_servers, **{
        "acks": "all", "message.timeout.ms": 3000, "request.timeout.ms": 2000}))
    reports: list[KafkaError | None] = []
    producer.produce(topic, b"before", on_delivery=lambda err, _m: reports.append(err))
    assert producer.flush(20) == 0 and reports == [None]

    record = nemesis.partition_client(leader)
    assert record.name == "partition_client" and record.node == leader
    assert cluster.proxies[leader].faults() == ["blackhole"]
    t0 = time.monotonic()
    producer.produce(topic, b"during", on_delivery=lambda err, _m: reports.append(err))
    producer.flush(20)
    assert len(reports) == 2 and reports[1] is not None
    assert reports[1].code() == KafkaError._MSG_TIMED_OUT  # silence, then a timeout
    assert 2.5 < time.monotonic() - t0 < 15
    assert cluster.wait_leader(topic) == leader  # brokers never noticed: only clients did

    healed = nemesis.heal()
    assert "healed the proxies" in healed.did
    producer.produce(topic, b"after", on_delivery=lambda err, _m: reports.append(err))

    def reported() -> bool:
        producer.poll(0.2)  # serves the delivery report; the pause between two looks
        return len(reports) >= 3

    wait_until("the delivery report of the record sent after the heal", reported, 30,
               interval=0)
    assert reports[2] is None, reports[2]
    assert [r.name for r in nemesis.records] == ["partition_client", "heal"]
    # Faults are History ops, on the clients' clock.
    ops = history.faults()
    assert [op.fault for op in ops] == ["partition_client", "heal"]
    assert 0 <= ops[0].time <= ops[1].time <= history.now()


def test_nemesis_lose_ack_by_topic_and_schedule(cluster: Cluster):
    topic = cluster.create_topic(fresh("nemesis"), partitions=1)
    leader = cluster.wait_leader(topic)
    history = History()
    nemesis = Nemesis(cluster, history)
    schedule = Schedule([(Sent(3), "lose_ack", {"topic": topic}),
                         (Sent(6), "pause_broker", {"node": leader % 3 + 1}),
                         (Sent(6), "heal")]).start(nemesis)
    producer = Producer(config(cluster.bootstrap_servers, **{
        "enable.idempotence": False, "acks": "all",
        "max.in.flight.requests.per.connection": 1}))
    fired = []
    for seq in range(8):
        fired += schedule.tick(seq)
        producer.produce(topic, values.encode("sched", seq), partition=0)
        producer.flush(30)
    assert schedule.done
    assert [r.name for r in fired] == ["lose_ack", "pause_broker", "heal"]
    lose = fired[0]
    assert lose.node == leader and lose.handle.wait(5) and lose.handle.dropped == 1
    assert "resumed" in fired[2].did
    assert cluster.status() == {1: "up", 2: "up", 3: "up"}
    got = [values.decode(r.value).seq for r in read_records(
        cluster.bootstrap_servers, [topic], "read_uncommitted", 60, expect=9)]
    assert sorted(got) == [0, 1, 2, 3, 3, 4, 5, 6, 7]  # the lost ack made one duplicate
    assert [op.fault for op in history.faults()] == ["lose_ack", "pause_broker", "heal"]
