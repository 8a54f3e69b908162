"""Service instances with side effects outside Kafka: a database row and an HTTP call.

Chapter 06's service consumes orders in a consumer group and, per message, inserts a row
into a database and calls an HTTP service (a payment), then commits its offsets. Each
instance runs in **its own OS process** (``python -m deliverylab.services.instance``), so a crash
is a real ``SIGKILL`` and its database connection, HTTP client and Kafka consumer die
with it, as the seed's "service instance dies" says.

Clients record, checkers judge: an instance records one op per thing it did (``poll``,
``db_write``, ``http_call``, ``commit``, ``fault``) in its op log
(:class:`~deliverylab.history.OpLog`); the parent merges the logs into a History
(:meth:`ServiceFleet.record`). Its life (started, partitions assigned, stopped) is not an
op: it goes to the process's own log, beside its stderr. What reached the database and
the HTTP service is read from them, not from what the instance believed.

Patterns (``pattern=``), each the same loop with a different unit of work per message:

- ``none``: insert the row (autocommit), call the service without a key.
- ``offset_keyed``: a processed-offsets table in the same transaction as the row, keyed
  by topic/partition/offset, and the offset as the idempotency key. Right for a
  redelivery, wrong for a producer duplicate (two offsets, one message).
- ``idempotent``: the idempotent consumer: a processed-messages table keyed by the
  message id, in the same database transaction as the row; the message id as the HTTP
  idempotency key (one effect per key, honoured by the service).
- ``outbox``: the row, the processed mark and an outbox record in one transaction; a
  relay process publishes the outbox to a topic at least once, and the next consumer
  (an ``idempotent`` fleet) makes the HTTP call, deduplicating by message id.

Faults (the registry's ``kill_after_db``, ``kill_after_http``, ``stall_consumer``,
``restart_instance``, and ``kill_relay`` for the outbox's relay) are *armed* in the
running instances through their stdin; the first instance to reach the fault's point
takes it (a marker file makes a press fire once) and records it, then dies by
``SIGKILL`` of itself or sleeps.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from ..history import OpLog
from .db import Database

#: The unit of work per message, by name (see the module docstring).
PATTERNS = ("none", "offset_keyed", "idempotent", "outbox")

#: The client faults an instance takes, and where: after the database write (committed)
#: and before the offset commit; right after the HTTP call; before the offset commit,
#: asleep past ``max.poll.interval.ms``. ``restart_instance`` is ``kill_after_db`` whose
#: victim the fleet starts again.
POINTS = {"kill_after_db": "after_db", "kill_after_http": "after_http",
          "stall_consumer": "before_commit", "restart_instance": "after_db",
          "kill_relay": "after_publish"}

#: Consumer settings of an instance: a dead member is noticed within seconds.
CONSUMER = {"auto.offset.reset": "earliest", "enable.auto.commit": False,
            "session.timeout.ms": 6000, "heartbeat.interval.ms": 1000,
            "max.poll.interval.ms": 8000, "isolation.level": "read_committed"}


# =========================================================================================
# The instance (child process)
# =========================================================================================


class Instance:
    """One service instance: consume, do the pattern's work per message, commit."""

    def __init__(self, spec: dict[str, Any]) -> None:
        from confluent_kafka import Consumer

        from ..clients import config

        self.spec = spec
        self.name = spec["instance"]
        self.run = spec["run"]
        self.pattern = spec["pattern"]
        self.db = Database(spec["db"])
        self.conn = self.db.connect()
        self.http = spec.get("http")
        self.log = OpLog(spec["ops"])
        self.markers = Path(spec["markers"])
        self.armed: list[dict[str, Any]] = list(spec.get("faults", []))
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.handled = 0
        self.consumer = Consumer(config(spec["bootstrap"], **{
            **CONSUMER, **spec.get("consumer", {}), "group.id": spec["group"],
            "client.id": self.name}))

    # --- recording --------------------------------------------------------------------
    def emit(self, kind: str, outcome: str = "ok", message_id: str | None = None,
             **fields: Any) -> None:
        """One op of this instance (``message_id``: the value it is about, if any)."""
        self.log.record(self.name, kind, outcome, [message_id] if message_id else [],
                        **fields)

    # --- faults -----------------------------------------------------------------------
    def commands(self) -> None:
        """Read ``arm <json>`` / ``stop`` lines from the parent; EOF (the parent died,
        or stopped us) means stop."""
        for line in sys.stdin:
            verb, _, arg = line.strip().partition(" ")
            if verb == "arm":
                with self.lock:
                    self.armed.append(json.loads(arg))
            elif verb == "stop":
                break
        self.stopping.set()

    def take(self, point: str, index_in_batch: int) -> dict[str, Any] | None:
        """The armed fault due at ``point`` now, if this instance is the one to take it:
        it has handled enough messages, and it wins the press's marker file."""
        with self.lock:
            for armed in list(self.armed):
                if POINTS[armed["fault"]] != point or self.handled < armed.get("after", 0):
                    continue
                # A kill after the DB write of a batch's first message would redo no
                # HTTP call: wait for a message with a finished one before it.
                if point == "after_db" and index_in_batch < 1:
                    continue
                self.armed.remove(armed)
                try:
                    fd = os.open(self.markers / armed["token"], os.O_CREAT | os.O_EXCL)
                except FileExistsError:
                    continue  # a sibling took this press
                os.close(fd)
                return armed
        return None

    def fault(self, point: str, index_in_batch: int = 0) -> None:
        armed = self.take(point, index_in_batch)
        if armed is None:
            return
        if armed["fault"] == "stall_consumer":
            seconds = float(armed.get("seconds", 12))
            self.emit("fault", "info", fault="stall_consumer",
                      detail=f"{self.name} stalls {seconds:g} s before its offset commit")
            time.sleep(seconds)
            return
        self.emit("fault", "info", fault=armed["fault"],
                  detail=f"{self.name} is killed (SIGKILL) {point.replace('_', ' ')}")
        os.kill(os.getpid(), signal.SIGKILL)

    # --- the work -----------------------------------------------------------------------
    def call(self, message_id: str, key: str | None) -> None:
        from .http import call

        answer = call(self.http, {"run": self.run, "message_id": message_id,
                                  "instance": self.name}, key)
        self.emit("http_call", message_id=message_id,
                  detail=f"payment {answer['payment']}" + (" (replayed)" if answer.get(
                      "replayed") else ""))

    def handle(self, msg: Any, message_id: str, index: int) -> None:
        """One message's unit of work, per pattern (see the module docstring)."""
        topic, part, off = msg.topic(), msg.partition(), msg.offset()
        row = ("INSERT INTO orders_rows (run, message_id, instance, kafka_partition, "
               "kafka_offset, at) VALUES (?, ?, ?, ?, ?, ?)")
        row_args = (self.run, message_id, self.name, part, off, time.time())
        where = {"message_id": message_id, "partition": part, "offset": off}
        if self.pattern == "none":
            self.db.execute(self.conn, row, row_args)
            self.emit("db_write", **where)
            self.fault("after_db", index)
            self.call(message_id, None)
            self.fault("after_http", index)
            return
        with self.db.transaction(self.conn):
            if self.pattern == "offset_keyed":
                mark = self.db.execute(self.conn, "INSERT INTO processed_offsets (run, topic,"
                                       " kafka_partition, kafka_offset) VALUES (?, ?, ?, ?) "
                                       "ON CONFLICT DO NOTHING", (self.run, topic, part, off))
                key = f"{self.run}:{topic}/{part}@{off}"
            else:
                mark = self.db.execute(self.conn, "INSERT INTO processed (run, message_id) "
                                       "VALUES (?, ?) ON CONFLICT DO NOTHING",
                                       (self.run, message_id))
                key = f"{self.run}:{message_id}"
            if mark.rowcount == 0:  # seen before: nothing to do (the empty txn commits)
                self.emit("db_write", "fail", detail="already processed: skipped", **where)
                return
            self.db.execute(self.conn, row, row_args)
            if self.pattern == "outbox":
                self.db.execute(self.conn, "INSERT INTO outbox (run, message_id, published) "
                                "VALUES (?, ?, 0)", (self.run, message_id))
            else:
                self.call(message_id, key)
                self.fault("after_http", index)  # inside the open transaction
        self.emit("db_write", **where)
        self.fault("after_db", index)

    def loop(self) -> None:
        from confluent_kafka import KafkaException, TopicPartition

        from .. import values as V

        def assigned(_consumer: Any, parts: list) -> None:
            note(self.name, "assigned " + ",".join(f"{p.topic}/{p.partition}" for p in parts))

        self.consumer.subscribe([self.spec["topic"]], on_assign=assigned)
        threading.Thread(target=self.commands, daemon=True).start()
        note(self.name, f"started, pid {os.getpid()}")
        batch = int(self.spec.get("batch", 10))
        while not self.stopping.is_set():
            msgs = [m for m in self.consumer.consume(batch, timeout=0.3) if not m.error()]
            if not msgs:
                continue
            last: dict[tuple[str, int], int] = {}
            for index, msg in enumerate(msgs):
                try:
                    message_id = str(V.decode(msg.value()))
                except ValueError:
                    continue
                self.emit("poll", message_id=message_id, partition=msg.partition(),
                          offset=msg.offset(), topic=msg.topic())
                self.handle(msg, message_id, index)
                self.handled += 1
                last[(msg.topic(), msg.partition())] = msg.offset()
            self.fault("before_commit")
            if not last:
                continue
            offsets = [TopicPartition(t, p, o + 1) for (t, p), o in sorted(last.items())]
            detail = ",".join(f"{tp.topic}/{tp.partition}@{tp.offset}" for tp in offsets)
            try:
                self.consumer.commit(offsets=offsets, asynchronous=False)
                self.emit("commit", detail=detail)
            except KafkaException as exc:
                # E.g. evicted after a stall: the partitions are another member's now.
                self.emit("commit", "fail", detail=detail, error=exc.args[0].name())
        from ..clients import close_consumer

        close_consumer(self.consumer)
        note(self.name, "stopped")


