"""When Kafka itself got it wrong: published delivery bugs, reproduced on demand.

Jepsen found Kafka's transaction anomalies with hours of randomized faults. Each function
here reproduces one published anomaly *deterministically* on the lab's Kafka 4.1.1 with
the fault proxy's ``hold_request`` verb (a request kept from the broker, then delivered
late), and runs the same steps under the condition that fixes it, so a chapter can show
"broken" and "fixed" side by side, and a test can demand both every time.

Clients record (one History per run: sends through :class:`~deliverylab.clients.Recorder`,
transaction steps, the faults as ``fault`` ops with the broker's answer to the late
request); the Checker judges (:func:`deliverylab.checker.check` on a complete read-back).

- :func:`expired_producer` -- "idempotence isn't forever" (KIP-854): a retry that arrives
  after the broker forgot the producer (``producer.id.expiration.ms``) is written twice,
  with ``enable.idempotence=true``. Fixed: expiration longer than the delivery timeout.
- :func:`stale_end_txn` -- KAFKA-17754: a transaction's delayed EndTxn commits the *next*
  transaction early, so a read_committed reader sees records of a transaction the
  application aborted. librdkafka (the lab's client) still speaks the pre-KIP-890
  protocol, so it is exposed on 4.1.1.
- :func:`java_stale_end_txn` -- the fix: Kafka's own Java 4.1 client (transaction
  protocol 2, a new epoch every transaction) under the same delayed EndTxn: the broker
  refuses the stale request. Under :func:`transaction_version` ``1`` (the cluster's
  feature lowered at runtime) the same client falls back to the old protocol and the
  stale request is answered ``NONE``, as librdkafka's is: no longer refused.
- :func:`hanging_transaction` -- KAFKA-12671 / KIP-890 part 1: a transaction's write
  delivered after the transaction aborted hangs its partition (the last stable offset
  never moves) when ``transaction.partition.verification.enable`` is off; Kafka's
  ``kafka-transactions find-hanging`` lists it and ``abort`` frees it. On (the default
  since 3.6): refused. Judged by :func:`hung_partitions`.
"""

from __future__ import annotations

import subprocess
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import (
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ResourceType,
)

from ... import checker as C
from ... import readers
from ...clients import CLIENT_LOG, Recorder, config, kafka_cause, wait_transaction_failed
from ...cluster import tools
from ...errors import LabError, bad_value
from ...history import History
from ...nemesis import Nemesis
from ...notebook.widgets import FaultSpec
from ...values import ValueId
from ...waiting import wait_until

#: How many attempts of the hanging transaction's write the proxy holds at most: the
#: client's first request and its retries, as many as message.timeout.ms lets it make.
HELD_ATTEMPTS = 5

#: Seconds every broker may take to report a dynamic config the controller accepted.
CONFIG_APPLIED_S = 30.0

#: Broker properties a reproduction needs at start (static ones): the broker looks for
#: expired producers every 200 ms instead of every 10 minutes.
OVERRIDES: dict[str, str] = {"producer.id.expiration.check.interval.ms": "200"}
CHECK_INTERVAL_MS = int(OVERRIDES["producer.id.expiration.check.interval.ms"])


@dataclass(frozen=True)
class Bug:
    """One published anomaly: what it is called, where it is documented, what fixes it,
    and the checker anomaly that shows it."""

    name: str
    title: str
    reference: str
    fixed_by: str
    anomaly: str


BUGS: dict[str, Bug] = {
    "expired_producer": Bug(
        "expired_producer", "Idempotence isn't forever",
        "KIP-854 (producer.id.expiration.ms); KIP-360 lets a forgotten producer write "
        "with any sequence",
        "producer.id.expiration.ms longer than the producer's delivery timeout",
        C.DUPLICATES),
    "stale_end_txn": Bug(
        "stale_end_txn", "A stale commit lands in the next transaction",
        "KAFKA-17754; Jepsen, Bufstream 0.1.0 (2024) section 5.4; KIP-890",
        "transaction protocol 2 (KIP-890 part 2): Java clients >= 4.0 on a cluster with "
        "transaction.version=2 bump the epoch every transaction", C.ABORTED_READS),
    "hanging_transaction": Bug(
        "hanging_transaction", "A hanging transaction",
        "KAFKA-12671; KIP-890 part 1 (transaction.partition.verification.enable, 3.6)",
        "transaction.partition.verification.enable=true (the default since 3.6): the "
        "partition leader asks the coordinator before a transaction's first write",
        "hung_partitions"),  # HUNG, judged by hung_partitions()
}

