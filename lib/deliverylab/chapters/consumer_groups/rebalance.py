"""What a rebalance costs: one consumer of a group stalls past ``max.poll.interval.ms``.

A group of ``members`` consumers (threads of this kernel, each its own librdkafka
client) reads a topic that a producer fills at a steady rate. One member, the
*staller*, stops polling for longer than ``max.poll.interval.ms`` and then polls again.
Every record each member is handed, and every assignment callback, goes to a
*timeline*; the pauses are measured from that timeline alone (pure functions, unit
tested on hand-written timelines):

* the **stop-the-world pause**: the longest interval during which *no* partition of the
  group was consumed at all;
* each partition's longest gap between two consumed records.

Each member's revoke callback does what a real consumer's does before it gives partitions
up (Kafka's ``ConsumerRebalanceListener`` docs name both uses): it commits their
processed offsets synchronously, then flushes the state it keeps for them, modeled here
as ``flush_s`` seconds per revoked partition (the lab's stand-in, not something Kafka
does). librdkafka serves the callback inside the member's poll, so it consumes nothing
meanwhile: the more partitions a rebalance revokes, the longer it stops.

Two rebalances follow a stall, in librdkafka's classic protocol (``rdkafka_cgrp.c``,
``rd_kafka_cgrp_max_poll_interval_check_tmr_cb``): when the interval is exceeded the
client itself sends LeaveGroup (the first rebalance: the others take the staller's
partitions), and when the application polls again the client joins as a new member (the
second: the partitions are spread over all members again). How much of the group stops
depends on the settings compared here, each a librdkafka consumer setting:

* ``eager``: librdkafka's default ``partition.assignment.strategy=range,roundrobin``:
  every member gives up *every* partition at every rebalance, and waits for the others.
* ``cooperative``: ``cooperative-sticky``: members keep what they keep; only partitions
  that move are revoked (KIP-429). librdkafka still pauses *all* of a member's
  partitions while one of its rebalance callbacks is pending (``rdkafka_cgrp.c``).
* ``static``: ``group.instance.id`` (KIP-345) with the default eager strategy: a static
  member that exceeds the interval sends *no* LeaveGroup (same function of
  ``rdkafka_cgrp.c``), so if it polls again within ``session.timeout.ms`` the broker
  hands it back its partitions without a rebalance; its own partitions wait meanwhile.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...cluster.ready import wait_until
from ...errors import LabError, bad_value

#: The settings each variant puts on top of the shared consumer settings.
STRATEGIES: dict[str, dict[str, Any]] = {
    "eager": {"partition.assignment.strategy": "range,roundrobin"},
    "cooperative": {"partition.assignment.strategy": "cooperative-sticky"},
    "static": {"partition.assignment.strategy": "range,roundrobin"},  # + group.instance.id
}
#: How long the staller waits, after its stall, for the others to hold its partitions:
#: the eviction is ``max.poll.interval.ms`` into the stall, and a wait that times out raises.
EVICTION_CAP = 60.0
#: The modeled cost of flushing one revoked partition's state, in seconds (the lab's
#: stand-in for an application's flush; far above the 30-50 ms pauses measured without).
FLUSH_S = 0.3
#: What each variant is, in one line, for tables and figures.
LABELS = {"eager": "eager (librdkafka's default range,roundrobin)",
          "cooperative": "cooperative-sticky",
          "static": "static membership (group.instance.id), eager"}


@dataclass(frozen=True)
class Event:
    """One line of a timeline: seconds since the run's start, who, what.

    ``kind`` is ``"record"`` (a record handed to ``member``: ``partitions`` holds its
    partition), ``"assigned"``, ``"revoked"``, ``"lost"`` (a rebalance callback, with the
    partitions it named), ``"committed"`` / ``"commit-failed"`` (the revoke callback's
    synchronous commit: ``detail`` has ``partition@offset``s or the error),
    ``"flushed"`` (the revoke callback returns, its modeled flush done),
    ``"stall"`` / ``"wake"`` (the staller stops / resumes polling), or ``"error"`` (a
    consumer error the poll returned, in ``detail``).
    """

    t: float
    member: str
    kind: str
    partitions: tuple[int, ...] = ()
    detail: str = ""


# ------------------------------------------------------------------ measuring (pure)


def gaps(times: Iterable[float], start: float, end: float) -> list[tuple[float, float]]:
    """The intervals of [start, end] between consecutive ``times`` (and the window's
    edges): where nothing happened."""
    if end < start:
        raise bad_value("window", (start, end), "start <= end")
    inside = sorted(t for t in times if start <= t <= end)
    edges = [start, *inside, end]
    return [(a, b) for a, b in zip(edges, edges[1:], strict=False) if b > a]


def longest(intervals: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """The longest interval (the first of equals); (start, start) for none."""
    if not intervals:
        return (0.0, 0.0)
    return max(intervals, key=lambda ab: ab[1] - ab[0])


def records(timeline: Iterable[Event], partition: int | None = None) -> list[float]:
    """The times records were handed to any member (of one ``partition``, if named)."""
    return [e.t for e in timeline if e.kind == "record"
            and (partition is None or e.partitions[0] == partition)]


def stop_the_world(timeline: Sequence[Event], start: float, end: float) -> tuple[float, float]:
    """The longest interval of [start, end] in which no partition was consumed at all."""
    return longest(gaps(records(timeline), start, end))


def partition_pauses(timeline: Sequence[Event], partitions: Iterable[int], start: float,
                     end: float) -> dict[int, tuple[float, float]]:
    """Each partition's longest interval of [start, end] without a consumed record."""
    return {p: longest(gaps(records(timeline, p), start, end)) for p in partitions}


