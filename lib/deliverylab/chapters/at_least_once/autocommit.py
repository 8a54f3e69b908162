"""The default consumer (auto-commit) under the ``crash_consumer`` fault, in a real process.

Every other consumer of the lab commits by hand. A consumer whose author sets nothing
auto-commits: librdkafka's ``enable.auto.commit=true`` commits, from a background
timer (``auto.commit.interval.ms``, 5 s), the offsets in its *offset store*, and with
``enable.auto.offset.store=true`` (also the default) a message's offset is stored the
moment the message is handed to the application. So the timer can commit a batch the
application has not processed yet; a crash then loses the rest of that batch: its
successor starts after it.

The fix librdkafka documents: ``enable.auto.offset.store=false`` and ``store_offsets()``
after processing each message; the timer then commits only what was processed, and a
crash redoes (at least once) instead of skipping.

How the run is made certain, not lucky: the crashing instance is a child process
(``python -m deliverylab.chapters.at_least_once.autocommit``). It takes one batch,
processes its first few values (copies them to the output topic), and then — as if the
rest of the batch took longer than the commit interval — waits until the group's
committed offset, read from the broker, shows that the timer has committed. Then it
SIGKILLs itself: no ``close()``, which would commit once more. A successor of the same
group starts at the committed offset and processes the rest. The Checker's pipeline
check counts what never reached the output and what reached it twice.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition

from ... import values as V
from ...checker import pipeline_exactly_once
from ...clients import close_consumer, config
from ...errors import LabError, bad_value
from ...waiting import wait_until

#: The two offset-store policies: librdkafka's default, and store-after-processing.
STORES = {"default": {},
          "after_processing": {"enable.auto.offset.store": False}}
#: Settings both instances take on top of librdkafka's defaults, and why: the input is
#: written before the consumer starts, and a new group starts at the *end* by default.
START = {"auto.offset.reset": "earliest"}


@dataclass
class AutoCommitCrash:
    """One crash of an auto-committing consumer, and what its successor did."""

    store: str
    settings: dict[str, Any]  # what the crashed instance set on top of the defaults
    handed: list[str]  # values the crashed instance's poll handed to it
    processed: list[str]  # values it processed (copied to the output) before the crash
    committed_at_crash: int  # the group's committed offset when it died
    waited_s: float  # how long it waited for the timer's commit
    exit_code: int  # -9: SIGKILL
    redone: list[str] = field(default_factory=list)  # values the successor processed
    missing: list[str] = field(default_factory=list)  # input values with no output
    twice: list[str] = field(default_factory=list)  # values output more than once
    topics: tuple[str, str] = ("", "")

    def __str__(self) -> str:
        return (f"store={self.store}: the poll handed {len(self.handed)} values, "
                f"{len(self.processed)} were processed, the timer had committed offset "
                f"{self.committed_at_crash} when the instance was SIGKILLed; its successor "
                f"processed {len(self.redone)}; {len(self.missing)} never processed, "
                f"{len(self.twice)} processed twice")


def _vid(msg: Any) -> str:
    """The lab's name of a record's value (``producer:seq``), as the Checker reports it."""
    return str(V.decode(msg.value()))


def _committed(consumer: Consumer, topic: str) -> int:
    return consumer.committed([TopicPartition(topic, 0)], timeout=10)[0].offset


def crash_instance(bootstrap: str, source: str, sink: str, group: str, store: str,
                   batch: int, process: int, state: Path, wait_s: float) -> None:
    """The child: take one batch, process ``process`` of it, wait for the timer's commit,
    write ``state`` and SIGKILL itself. Never returns."""
    consumer = Consumer(config(bootstrap, **{"group.id": group, **START, **STORES[store]}))
    producer = Producer(config(bootstrap, **{"acks": "all"}))
    consumer.subscribe([source])
    handed: list[Any] = []
    deadline = time.monotonic() + 60
    while len(handed) < batch:
        if time.monotonic() > deadline:
            raise LabError(f"the consumer got {len(handed)} of {batch} values in 60 s")
        handed += [m for m in consumer.consume(batch - len(handed), timeout=1.0)
                   if not m.error()]
    for msg in handed[:process]:
        producer.produce(sink, msg.value(), partition=0)
        producer.flush(30)
        if store == "after_processing":
            consumer.store_offsets(message=msg)
    # The rest of the batch "takes long": longer than the commit timer's interval.
    want = (handed[-1] if store == "default" else handed[process - 1]).offset() + 1
    started = time.monotonic()
    seen = [_committed(consumer, source)]

    def at_want() -> bool:
        seen[0] = _committed(consumer, source)
        return seen[0] == want

    if seen[0] != want:
        wait_until(f"the auto-commit timer to commit offset {want}", at_want, wait_s,
                   interval=0.2, explain=lambda: f" (committed: {seen[0]})")
    committed = seen[0]
    state.write_text(json.dumps({
        "handed": [_vid(m) for m in handed],
        "processed": [_vid(m) for m in handed[:process]],
        "committed": committed, "waited_s": time.monotonic() - started}))
    os.kill(os.getpid(), signal.SIGKILL)


def _successor(bootstrap: str, source: str, sink: str, group: str) -> list[str]:
    """A restarted instance: starts at the group's committed offset, processes to the end.

    It takes the partition by assignment (still at the committed offset, as a group
    member would start): joining the group would wait for the dead member's session to
    expire, which changes nothing about *where* it starts.
    """
    consumer = Consumer(config(bootstrap, **{"group.id": group, **START,
                                             "enable.auto.commit": False}))
    producer = Producer(config(bootstrap, **{"acks": "all"}))
    done: list[str] = []
    try:
        _, end = consumer.get_watermark_offsets(TopicPartition(source, 0), timeout=10)
        start = _committed(consumer, source)
        consumer.assign([TopicPartition(source, 0, start)])
        position = start
        deadline = time.monotonic() + 30
        while position < end:
            if time.monotonic() > deadline:
                raise LabError(f"the successor reached offset {position} of {end} in 30 s")
            for msg in consumer.consume(100, timeout=1.0):
                if msg.error():
                    continue
                producer.produce(sink, msg.value(), partition=0)
                done.append(_vid(msg))
                position = msg.offset() + 1
        producer.flush(30)
    finally:
        close_consumer(consumer)
    return done


def default_consumer_crash(cluster: Any, name: str, store: str = "default",
                           values: int = 30, batch: int = 10, process: int = 4,
                           wait_s: float = 30.0) -> AutoCommitCrash:
    """Write ``values`` values to a new one-partition topic ``<name>-in``; let an
    auto-committing consumer crash after processing ``process`` of a ``batch``-value
    poll, once the commit timer has fired; let a successor finish; count.

    ``store`` is ``"default"`` (librdkafka's defaults) or ``"after_processing"``
    (``enable.auto.offset.store=false`` + ``store_offsets()`` after each value).
    """
    from ...history import History
    from ...modes import AT_LEAST_ONCE
    from ...process.children import Children, child_env, python_module
    from ...readers import read_back
    from ...workload import ProducerWorkload

    if store not in STORES:
        raise bad_value("store", store, " or ".join(map(repr, STORES)))
    if not (isinstance(batch, int) and isinstance(process, int) and 1 <= process < batch
            and isinstance(values, int) and values >= batch):
        raise bad_value("values, batch, process", (values, batch, process),
                        "whole numbers with 1 <= process < batch <= values")
    source = cluster.create_topic(f"{name}-in", partitions=1)
    sink = cluster.create_topic(f"{name}-out", partitions=1)
    group = f"{name}-group"
    ProducerWorkload(cluster, source, AT_LEAST_ONCE, History(), process="orders").run(values)
    children = Children()
    with tempfile.TemporaryDirectory(prefix="autocommit-") as tmp:
        state = Path(tmp) / "state.json"
        log = Path(tmp) / "consumer.log"
        try:
            proc = children.start("auto-committing consumer", python_module(
                "chapters.at_least_once.autocommit", "--bootstrap", cluster.bootstrap_servers,
                "--source", source, "--sink", sink, "--group", group, "--store", store,
                "--batch", str(batch), "--process", str(process), "--state", str(state),
                "--wait", str(wait_s)),
                log, env=child_env())
            try:
                code = proc.wait(wait_s + 90)
            except subprocess.TimeoutExpired as exc:
                raise LabError(f"the auto-committing consumer did not crash within "
                               f"{wait_s + 90:g} s; log: {log.read_text()[-500:]}") from exc
            if code != -signal.SIGKILL or not state.exists():
                raise LabError(f"the auto-committing consumer exited {code} before its "
                               f"crash point; log: {log.read_text()[-800:]}")
            got = json.loads(state.read_text())
        finally:
            children.close()
    redone = _successor(cluster.bootstrap_servers, source, sink, group)
    reads = read_back(cluster, [source, sink])
    missing, extra = pipeline_exactly_once([r for r in reads if r.topic == source],
                                           [r for r in reads if r.topic == sink])
    return AutoCommitCrash(
        store=store, settings={**START, **STORES[store]}, handed=got["handed"],
        processed=got["processed"], committed_at_crash=got["committed"],
        waited_s=got["waited_s"], exit_code=code, redone=redone,
        missing=[f["value"] for f in missing], twice=[f["value"] for f in extra],
        topics=(source, sink))


def main(argv: list[str] | None = None) -> int:
    """The crashing instance, as a process of its own (see :func:`crash_instance`)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for opt in ("bootstrap", "source", "sink", "group", "state"):
        p.add_argument(f"--{opt}", required=True)
    p.add_argument("--store", choices=sorted(STORES), required=True)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--process", type=int, required=True)
    p.add_argument("--wait", type=float, default=30.0)
    a = p.parse_args(argv)
    crash_instance(a.bootstrap, a.source, a.sink, a.group, a.store, a.batch, a.process,
                   Path(a.state), a.wait)
    return 1  # not reached: the instance SIGKILLs itself


if __name__ == "__main__":
    sys.exit(main())