#: The anomaly of a hanging transaction: a partition whose last stable offset stays
#: below its high watermark although no transaction of the History is open.
HUNG = "hung_partitions"


@dataclass
class Reproduction:
    """One run of a reproduction: the evidence and the Checker's verdict.

    ``variant`` is ``"bug"`` or ``"fixed"``; ``late`` the broker's answer to each late
    request (``NONE``: it took effect); ``anomalies`` the count of the bug's anomaly.
    """

    bug: str
    variant: str
    topic: str
    history: History
    reads: list[Any]
    result: C.Result
    late: list[str | None]
    seconds: float
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def anomalies(self) -> int:
        anomaly = BUGS[self.bug].anomaly
        if anomaly == HUNG:
            return len(self.notes.get(HUNG, []))
        return self.result.counts.get(anomaly, 0)

    def row(self) -> dict[str, Any]:
        """This run as one row of chapter 09's results table: the variant, the bug's
        anomalies, the broker's answers to the late requests, the records read, the
        time, and the reproduction's notes."""
        return {"variant": self.variant, "anomalies": self.anomalies,
                "late request answered": ", ".join(map(str, self.late)),
                "records read": self.result.stats["records_read"],
                "seconds": round(self.seconds, 1), **self.notes}

    def after_repair(self) -> list[dict[str, int]]:
        """The hung partition's bounds after ``kafka-transactions abort`` freed it
        (:func:`hanging_transaction` with ``repair``).

        Why a method: a run where nothing hung repaired nothing, and a chapter asking
        for the repair then deserves the reason, not a ``KeyError``.
        """
        if "after_repair" in self.notes:
            return self.notes["after_repair"]
        if self.bug != "hanging_transaction":
            why = "only a hanging_transaction run repairs anything"
        elif not self.notes.get(HUNG):
            why = (f"no partition hung (the late write was answered "
                   f"{', '.join(map(str, self.late)) or 'never'}), so nothing was repaired")
        else:
            why = "it ran with repair=False"
        raise LabError(f"{self.bug} ({self.variant}) on topic {self.topic} has no state "
                       f"after a repair: {why}")

    def summary(self) -> str:
        b = BUGS[self.bug]
        return (f"{b.title} ({self.variant}): {self.anomalies} {b.anomaly}; the late "
                f"request was answered {', '.join(map(str, self.late)) or 'never'}. "
                f"{self.result.summary()}")

    def to_dict(self) -> dict[str, Any]:
        return {"bug": self.bug, "variant": self.variant, "topic": self.topic,
                "anomalies": self.anomalies, "late": list(self.late),
                "seconds": round(self.seconds, 2), "result": self.result.to_dict(),
                "notes": dict(self.notes)}


def table(runs: Iterable[Reproduction]) -> Any:
    """Chapter 09's results table: one :meth:`Reproduction.row` per run (a DataFrame)."""
    import pandas as pd

    return pd.DataFrame([r.row() for r in runs])