def callbacks(timeline: Iterable[Event], members: Iterable[str], start: float,
              end: float) -> list[Event]:
    """The rebalance callbacks ``members`` got in [start, end): each is one rebalance
    they took part in (an eager one gives a ``revoked`` and an ``assigned``)."""
    names = set(members)
    return [e for e in timeline if e.member in names and start <= e.t < end
            and e.kind in ("assigned", "revoked", "lost")]


def revoke_spans(timeline: Iterable[Event], members: Iterable[str], start: float,
                 end: float) -> dict[str, list[tuple[float, float, int]]]:
    """Each of ``members``' revoke callbacks that began in [start, end): (began,
    returned, partitions revoked). The callback returns at its member's next
    ``flushed`` (or at ``end`` if the timeline stops first); while it runs, its member
    polls nothing, so it consumes nothing."""
    names = set(members)
    spans: dict[str, list[tuple[float, float, int]]] = {m: [] for m in names}
    open_: dict[str, tuple[float, int]] = {}
    for e in sorted(timeline, key=lambda e: e.t):
        if e.member not in names:
            continue
        if e.kind == "revoked" and start <= e.t < end:
            open_[e.member] = (e.t, len(e.partitions))
        elif e.kind == "flushed" and e.member in open_:
            began, n = open_.pop(e.member)
            spans[e.member].append((began, e.t, n))
    for m, (began, n) in open_.items():
        spans[m].append((began, max(began, end), n))
    return spans


def owners(timeline: Iterable[Event], at: float) -> dict[int, str]:
    """Which member held each partition at time ``at``, from the callbacks before it."""
    held: dict[int, str] = {}
    for e in sorted(timeline, key=lambda e: e.t):
        if e.t > at:
            break
        if e.kind == "assigned":
            held.update({p: e.member for p in e.partitions})
        elif e.kind in ("revoked", "lost"):
            for p in e.partitions:
                if held.get(p) == e.member:
                    del held[p]
    return held


