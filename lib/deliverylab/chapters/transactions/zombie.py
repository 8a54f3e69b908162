"""Chapter 04's live zombie: an instance paused mid-transaction, its partitions taken
over by another member of its group, then resumed (``kit.live_zombie``).

Section 6 of the chapter brings back a *crashed* producer: fenced by its
``transactional.id`` (a successor with the same id bumped the epoch). This one is fenced
by something else, KIP-447's group-generation fencing: two instances of a
consume-transform-produce stage with *different* transactional ids share one consumer
group, and the offsets a transaction commits (``send_offsets_to_transaction``) carry the
consumer's group metadata -- member id and generation. An instance that lost its
partitions in a rebalance while it was paused holds a stale generation, and the group
coordinator refuses its offsets.

The choreography, each instance a process of its own (``python -m
deliverylab.chapters.transactions.zombie SPEC``):

1. ``instance-a`` copies batches in transactions; in its ``pause_at``-th transaction,
   after its records are written (acknowledged, uncommitted) and its offsets and group
   metadata are taken, it is paused with SIGSTOP -- a stop-the-world pause, the zombie's
   classic cause (the lab stops it at that point so that every run is the same);
2. its heartbeats stop; after ``session.timeout.ms`` the group evicts it, and
   ``instance-b`` (same group, its own ``transactional.id``) gets every partition,
   resumes from the committed offsets, processes the rest and commits;
3. the lab resumes ``instance-a`` with SIGCONT: it goes on where it stopped and calls
   ``send_offsets_to_transaction`` with its stale metadata; the coordinator refuses it,
   the transaction can only abort, and nothing ``instance-a`` wrote in it becomes
   visible to read_committed readers -- they are still in the log, aborted.

Every op of both instances is recorded in a History; the Checker judges the output.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ... import checker as C
from ...errors import LabError
from ...history import History, OpLog, Read
from ...modes import IDEMPOTENT, TRANSACTIONAL
from ...readers import bounds, read_back
from ...values import decode
from ...workload import ProducerWorkload

#: This module as each instance runs it (``python -m deliverylab.<_MODULE>``).
_MODULE = "chapters.transactions.zombie"
#: The classic group protocol's session floor on the broker (group.min.session.timeout.ms,
#: 6 s by default): the group evicts a silent member after this long.
SESSION_TIMEOUT_MS = 6000

#: Errors the group coordinator answers a stale member's TxnOffsetCommit with (KIP-447):
#: the member was evicted (UNKNOWN_MEMBER_ID) or the group moved on (ILLEGAL_GENERATION).
GENERATION_FENCING = frozenset({"ILLEGAL_GENERATION", "UNKNOWN_MEMBER_ID",
                                "FENCED_INSTANCE_ID"})


@dataclass
class LiveZombie:
    """What one live-zombie run showed."""

    history: History
    topics: tuple[str, str]
    #: The error the resumed instance's offsets or commit got (a KafkaError name).
    zombie_error: str | None
    #: The call that raised it: ``send_offsets`` or ``commit_txn``.
    zombie_call: str | None
    #: Records the zombie wrote in its paused transaction (acknowledged, uncommitted).
    zombie_records: int
    #: Of those, how many a read_committed / read_uncommitted reader finds.
    visible_committed: int
    visible_uncommitted: int
    result: C.Result
    paused_seconds: float
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def fenced_by_generation(self) -> bool:
        return self.zombie_error in GENERATION_FENCING

    def summary(self) -> str:
        return (f"instance-a paused {self.paused_seconds:.1f} s mid-transaction with "
                f"{self.zombie_records} records written; resumed, its {self.zombie_call} "
                f"got {self.zombie_error}; read_committed sees {self.visible_committed} of "
                f"those records, read_uncommitted {self.visible_uncommitted}; "
                f"output: {self.result.summary()}")


# --- one instance (the child process) ---------------------------------------------------


def _caught_up(consumer: Any, ends: dict[int, int], topic: str) -> bool:
    assignment = consumer.assignment()
    if {tp.partition for tp in assignment if tp.topic == topic} != set(ends):
        return False
    for tp in consumer.position(assignment):
        if tp.offset < ends[tp.partition]:
            return False
    return True


def instance(spec: dict[str, Any]) -> int:
    """One stage instance: copy the input in transactions of up to 10 records; pause in
    the ``pause_at``-th, if told to; stop once the input is processed or after the
    resumed zombie's transaction ended."""
    from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

    from ...clients import close_consumer, config

    me = spec["process"]
    log = OpLog(spec["ops"])
    consumer = Consumer(config(spec["bootstrap"], **{
        "group.id": spec["group"], "enable.auto.commit": False,
        "auto.offset.reset": "earliest", "isolation.level": "read_committed",
        "session.timeout.ms": SESSION_TIMEOUT_MS,
        "max.poll.interval.ms": SESSION_TIMEOUT_MS + 4000}))
    producer = Producer(config(spec["bootstrap"], **{
        "transactional.id": spec["transactional_id"], "enable.idempotence": True,
        "transaction.timeout.ms": 60000}))
    producer.init_transactions(30)
    log.record(me, "init_txn", "ok", detail=spec["transactional_id"])
    consumer.subscribe([spec["input"]])
    ends = {int(p): int(o) for p, o in spec["ends"].items()}
    deadline = time.monotonic() + float(spec["timeout"])
    n = 0
    while not _caught_up(consumer, ends, spec["input"]):
        if time.monotonic() > deadline:
            raise LabError(f"{me} did not process its input within {spec['timeout']} s")
        msgs = [m for m in consumer.consume(10, 0.5) if not m.error()]
        if not msgs:
            continue
        n += 1
        txn = f"{me}/txn-{n}"
        producer.begin_transaction()
        log.record(me, "begin_txn", "ok", txn=txn)
        for m in msgs:
            value = str(decode(m.value()))
            log.record(me, "poll", "ok", [value], topic=m.topic(), partition=m.partition(),
                       offset=m.offset())

            def report(err: Any, msg: Any, value: str = value, txn: str = txn) -> None:
                log.record(me, "send", "ok" if err is None else "fail", [value],
                           topic=msg.topic(), partition=msg.partition() if err is None
                           else None, offset=msg.offset() if err is None else None,
                           txn=txn, error=str(err) if err else None)

            producer.produce(spec["output"], m.value(), key=me.encode(),
                             partition=m.partition(), on_delivery=report)
        producer.flush(30)
        top: dict[int, int] = {}
        for m in msgs:
            top[m.partition()] = max(top.get(m.partition(), 0), m.offset() + 1)
        offsets = [TopicPartition(spec["input"], p, o) for p, o in sorted(top.items())]
        detail = ",".join(f"{spec['input']}/{p}@{o}" for p, o in sorted(top.items()))
        metadata = consumer.consumer_group_metadata()
        zombie = n == spec.get("pause_at")
        if zombie:  # the stop-the-world pause, between taking the metadata and using it
            log.record(me, "fault", "info", fault="zombie_producer", txn=txn,
                       detail=f"{me} is paused (SIGSTOP) in {txn}: its records are "
                       "written, its offsets not yet sent")
            Path(spec["paused"]).touch()
            os.kill(os.getpid(), signal.SIGSTOP)
            log.record(me, "fault", "info", fault="zombie_producer", txn=txn,
                       detail=f"{me} resumes (SIGCONT) and goes on with {txn}")
        call = "send_offsets"
        try:
            producer.send_offsets_to_transaction(offsets, metadata, 30)
            log.record(me, "send_offsets", "ok", txn=txn, detail=detail)
            call = "commit_txn"
            producer.commit_transaction(30)
            log.record(me, "commit_txn", "ok", txn=txn)
        except KafkaException as exc:
            err = exc.args[0]
            log.record(me, call, "fail", txn=txn, error=err.name(), detail=detail)
            if not zombie:
                raise
            if not err.fatal():
                producer.abort_transaction(30)
                log.record(me, "abort_txn", "ok", txn=txn, detail="the transaction can "
                           "only abort: its offsets were refused")
            break
        if zombie:  # not fenced: the lesson did not happen; the parent reports it
            break
    close_consumer(consumer)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print(f"usage: python -m deliverylab.{_MODULE} SPEC.json", file=sys.stderr)
        return 2
    return instance(json.loads(Path(args[0]).read_text()))