class Relay:
    """The outbox relay: publish unpublished outbox records, then mark them published.

    At least once: a relay killed between the publish and the mark publishes again, so
    the next consumer must deduplicate (the ``idempotent`` pattern does, by message id).
    """

    def __init__(self, spec: dict[str, Any]) -> None:
        from confluent_kafka import Producer

        from ..clients import config

        self.spec = spec
        self.run = spec["run"]
        self.db = Database(spec["db"])
        self.conn = self.db.connect()
        self.producer = Producer(config(spec["bootstrap"], **{"acks": "all"}))
        self.log = OpLog(spec["ops"])
        self.stopping = threading.Event()
        self.armed: list[dict[str, Any]] = []

    def commands(self) -> None:
        for line in sys.stdin:
            verb, _, arg = line.strip().partition(" ")
            if verb == "arm":
                self.armed.append(json.loads(arg))
            elif verb == "stop":
                break
        self.stopping.set()

    def fault(self, published: int) -> None:
        """``kill_relay``: die between the publish and the mark, so the records stay
        unpublished in the database and the next relay publishes them again."""
        while self.armed:
            armed = self.armed.pop(0)
            try:
                fd = os.open(Path(self.spec["markers"]) / armed["token"],
                             os.O_CREAT | os.O_EXCL)
            except FileExistsError:
                continue
            os.close(fd)
            self.log.record(self.spec["instance"], "fault", "info", fault="kill_relay",
                            detail=f"the relay is killed (SIGKILL) after publishing "
                                   f"{published} outbox record(s), before marking them "
                                   "published")
            os.kill(os.getpid(), signal.SIGKILL)

    def loop(self) -> None:
        from .. import values as V

        threading.Thread(target=self.commands, daemon=True).start()
        while not self.stopping.is_set():
            ids = [r[0] for r in self.db.execute(
                self.conn, "SELECT message_id FROM outbox WHERE run = ? AND published = 0 "
                "ORDER BY message_id", (self.run,)).fetchall()]
            if not ids:
                time.sleep(0.2)
                continue
            for message_id in ids:
                vid = V.parse(message_id)
                self.producer.produce(self.spec["out_topic"], V.encode(vid.producer, vid.seq),
                                      key=V.key(vid.producer))
            if self.producer.flush(30) != 0:
                continue  # not all delivered: leave them unpublished, try again
            self.fault(len(ids))
            for message_id in ids:
                self.db.execute(self.conn, "UPDATE outbox SET published = 1 WHERE run = ? "
                                "AND message_id = ?", (self.run, message_id))
            note(self.spec["instance"], f"published {len(ids)}")


def note(name: str, what: str) -> None:
    """A line about the process's life (not an op) for its own log: a person reads it
    when a fleet does not finish; the History never holds it."""
    print(f"{time.monotonic():.6f} {name} {what}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deliverylab.services.instance",
                                     description="one chapter-06 service instance")
    parser.add_argument("--spec", required=True, help="the instance's settings, as JSON")
    args = parser.parse_args(argv)
    spec = json.loads(args.spec)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    (Relay(spec) if spec.get("role") == "relay" else Instance(spec)).loop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