@dataclass
class Window:
    """One rebalance's window of the run, and what it cost."""

    name: str  # "eviction" (the first rebalance) or "rejoin" (the second)
    start: float
    end: float
    stop_the_world: tuple[float, float]  # the longest interval with nothing consumed
    longest_kept: float  # longest pause of a partition its healthy owner kept throughout
    callbacks: list[Event]  # the healthy members' rebalance callbacks in the window
    revoked_kept: float = 0.0  # seconds those kept partitions spent revoked, summed
    #: each healthy member's revoke callbacks (began, returned, partitions) in the window
    revokes: dict[str, list[tuple[float, float, int]]] = field(default_factory=dict)

    @property
    def pause(self) -> float:
        return self.stop_the_world[1] - self.stop_the_world[0]

    @property
    def revoked(self) -> int:
        """Partitions the healthy members gave up (so committed and flushed) in it."""
        return sum(n for spans in self.revokes.values() for _, _, n in spans)

    def longest_revoke(self) -> float:
        """The longest revoke callback of a healthy member in the window (0 if none)."""
        return max((b - a for s in self.revokes.values() for a, b, _ in s), default=0.0)

    def shortest_revoke(self) -> float:
        """The shortest of the healthy members' longest revoke callbacks; 0 if one of
        them had none. Under an eager protocol the group stands still at least this long:
        every member gives up everything, and the rebalance completes only after the
        last member to start its callback has returned from it and rejoined."""
        return min((max((b - a for a, b, _ in s), default=0.0)
                    for s in self.revokes.values()), default=0.0)


def measure(timeline: Sequence[Event], partitions: int, staller: str, stall: float,
            wake: float, end: float) -> tuple[Window, Window]:
    """The two windows of one stall: eviction [stall, wake) and rejoin [wake, end].

    ``longest_kept`` looks at the partitions a healthy member owned both when the
    window opened and when it closed: a partition that never had to move. Under an eager
    protocol it stops anyway (every member gives up everything); cooperatively it should
    not. Windows open at the stall, so the staller's own partitions (idle from the stall
    on) are left out of ``longest_kept`` but count for the stop-the-world pause only if
    nothing else flowed.
    """
    if not stall < wake < end:
        raise bad_value("stall, wake, end", (stall, wake, end), "times with stall < wake < end")
    members = {e.member for e in timeline} - {staller}
    out = []
    for name, a, b in (("eviction", stall, wake), ("rejoin", wake, end)):
        before, after = owners(timeline, a), owners(timeline, b)
        kept = [p for p in range(partitions)
                if before.get(p) == after.get(p) and before.get(p) in members]
        pauses = partition_pauses(timeline, kept, a, b)
        out.append(Window(name, a, b, stop_the_world(timeline, a, b),
                          max((y - x for x, y in pauses.values()), default=0.0),
                          callbacks(timeline, members, a, b),
                          revoked_time(timeline, kept, a, b),
                          revoke_spans(timeline, members, a, b)))
    return out[0], out[1]


def revoked_time(timeline: Sequence[Event], partitions: Iterable[int], start: float,
                 end: float) -> float:
    """Seconds ``partitions`` spent revoked in [start, end], summed: from each revoke
    callback naming one to the next assign callback naming it (or ``end``).

    It reads only the callbacks, so it says what the *protocol* did, whatever the
    fetching: an eager rebalance revokes every partition, also those that come back to
    the same member; a cooperative one revokes only those that move.
    """
    wanted, total = set(partitions), 0.0
    since: dict[int, float] = {}
    held: dict[int, str] = {}
    for e in sorted(timeline, key=lambda e: e.t):
        if e.t > end:
            break
        for p in e.partitions:
            if e.kind == "assigned":
                held[p] = e.member
                if p in since:
                    total += e.t - since.pop(p)
            elif e.kind in ("revoked", "lost") and held.get(p) == e.member:
                # a "lost" naming partitions someone else holds now changes nothing
                del held[p]
                if p in wanted and e.t >= start:
                    since[p] = e.t
    return total + sum(end - t for t in since.values())


# ------------------------------------------------------------------- running (real)