# --- the choreography (the notebook's side) ---------------------------------------------


def _stopped(pid: int, flag: Path) -> bool:
    """Has our child stopped itself? It touches ``flag`` right before its SIGSTOP;
    ``waitpid(WUNTRACED)`` then reports the stop (POSIX; it reaps nothing)."""
    if not flag.exists():
        return False
    try:
        got, status = os.waitpid(pid, os.WNOHANG | os.WUNTRACED)
    except ChildProcessError:
        return False
    return got == pid and os.WIFSTOPPED(status)


def _wait(what: str, done: Any, proc: Any, log: Path, timeout: float) -> None:
    from ...process.children import tail
    from ...waiting import wait_until

    def check() -> bool:
        if proc.poll() is not None and not done():
            raise LabError(f"{what}: the process exited ({proc.returncode}) first; its "
                           f"log:\n{tail(log)}")
        return bool(done())

    wait_until(what, check, timeout)


def live_zombie(cluster: Any, values: int = 60, pause_at: int = 2, partitions: int = 3,
                timeout: float = 90.0, history: History | None = None) -> LiveZombie:
    """Run the choreography of the module doc on ``cluster``; judge it."""
    from ...process.children import Children, child_env, python_module

    history = history if history is not None else History()
    tag = uuid.uuid4().hex[:6]
    source, sink, group = f"zin-{tag}", f"zout-{tag}", f"zombie-group-{tag}"
    for name in (source, sink):
        cluster.create_topic(name, partitions=partitions)
    ProducerWorkload(cluster, source, IDEMPOTENT, history, process="orders").run(values)
    ends = {b["partition"]: b["high_watermark"] for b in bounds(cluster, source)}
    work = Path(tempfile.mkdtemp(prefix=f"deliverylab-zombie-{tag}-"))
    base = {"bootstrap": cluster.bootstrap_servers, "input": source, "output": sink,
            "group": group, "ends": ends, "timeout": timeout,
            "paused": str(work / "paused")}
    children = Children()
    try:
        procs = {}
        for name, extra in (("instance-a", {"pause_at": pause_at}), ("instance-b", {})):
            spec = {**base, **extra, "process": name, "ops": str(work / f"{name}.jsonl"),
                    "transactional_id": f"{group}-{name}"}
            (work / f"{name}.json").write_text(json.dumps(spec))
            procs[name] = (work / f"{name}.json", work / f"{name}.log")
        a_spec, a_log = procs["instance-a"]
        a = children.start("instance-a", python_module(_MODULE, str(a_spec)),
                           a_log, env=child_env())
        flag = work / "paused"
        _wait("instance-a paused mid-transaction", lambda: _stopped(a.pid, flag), a, a_log,
              timeout)
        paused_at = time.monotonic()
        b_spec, b_log = procs["instance-b"]
        b = children.start("instance-b", python_module(_MODULE, str(b_spec)),
                           b_log, env=child_env())
        _wait("instance-b took every partition over and processed the input",
              lambda: b.poll() == 0, b, b_log, timeout)
        os.kill(a.pid, signal.SIGCONT)
        paused = time.monotonic() - paused_at
        _wait("instance-a resumed and ended its transaction", lambda: a.poll() == 0, a,
              a_log, timeout)
    finally:
        for proc, _, _ in list(children.procs.values()):
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGCONT)
        children.close()
    # Both instances' ops, in time order. A line cut short needs a kill mid-write, and
    # neither instance is killed here: should one be, the facts say how many.
    torn = history.merge_logs(work / f"{name}.jsonl" for name in procs).torn
    shutil.rmtree(work, ignore_errors=True)
    committed = read_back(cluster, [source, sink], "read_committed")
    uncommitted = read_back(cluster, [sink], "read_uncommitted")
    live = judge(history, committed, uncommitted, (source, sink), paused)
    if torn:
        live.facts["torn_op_log_lines"] = torn
    return live