def _fresh(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def set_broker_default(cluster: Any, name: str, value: object | None) -> None:
    """Set a dynamic broker config on every broker of the cluster (a per-broker
    override on each: librdkafka refuses the unnamed cluster-wide resource, and more
    than one BROKER resource per call, so one call per broker). ``None`` deletes the
    override: each broker is back on the setting it started with."""
    op, text = ((AlterConfigOpType.DELETE, None) if value is None
                else (AlterConfigOpType.SET, str(value)))
    admin = cluster.admin()
    try:
        for node in cluster.nodes:
            resource = ConfigResource(ResourceType.BROKER, str(node), incremental_configs=[
                ConfigEntry(name, text, incremental_operation=op)])
            for future in admin.incremental_alter_configs([resource]).values():
                future.result(30)
    except KafkaException as exc:
        what = f"remove the override of {name}" if value is None else f"set {name}={value}"
        raise LabError(f"could not {what} on the brokers: {exc.args[0].str()}") from exc
    # The controller has committed the change; each broker applies it when its metadata
    # catches up, later on a loaded host (a cold CI run read the old value back). A
    # reproduction timed against the setting, or the next one, starts only once every
    # broker says it runs on it.
    wait_until(f"every broker to report {name}="
               f"{'its own setting' if value is None else text}",
               lambda: all(_applied(admin, node, name, text) for node in cluster.nodes),
               CONFIG_APPLIED_S, interval=0.1, retry=(KafkaException,))


def _applied(admin: Any, node: object, name: str, text: str | None) -> bool:
    """Does broker ``node`` report ``name`` at ``text`` (None: no dynamic override)?"""
    resource = ConfigResource(ResourceType.BROKER, str(node))
    entry = next(iter(admin.describe_configs([resource]).values())).result(30)[name]
    if text is None:  # the C layer hands the source as an int, a ConfigEntry made here an enum
        return getattr(entry.source, "value", entry.source) != \
            ConfigSource.DYNAMIC_BROKER_CONFIG.value
    return entry.value == text


@contextmanager
def broker_default(cluster: Any, name: str, value: object) -> Iterator[None]:
    """:func:`set_broker_default` for the ``with`` block only: a reproduction must not
    leave the cluster misconfigured for the next one (or for the student's own tries)."""
    set_broker_default(cluster, name, value)
    try:
        yield
    finally:
        set_broker_default(cluster, name, None)


def _require_proxy(cluster: Any, what: str) -> None:
    if not getattr(cluster, "proxies", None):
        raise LabError(f"{what} needs the fault proxy: start the cluster with "
                       "Cluster.start(..., proxy=True, overrides=kit.OVERRIDES)")


# --- idempotence isn't forever ---------------------------------------------------------


def expired_producer(cluster: Any, expiration_ms: int = 1500, history: History | None = None,
                     hold_s: float | None = None, delivery_timeout_ms: int = 20_000,
                     process: str = "idempotent") -> Reproduction:
    """An idempotent producer writes one value; its ack is lost, its retry held late.

    The broker appends the write; the proxy loses the acknowledgement; the client
    retries at once on a new connection, and the proxy holds that retry for ``hold_s``
    (default: the expiration plus two expiry checks plus a second). When the broker has
    forgotten the producer by then (``expiration_ms`` shorter than the hold), it takes
    the retry as a new write: two copies, with ``enable.idempotence=true``. With
    ``expiration_ms`` at least the delivery timeout (the documented advice) the broker
    still knows the producer and recognises the retry: one copy.

    ``producer.id.expiration.ms`` is set cluster-wide, dynamically, for this run only
    (the override is removed afterwards); the cluster must have started with
    :data:`OVERRIDES` so the broker looks every 200 ms.
    """
    _require_proxy(cluster, "expired_producer")
    for name, value, low in (("expiration_ms", expiration_ms, 100),
                             ("delivery_timeout_ms", delivery_timeout_ms, 5000)):
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise bad_value(name, value, f"a whole number of milliseconds >= {low}")
    hold_s = (expiration_ms + 2 * CHECK_INTERVAL_MS + 1000) / 1000 if hold_s is None else hold_s
    if not 0 < hold_s * 1000 < delivery_timeout_ms - 2000:
        raise bad_value("hold_s", hold_s, "seconds, well under the delivery timeout "
                        f"({delivery_timeout_ms} ms)")
    t0 = time.monotonic()
    history = history if history is not None else History()
    with broker_default(cluster, "producer.id.expiration.ms", expiration_ms):
        topic = cluster.create_topic(_fresh("expired-producer"), partitions=1)
        client_id = _fresh(process)
        nemesis = Nemesis(cluster, history)
        nemesis.lose_ack(topic=topic, client_id=client_id)
        hold = nemesis.hold_request("Produce", skip=1, client_id=client_id,
                                    node=cluster.leader(topic)).handle
        producer = Producer(config(cluster.bootstrap_servers, **{
            "client.id": client_id, "enable.idempotence": True, "acks": "all",
            "socket.timeout.ms": delivery_timeout_ms,
            "message.timeout.ms": delivery_timeout_ms}))
        recorder = Recorder(history, process, topic)
        recorder.send(producer, ValueId(process, 0), partition=0)
        if not hold.wait(10):
            raise LabError("the producer's retry never came (the lost ack did not make it "
                           f"retry within 10 s); proxy: {cluster.proxies}")
        time.sleep(hold_s)
        late = nemesis.release_held().handle[0].errors
        producer.flush(delivery_timeout_ms / 1000)
        recorder.settle()
    reads = readers.read_back(cluster, [topic], "read_uncommitted")
    result = C.check(history, reads)
    variant = "bug" if expiration_ms < hold_s * 1000 else "fixed"
    return Reproduction("expired_producer", variant, topic, history, reads, result, late,
                        time.monotonic() - t0, {"expiration_ms": expiration_ms,
                                                "held_s": hold_s,
                                                "delivery_timeout_ms": delivery_timeout_ms})


# --- a stale commit lands in the next transaction --------------------------------------


def stale_end_txn(cluster: Any, history: History | None = None,
                  request_timeout_ms: int = 3000, process: str = "shop") -> Reproduction:
    """KAFKA-17754 with librdkafka: transaction 1's EndTxn, held, commits transaction 2.

    1. Transaction 1 writes a value and commits. The proxy holds its EndTxn; the client
       times out (``socket.timeout.ms``), retries on a new connection, and that retry
       commits transaction 1.
    2. Transaction 2 writes a value, acknowledged (uncommitted).
    3. The held EndTxn(commit) of transaction 1 reaches the coordinator now. Same
       producer id, same epoch (librdkafka keeps one epoch across transactions), state
       "ongoing": the coordinator commits transaction 2.
    4. The application aborts transaction 2; the coordinator refuses
       (``INVALID_TXN_STATE``: it is already committed).

    A read_committed reader then returns transaction 2's value: an aborted read.
    """
    _require_proxy(cluster, "stale_end_txn")
    t0 = time.monotonic()
    history = history if history is not None else History()
    topic = cluster.create_topic(_fresh("stale-end-txn"), partitions=1)
    client_id = _fresh(process)
    nemesis = Nemesis(cluster, history)
    producer = Producer(config(cluster.bootstrap_servers, **{
        "client.id": client_id, "transactional.id": f"tx-{client_id}",
        "socket.timeout.ms": request_timeout_ms, "transaction.timeout.ms": 60_000}))
    recorder = Recorder(history, process, topic)
    producer.init_transactions(30)
    history.record(process, "init_txn", "ok", detail=f"tx-{client_id}")
    hold = nemesis.hold_request("EndTxn", client_id=client_id).handle
    notes: dict[str, Any] = {}
    for n in (1, 2):
        txn = f"{process}/txn-{n}"
        producer.begin_transaction()
        history.record(process, "begin_txn", "ok", txn=txn)
        recorder.send(producer, ValueId(process, n - 1), partition=0, txn=txn)
        producer.flush(30)
        if n == 1:
            started = time.monotonic()
            _end(producer, history, process, txn, "commit")
            notes["commit_1_seconds"] = round(time.monotonic() - started, 2)
            if not hold.wait(0):
                raise LabError("transaction 1's EndTxn was never held: the proxy saw no "
                               f"EndTxn from client {client_id}")
    late = nemesis.inject_held().handle[0].errors
    notes["abort_2"] = _end(producer, history, process, f"{process}/txn-2", "abort")
    recorder.settle()
    readers.wait_stable(cluster, topic, timeout=30)
    reads = readers.read_back(cluster, [topic], "read_committed")
    result = C.check(history, reads)
    try:
        producer.flush(0)
    except KafkaException:
        pass  # a fatal producer stays fatal; it is dropped either way
    return Reproduction("stale_end_txn", "bug", topic, history, reads, result, late,
                        time.monotonic() - t0, notes)


def _end(producer: Producer, history: History, process: str, txn: str, how: str) -> str:
    """Commit or abort, recording the op; returns the outcome's error name or ``ok``."""
    try:
        getattr(producer, f"{how}_transaction")(30)
    except KafkaException as exc:
        cause = kafka_cause(exc) or exc
        history.record(process, f"{how}_txn", "fail", txn=txn, error=cause)
        return cause.args[0].name()
    history.record(process, f"{how}_txn", "ok", txn=txn)
    return "ok"


def java_stale_end_txn(cluster: Any, history: History | None = None,
                       request_timeout_ms: int = 3000, records: int = 300,
                       rate: float = 40.0, transaction_ms: int = 1000,
                       settle_s: float = 5.0) -> dict[str, Any]:
    """The fix: Kafka's Java 4.1 client under the same held-then-injected EndTxn.

    The Java client is Kafka's ``ProducerPerformance`` tool from the pinned tools jars
    (``kafka-producer-perf-test``), writing ``records`` records in transactions of
    ``transaction_ms``. It speaks transaction protocol 2: every transaction ends with a
    new epoch, so transaction 1's EndTxn, injected while a later transaction is open,
    carries a stale epoch and the coordinator refuses it (``PRODUCER_FENCED``).

    Returns the broker's answers to the late request and the tool's exit code; the
    hold and the injection are fault ops in ``history``.
    """
    _require_proxy(cluster, "java_stale_end_txn")
    history = history if history is not None else History()
    topic = cluster.create_topic(_fresh("stale-end-txn-java"), partitions=1)
    client_id = _fresh("java")
    nemesis = Nemesis(cluster, history)
    hold = nemesis.hold_request("EndTxn", client_id=client_id).handle
    cmd = tools.producer_perf_command(cluster.bootstrap_servers, topic, client_id, records,
                                      rate, transaction_ms, request_timeout_ms)
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        if not hold.wait(30):
            raise LabError("the Java producer's first EndTxn was never held")
        time.sleep(settle_s)  # it timed out, retried, and is inside a later transaction
        late = nemesis.inject_held().handle[0].errors
        out, _ = proc.communicate(timeout=records / rate + 60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return {"late": late, "version": hold.held[0].head.api_version, "exit": proc.returncode,
            "seconds": round(time.monotonic() - t0, 2), "topic": topic,
            "tool_output": out.strip().splitlines()[-1:] if out else []}


def finalized_transaction_version(cluster: Any) -> int:
    """The cluster's finalized ``transaction.version`` feature level."""
    return tools.feature_level(cluster, "transaction.version")


@contextmanager
def transaction_version(cluster: Any, level: int, timeout: float = 30.0) -> Iterator[int]:
    """Run the block with the cluster's ``transaction.version`` feature at ``level``
    (0-2), then put the level it had back.

    Kafka documents the feature as safe to lower and raise at runtime; a client picks
    the protocol up on its next connection, so a Java producer started inside the block
    speaks the old protocol (no epoch bump per transaction) when ``level`` is below 2.
    """
    if level not in (0, 1, 2):
        raise bad_value("level", level, "a transaction.version feature level: 0, 1 or 2")
    before = finalized_transaction_version(cluster)

    def move_to(target: int) -> None:
        if target == finalized_transaction_version(cluster):
            return
        verb = "downgrade" if target < finalized_transaction_version(cluster) else "upgrade"
        cluster.tool("kafka-features", verb, "--feature", f"transaction.version={target}")
        wait_until(f"transaction.version to reach {target} (kafka-features {verb})",
                   lambda: finalized_transaction_version(cluster) == target, timeout,
                   interval=0.5,
                   explain=lambda: f"; broker log: {cluster.log_path(cluster.nodes[0])}")

    move_to(level)
    try:
        yield before
    finally:
        move_to(before)


# --- a hanging transaction -----------------------------------------------------------


def open_transactions(history: Any) -> list[str]:
    """Transactions of the History begun and not ended (no commit or abort op at all)."""
    begun: dict[str, None] = {}
    ended = set()
    for op in history:
        if op.kind == "begin_txn" and op.txn:
            begun[op.txn] = None
        elif op.kind in ("commit_txn", "abort_txn") and op.txn:
            ended.add(op.txn)
    return [t for t in begun if t not in ended]


def hung_partitions(history: Any, bounds: list[dict[str, int]]) -> list[dict[str, int]]:
    """A checker of hanging transactions: the partitions held back (last stable offset
    below the high watermark) while no transaction of the History is open.

    Why the History: an open transaction holds its partitions back by design (chapter
    04); only when every transaction the clients began has ended is a held-back
    partition a transaction nobody will ever end. A History with an open transaction
    is judged not at all (an empty list would be a claim; this raises instead).
    """
    still = open_transactions(history)
    if still:
        raise LabError(f"cannot judge hanging transactions while {', '.join(still)} is "
                       "open: end it first")
    return [b for b in bounds if b["last_stable_offset"] < b["high_watermark"]]


#: The header ``kafka-transactions find-hanging`` (Kafka 4.1.1) prints, with no rows
#: below it when nothing hangs.
HANGING_COLUMNS = ("Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch",
                   "StartOffset", "LastTimestamp", "Duration(min)")


def parse_hanging(text: str) -> list[dict[str, Any]]:
    """Rows of ``kafka-transactions find-hanging``: its header line, then one row per
    hanging transaction (none: nothing hangs).

    Why it raises on anything else: an empty list is the claim "nothing hangs", the very
    verdict of the fixed variant, so output in a shape it does not know (another Kafka
    version, an error text on standard output, nothing at all) must not read as one.
    """
    lines = [ln.split() for ln in text.strip().splitlines() if ln.strip()]
    head = list(HANGING_COLUMNS)
    if head not in lines:
        expected = f"its header line ({' '.join(head)})"
    else:
        lines = lines[lines.index(head):]  # after what the JVM may print first (warnings)
        bad = next((row for row in lines[1:] if len(row) != len(head)), None)
        expected = "" if bad is None else (f"rows of {len(head)} columns under its header, "
                                           f"not {' '.join(bad)!r}")
    if expected:
        raise LabError(f"kafka-transactions find-hanging printed what the lab cannot read: "
                       f"expected {expected}; it printed {' '.join(text.split())[:120]!r}")
    return [dict(zip(head, row, strict=True)) for row in lines[1:]]


def hanging_transaction(cluster: Any, verification: bool = False,
                        history: History | None = None, request_timeout_ms: int = 3000,
                        process: str = "late-writer", repair: bool = True) -> Reproduction:
    """KIP-890 part 1: a transaction's write, held until after the transaction aborted.

    1. A transactional producer (librdkafka) begins, writes one value. The proxy holds
       the Produce request (and the client's retries of it); the write times out, which
       fails the transaction, and the client aborts it (the coordinator writes the ABORT
       marker).
    2. The proxy injects the held Produce. With
       ``transaction.partition.verification.enable=false`` (set here, dynamically) the
       leader appends it: a transactional batch after its transaction's end, which no
       marker will ever close. The last stable offset is stuck; read_committed readers
       stall. Kafka's ``kafka-transactions find-hanging`` lists it.
    3. With ``repair``, ``kafka-transactions abort`` writes the missing ABORT marker and
       the partition moves again (recorded in ``notes``).

    With ``verification=True`` (the default since 3.6) the leader asks the coordinator
    first and refuses the late write: nothing hangs.
    """
    _require_proxy(cluster, "hanging_transaction")
    t0 = time.monotonic()
    history = history if history is not None else History()
    with broker_default(cluster, "transaction.partition.verification.enable",
                        "true" if verification else "false"):
        topic = cluster.create_topic(_fresh("hanging"), partitions=1)
        client_id = _fresh(process)
        nemesis = Nemesis(cluster, history)
        producer = Producer(config(cluster.bootstrap_servers, **{
            "client.id": client_id, "transactional.id": f"tx-{client_id}",
            "socket.timeout.ms": request_timeout_ms,
            "message.timeout.ms": 2 * request_timeout_ms, "transaction.timeout.ms": 60_000}))
        recorder = Recorder(history, process, topic)
        producer.init_transactions(30)
        history.record(process, "init_txn", "ok", detail=f"tx-{client_id}")
        # Every attempt of the write is held (the first and librdkafka's retries of it on
        # a new connection), so none is written before the abort; at most 3 fit in
        # message.timeout.ms, two request timeouts.
        hold = nemesis.hold_request("Produce", count=HELD_ATTEMPTS, client_id=client_id,
                                    node=cluster.leader(topic)).handle
        txn = f"{process}/txn-1"
        producer.begin_transaction()
        history.record(process, "begin_txn", "ok", txn=txn)
        recorder.send(producer, ValueId(process, 0), partition=0, txn=txn)
        wait_until(f"the proxy to hold a Produce of client {client_id}", lambda: hold.held, 10)
        # The write times out and fails the transaction before the abort starts: an abort
        # waiting for a message that times out can crash librdkafka
        # (clients.wait_transaction_failed says why).
        failed_before = CLIENT_LOG.txn_failed.get(client_id, 0)
        if producer.flush(4 * request_timeout_ms / 1000):
            raise LabError(f"the held write of {client_id} outlived message.timeout.ms "
                           f"({2 * request_timeout_ms} ms) by twice over")
        wait_transaction_failed(producer, client_id, failed_before)
        hold.cancel()  # what it holds stays held
        notes: dict[str, Any] = {"verification": verification,
                                 "abort": _end(producer, history, process, txn, "abort")}
        recorder.settle()
        # The first held request is the late write; the retries (same sequence number,
        # same epoch) follow it in and are answered as its duplicates or refused alike.
        answers = nemesis.inject_held().handle[0].errors
        late, notes["retries_answered"] = answers[:1], answers[1:]
        time.sleep(0.5)  # let a refused or accepted write settle before looking
        bounds = readers.bounds(cluster, topic)
        notes[HUNG] = hung_partitions(history, bounds)
        notes["read_committed_sees"] = len(readers.peek(cluster, topic, "read_committed", 2))
        leader = cluster.leader(topic)
        found = parse_hanging(cluster.tool(
            "kafka-transactions", "find-hanging", "--broker-id", str(leader),
            "--max-transaction-timeout", "0"))
        notes["find_hanging"] = [row for row in found if row.get("Topic") == topic]
        if repair and notes[HUNG]:
            start = notes[HUNG][0]["last_stable_offset"]
            cluster.tool("kafka-transactions", "abort", "--topic", topic, "--partition", "0",
                         "--start-offset", str(start))
            notes["after_repair"] = readers.wait_stable(cluster, topic, timeout=30)
        reads = readers.read_back(cluster, [topic], "read_uncommitted")
        # From the complete read (it raises rather than stop short; a repair adds only a
        # marker): the late record, or nothing when it was refused.
        notes["read_uncommitted_sees"] = len(reads)
        result = C.check(history, reads)
    return Reproduction("hanging_transaction", "fixed" if verification else "bug", topic,
                        history, reads, result, late, time.monotonic() - t0, notes)


# --- buttons -------------------------------------------------------------------------

#: The chapter's buttons, by the names a headless schedule presses.
ACTIONS = ("Expired producer", "Expiration above timeout", "Stale EndTxn", "Java client",
           "Hanging transaction", "Verified late write")


def buttons(cluster: Any, expiration_ms: int = 1500, fixed_expiration_ms: int = 60_000,
            runs: list[Any] | None = None) -> list[Any]:
    """Buttons for a :class:`~deliverylab.notebook.widgets.FaultPanel`: each runs one reproduction
    (or its fix) once, on a fresh topic, and returns its one-line verdict. Every run is
    appended to ``runs`` (when given), so a chapter can look at what was pressed."""

    kept = runs if runs is not None else []
    hold_s = (expiration_ms + 2 * CHECK_INTERVAL_MS + 1000) / 1000

    def once(fn: Any, **kwargs: Any) -> Any:
        def press() -> str:
            rep = fn(cluster, **kwargs)
            kept.append(rep)
            if isinstance(rep, dict):
                return (f"the Java client's stale EndTxn (v{rep['version']}) was answered "
                        f"{', '.join(map(str, rep['late']))}")
            return rep.summary()
        press.__name__ = fn.__name__
        return press

    return [
        FaultSpec(ACTIONS[0], once(expired_producer, expiration_ms=expiration_ms),
                  help="lose an idempotent producer's ack, hold its retry past "
                       "producer.id.expiration.ms", style="danger"),
        FaultSpec(ACTIONS[1], once(expired_producer, expiration_ms=fixed_expiration_ms,
                                   hold_s=hold_s),
                  help="the same late retry, with the expiration above the delivery "
                       "timeout", style="success"),
        FaultSpec(ACTIONS[2], once(stale_end_txn),
                  help="hold transaction 1's EndTxn, inject it into transaction 2, abort "
                       "transaction 2", style="danger"),
        FaultSpec(ACTIONS[3], once(java_stale_end_txn),
                  help="the same stale EndTxn against Kafka's Java client (protocol 2)",
                  style="success"),
        FaultSpec(ACTIONS[4], once(hanging_transaction, verification=False),
                  help="hold a transaction's write until it aborted, deliver it with "
                       "partition verification off; find and abort it", style="danger"),
        FaultSpec(ACTIONS[5], once(hanging_transaction, verification=True),
                  help="the same late write with partition verification on (the default)",
                  style="success"),
    ]