@dataclass
class GroupRun:
    """One stall of one member of a group, under one strategy: the timeline, measured."""

    strategy: str
    settings: dict[str, Any]  # the consumer settings every member used
    partitions: int
    staller: str
    stall: float
    wake: float
    end: float
    timeline: list[Event] = field(repr=False)
    flush_s: float = 0.0  # the modeled flush per revoked partition the members spent
    eviction: Window = field(init=False)
    rejoin: Window = field(init=False)

    def __post_init__(self) -> None:
        self.eviction, self.rejoin = measure(self.timeline, self.partitions, self.staller,
                                             self.stall, self.wake, self.end)

    def row(self) -> dict[str, Any]:
        """One row of the chapter's table."""
        return {"strategy": LABELS[self.strategy],
                "eviction: stop-the-world pause (s)": round(self.eviction.pause, 2),
                "eviction: partitions the others flushed": self.eviction.revoked,
                "rejoin: stop-the-world pause (s)": round(self.rejoin.pause, 2),
                "rejoin: partitions the others flushed": self.rejoin.revoked,
                "longest pause of a kept partition (s)": round(
                    max(self.eviction.longest_kept, self.rejoin.longest_kept), 2),
                "kept partitions' time revoked (s)": round(self.revoked_kept, 3),
                "staller's partitions idle (s)": round(self.staller_idle(), 2)}

    @property
    def revoked_kept(self) -> float:
        """Seconds the partitions that never moved spent revoked, both windows."""
        return self.eviction.revoked_kept + self.rejoin.revoked_kept

    def commits(self) -> tuple[int, int]:
        """The revoke callbacks' synchronous commits up to the run's end (not those of
        the consumers' close): (accepted, refused)."""
        kinds = [e.kind for e in self.timeline if e.t <= self.end]
        return kinds.count("committed"), kinds.count("commit-failed")

    def owners(self, at: float) -> dict[int, str]:
        """Which member held each partition at ``at``: chapter 2b's filled figure."""
        return owners(self.timeline, at)

    def staller_idle(self) -> float:
        """The longest time a partition the staller held at its stall went unconsumed."""
        mine = [p for p, m in owners(self.timeline, self.stall).items() if m == self.staller]
        pauses = partition_pauses(self.timeline, mine, self.stall, self.end)
        return max((b - a for a, b in pauses.values()), default=0.0)

    def __str__(self) -> str:
        return (f"{LABELS[self.strategy]}: {self.staller} stalled at {self.stall:.1f} s, "
                f"woke at {self.wake:.1f} s; stop-the-world pause {self.eviction.pause:.2f} s "
                f"at the eviction ({len(self.eviction.callbacks)} callbacks of the others), "
                f"{self.rejoin.pause:.2f} s at the rejoin ({len(self.rejoin.callbacks)})")


class _Member:
    """One consumer thread: polls, and writes what it is handed to the timeline."""

    def __init__(self, run: _Run, name: str, settings: dict[str, Any]) -> None:
        from confluent_kafka import Consumer

        from ...clients import config

        self.run, self.name = run, name
        self.consumer = Consumer(config(run.bootstrap, **settings))
        self.static = "group.instance.id" in settings  # evicted only after its session
        self.stall_at: float | None = None  # run time at which to stall, for the staller
        self.assigned: set[int] = set()
        self.position: dict[int, int] = {}  # partition -> offset after the last one handed
        self.thread = threading.Thread(target=self._loop, name=f"rebalance-{name}", daemon=True)

    def _note(self, kind: str, parts: Iterable[Any] = (), detail: str = "") -> None:
        self.run.note(self.name, kind, tuple(sorted(p.partition for p in parts)), detail)

    def _assigned(self, _c: Any, parts: list[Any]) -> None:
        self.assigned |= {p.partition for p in parts}
        self._note("assigned", parts)

    def _revoked(self, _c: Any, parts: list[Any]) -> None:
        """What a real application does before it gives partitions up: commit what it
        processed of them (synchronously: the next owner starts there), then flush the
        state it keeps for them (the lab's modeled cost, ``flush_s`` per partition).
        librdkafka calls this inside the member's poll, so meanwhile it consumes nothing."""
        from confluent_kafka import KafkaException, TopicPartition

        self.assigned -= {p.partition for p in parts}
        self._note("revoked", parts)
        done = [TopicPartition(self.run.topic, p.partition, self.position.pop(p.partition))
                for p in parts if p.partition in self.position]
        if done:
            try:  # a synchronous commit answers per partition, or raises for all
                result = self.consumer.commit(offsets=done, asynchronous=False) or []
            except KafkaException as exc:  # e.g. a generation already gone: recorded
                self._note("commit-failed", done, str(exc.args[0]))
            else:
                ok = [p for p in result if not p.error]
                if ok:
                    self._note("committed", ok, " ".join(f"{p.partition}@{p.offset}"
                                                         for p in ok))
                if len(ok) < len(result):
                    bad = [p for p in result if p.error]
                    self._note("commit-failed", bad, str(bad[0].error))
        if parts and self.run.flush_s > 0 and not self.run.stopping.is_set():
            # (not at the end: close() revokes everything, after the measured windows)
            time.sleep(self.run.flush_s * len(parts))
        self._note("flushed", parts)

    def _lost(self, _c: Any, parts: list[Any]) -> None:
        """Lost partitions may already be another member's (the staller's, after its
        eviction): the lab commits and flushes nothing for them."""
        self.assigned -= {p.partition for p in parts}
        for p in parts:
            self.position.pop(p.partition, None)
        self._note("lost", parts)

    def _loop(self) -> None:
        try:
            self.consumer.subscribe([self.run.topic], on_assign=self._assigned,
                                    on_revoke=self._revoked, on_lost=self._lost)
            while not self.run.stopping.is_set():
                if self.stall_at is not None and self.run.now() >= self.stall_at:
                    self.stall_at = None
                    self.run.note(self.name, "stall")
                    time.sleep(self.run.stall_s)  # the long call: no poll meanwhile
                    if not self.static:  # an event, not a margin: the eviction's
                        # rebalance over (the others hold its partitions), then 1 s more
                        wait_until(f"the group to take {self.name}'s partitions",
                                   lambda: self.run.taken_from(self.name), EVICTION_CAP,
                                   interval=0.05)
                        time.sleep(1.0)
                    self.run.note(self.name, "wake")
                for msg in self.consumer.consume(100, timeout=0.05):
                    if msg.error():
                        self.run.note(self.name, "error", detail=str(msg.error()))
                    else:
                        self.position[msg.partition()] = msg.offset() + 1
                        self.run.note(self.name, "record", (msg.partition(),))
        except BaseException as exc:  # handed to the owner, which raises it
            self.run.errors.append(exc)