def judge(history: History, committed: list[Read], uncommitted: list[Read],
          topics: tuple[str, str], paused: float) -> LiveZombie:
    """The zombie's fate from the History and both read-backs: ``committed`` of the input
    and the output, ``uncommitted`` of the output. Pure: no broker."""
    source, sink = topics
    fenced = [op for op in history if op.process == "instance-a" and op.outcome == "fail"
              and op.kind in ("send_offsets", "commit_txn")]
    pause = [op for op in history if op.kind == "fault" and op.fault == "zombie_producer"]
    txn = pause[0].txn if pause else None
    written = {(op.partition, op.offset) for op in history if op.kind == "send"
               and op.txn == txn and op.outcome == "ok" and txn is not None}

    def visible(reads: list[Read]) -> int:
        return sum(1 for r in reads if r.topic == sink and (r.partition, r.offset) in written)

    result = C.check(history, committed, TRANSACTIONAL.allowed, pipeline=(source, sink))
    commits = sum(1 for op in history if op.process == "instance-b"
                  and op.kind == "commit_txn" and op.outcome == "ok")
    return LiveZombie(history, topics, fenced[0].error if fenced else None,
                      fenced[0].kind if fenced else None, len(written), visible(committed),
                      visible(uncommitted), result, paused, {"instance_b_commits": commits})


if __name__ == "__main__":
    sys.exit(main())