class _Run:
    """The shared clock, the timeline and the stop flag of one group run."""

    def __init__(self, bootstrap: str, topic: str, stall_s: float, flush_s: float) -> None:
        self.bootstrap, self.topic, self.stall_s, self.flush_s = bootstrap, topic, stall_s, flush_s
        self.partitions = 0  # the topic's, set by stall_in_group
        self.t0 = time.monotonic()
        self.timeline: list[Event] = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.errors: list[BaseException] = []

    def now(self) -> float:
        return time.monotonic() - self.t0

    def taken_from(self, member: str) -> bool:
        """Do the other members hold every partition now (``member`` none of them)?"""
        with self.lock:
            held = owners(list(self.timeline), self.now())
        return len(held) == self.partitions and member not in held.values()

    def note(self, member: str, kind: str, partitions: tuple[int, ...] = (),
             detail: str = "") -> None:
        with self.lock:
            self.timeline.append(Event(self.now(), member, kind, partitions, detail))


def _raise_member_error(run: _Run) -> None:
    """A member thread's error ends a wait at once (wait_until's ``check``)."""
    if run.errors:
        raise run.errors[0]


def stall_in_group(cluster: Any, name: str, strategy: str, members: int = 3,
                   partitions: int = 6, rate: float = 300.0, warmup_s: float = 2.0,
                   stall_s: float = 10.0, settle_s: float = 5.0, max_poll_ms: int = 6000,
                   session_ms: int = 6000, heartbeat_ms: int = 1000,
                   flush_s: float = FLUSH_S) -> GroupRun:
    """Run a group of ``members`` on a new ``partitions``-partition topic ``<name>``
    filled at ``rate`` records/s; after ``warmup_s`` the last member stalls ``stall_s``
    (more than ``max_poll_ms``) -- and, unless static, on until the others hold all its
    partitions, plus 1 s (the eviction's rebalance over: an event, not a margin a loaded
    machine can eat) -- then polls again; ``settle_s`` later everything stops.

    Each member's ``on_revoke`` does what a real application's does, inside its poll:
    it commits the revoked partitions' processed offsets synchronously (a real commit;
    ``enable.auto.commit=false``, so that commit is the one that hands a partition on)
    and then spends ``flush_s`` per revoked partition: the lab's modeled cost of flushing
    the state it keeps for them (Kafka's ``ConsumerRebalanceListener`` docs name
    "flushing out any kind of cache of intermediate results" as a use of the revoke
    callback; Kafka itself does no such thing). Without it a callback costs a few ms
    here, and every strategy's pause measured the same 30-50 ms.

    The lab's settings (named as overrides of librdkafka's defaults, which are 300 s,
    45 s and 3 s): ``max.poll.interval.ms=max_poll_ms``, ``session.timeout.ms=session_ms``
    (librdkafka refuses a session timeout above the poll interval in the classic
    protocol), ``heartbeat.interval.ms=heartbeat_ms``. For ``static`` the stall must end
    before the session expires, or the broker evicts the static member anyway.
    """
    from confluent_kafka import Producer

    from ...clients import close_consumer, config

    if strategy not in STRATEGIES:
        raise bad_value("strategy", strategy, " or ".join(map(repr, STRATEGIES)))
    if not (isinstance(members, int) and 2 <= members <= partitions):
        raise bad_value("members", members, f"a whole number from 2 to partitions ({partitions})")
    if stall_s * 1000 <= max_poll_ms:
        raise bad_value("stall_s", stall_s,
                        f"more than max_poll_ms / 1000 ({max_poll_ms / 1000:g})")
    if not 0 <= flush_s * partitions * 1000 < max_poll_ms:
        # the callback runs inside poll: a flush longer than the interval evicts its member
        raise bad_value("flush_s", flush_s, f"0 or more, with flush_s * partitions under "
                        f"max_poll_ms / 1000 ({max_poll_ms / 1000:g})")
    if max_poll_ms < session_ms:
        raise bad_value("session_ms", session_ms, f"at most max_poll_ms ({max_poll_ms}), as "
                        "librdkafka requires in the classic protocol")
    topic = cluster.create_topic(name, partitions=partitions)
    settings = {"group.id": f"{name}-group", "auto.offset.reset": "earliest",
                "max.poll.interval.ms": max_poll_ms, "session.timeout.ms": session_ms,
                "heartbeat.interval.ms": heartbeat_ms, "enable.auto.commit": False,
                **STRATEGIES[strategy]}
    run = _Run(cluster.bootstrap_servers, topic, stall_s, flush_s)
    run.partitions = partitions
    names = [f"consumer-{i}" for i in range(members)]
    group = [_Member(run, n, {**settings, **({"group.instance.id": f"{name}-{n}"}
                                             if strategy == "static" else {})})
             for n in names]
    producer = Producer(config(cluster.bootstrap_servers, **{"linger.ms": 5}))
    try:
        for m in group:
            m.thread.start()
        wait_until("every partition to be assigned to the group", lambda: set().union(
            *(m.assigned for m in group)) == set(range(partitions))
            and all(m.assigned for m in group), 60, check=lambda: _raise_member_error(run),
            interval=0.05)
        staller = group[-1]
        t_end: float | None = None
        seq = 0
        started = run.now()
        staller.stall_at = started + warmup_s
        while t_end is None or run.now() < t_end:
            if run.errors:
                raise run.errors[0]
            due = int((run.now() - started) * rate)
            while seq < due:
                producer.produce(topic, str(seq).encode(), partition=seq % partitions)
                seq += 1
            producer.poll(0)
            wakes = [e.t for e in run.timeline if e.kind == "wake"]
            if t_end is None and wakes:
                t_end = wakes[0] + settle_s
            if run.now() > started + warmup_s + stall_s + settle_s + 60:
                raise LabError(f"{staller.name} did not wake from its {stall_s:g} s stall")
            time.sleep(0.01)
        run.stopping.set()
        for m in group:
            m.thread.join(10)
        if run.errors:
            raise run.errors[0]
    finally:
        run.stopping.set()
        producer.flush(10)
        for m in group:
            m.thread.join(10)
            close_consumer(m.consumer)
    timeline = sorted(run.timeline, key=lambda e: e.t)
    stall = next(e.t for e in timeline if e.kind == "stall")
    wake = next(e.t for e in timeline if e.kind == "wake")
    return GroupRun(strategy, settings, partitions, staller.name, stall, wake, t_end,
                    timeline, flush_s)


def compare(cluster: Any, name: str, strategies: Sequence[str] = tuple(STRATEGIES),
            **kwargs: Any) -> list[GroupRun]:
    """The same stall under each strategy, one after the other, each on its own topic."""
    return [stall_in_group(cluster, f"{name}-{s}", s, **kwargs) for s in strategies]


def claims(runs: Sequence[GroupRun]) -> dict[str, bool]:
    """What chapter 02b asserts of an eager, a cooperative and a static run of the same
    stall: relations that follow from the protocols.

    The pause relations need the modeled flush (``flush_s`` > 0 in every run): without
    it a revoke callback costs a few ms, every strategy's pause is the same tens of ms on
    one host, and no relation on it follows. With it, an eager rebalance stops the whole
    group for at least one member's commit-and-flush of everything it held; at the
    eviction cooperative-sticky revokes nothing and static membership has no rebalance.

    Not claimed: that cooperative-sticky shortens either pause. librdkafka pauses all of
    a member's partitions while a rebalance callback is pending (``rdkafka_cgrp.c``), the
    assign callback included, and a fetcher with nothing to fetch may idle up to
    ``rd_kafka_max_block_ms`` (1 s) before it fetches again: so the eviction's stop,
    with nothing revoked, was 0.1 s in one cold run and 1.08 s in a CI run where eager's
    (with its flush) was 1.07 s; at the rejoin the kept ones stop during the flush too."""
    by = {r.strategy: r for r in runs}
    missing = {"eager", "cooperative", "static"} - set(by)
    if missing:
        raise bad_value("runs", sorted(by), "one run each of eager, cooperative and static")
    if any(r.flush_s <= 0 for r in runs):
        raise bad_value("runs' flush_s", [r.flush_s for r in runs],
                        "a modeled flush above 0 s in every run (stall_in_group's flush_s)")
    eager, coop, static = by["eager"], by["cooperative"], by["static"]
    healthy = {e.member for e in eager.timeline} - {eager.staller}

    def revoked_by(window: Window) -> set[str]:
        return {e.member for e in window.callbacks if e.kind == "revoked"}

    return {
        "the stalled consumer's rejoin triggered a second eager rebalance: every other "
        "member gave up its partitions again after the wake":
            revoked_by(eager.rejoin) == healthy and revoked_by(eager.eviction) == healthy,
        "eager: at both rebalances the whole group stood still at least as long as a "
        "member's revoke callback (the commit and flush of every partition it held)":
            all(0 < w.shortest_revoke() <= w.pause for w in (eager.eviction, eager.rejoin)),
        "cooperative-sticky: at the eviction the others were only given partitions: no "
        "revoke callback, nothing flushed":
            any(e.kind == "assigned" for e in coop.eviction.callbacks)
            and not revoked_by(coop.eviction) and coop.eviction.revoked == 0,
        "cooperative-sticky revoked (so committed and flushed) no partition that stayed "
        "with its owner; eager revoked those too": coop.revoked_kept == 0 < eager.revoked_kept,
        "static membership: the other members took part in no rebalance at all":
            not static.eviction.callbacks and not static.rejoin.callbacks
            and static.revoked_kept == 0,
        "static membership shortened the group's pause at both rebalances":
            static.eviction.pause < eager.eviction.pause
            and static.rejoin.pause < eager.rejoin.pause,
        "static membership's price: the staller's partitions waited the whole stall, "
        "longer than eager's, which the others took over after the poll interval":
            static.staller_idle() > eager.staller_idle(),
    }


def margins(runs: Sequence[GroupRun]) -> dict[str, float]:
    """Per run with an eviction rebalance: when the others' last callback of it ran
    (seconds into the stall) and the headroom to the wake. The staller wakes only after
    that rebalance (plus 1 s), so the claims no longer rest on the headroom; how late
    the eviction comes on a loaded machine is still worth seeing (recorded by the
    chapter, printed by bench/loaded.py)."""
    out: dict[str, float] = {}
    for r in runs:
        if r.eviction.callbacks:  # static membership: no rebalance to finish
            last = max(e.t for e in r.eviction.callbacks)
            out[f"{r.strategy}: eviction over (s into the stall)"] = round(last - r.stall, 2)
            out[f"{r.strategy}: headroom to the wake (s)"] = round(r.wake - last, 2)
    return out
