"""Chapter 06's world outside Kafka: a database, an HTTP service, fleets of instances.

- :class:`SideEffects` owns the child processes of one chapter (an HTTP service, a
  PostgreSQL server when asked for one, every service instance) through one reaper, so
  ``stop()`` -- or the kernel's death -- leaves nothing running.
- :class:`ServiceFleet` is one consumer group of :mod:`~deliverylab.services.instance` instances
  (plus, for the outbox, its relay and the next consumer's fleet). Its methods named
  like the registry's faults (``kill_after_db``...) arm that fault in the running
  instances: a FaultPanel button calls them, and so does a papermill schedule.
- chapter 06's kit (:func:`~deliverylab.chapters.side_effects.run_fault`) runs every
  pattern under one fault, side by side on one input topic, and counts their side
  effects with :mod:`~deliverylab.services.check`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..clients import bootstrap_of
from ..cluster.ready import wait_until
from ..errors import LabError, bad_value
from ..faults import fault as registry_fault
from ..history import History, Op, read_logs
from ..process.children import Children, child_env, python_module
from ..readers import bounds, committed_offsets, read_back
from .check import Effects, count_effects
from .db import Database, PostgresServer
from .http import HttpService
from .instance import CONSUMER, PATTERNS, POINTS

#: The databases a chapter may ask for by name (a URL is accepted too).
DATABASES = ("sqlite", "postgres")

#: The faults a fleet takes (methods of :class:`ServiceFleet`), and ``lose_ack``,
#: which the Nemesis does to the producer of the orders.
SERVICE_FAULTS = ("kill_after_db", "kill_after_http", "stall_consumer", "restart_instance")


class SideEffects:
    """The database, the HTTP service and every instance of one chapter run.

    ``database``: ``"sqlite"`` (a file in a private directory), ``"postgres"`` (a server
    the lab starts, see :class:`~deliverylab.services.db.PostgresServer`) or a database URL.
    """

    def __init__(self, cluster: Any, database: str = "sqlite") -> None:
        if not isinstance(database, str) or not (database in DATABASES or "://" in database):
            raise bad_value("database", database,
                            "'sqlite', 'postgres' or a URL (postgresql://user@host:port/db)")
        self.cluster = cluster
        self.bootstrap = bootstrap_of(cluster)
        self.workdir = Path(tempfile.mkdtemp(prefix="deliverylab-sidefx-"))
        self.children = Children()
        self.children.cleanup(self.workdir)
        self.postgres: PostgresServer | None = None
        self.fleets: list[ServiceFleet] = []
        try:
            if database == "sqlite":
                url = f"sqlite:///{self.workdir / 'orders.db'}"
            elif database == "postgres":
                self.postgres = PostgresServer(self.children)
                url = self.postgres.url
            else:
                url = database
            self.db = Database(url)
            self.db.create_schema()
            self.http = HttpService(self.children, self.workdir)
        except BaseException:
            self.stop()
            raise

    def __repr__(self) -> str:
        return (f"<SideEffects db={self.db.kind} {self.db.url} http={self.http.url} "
                f"{len(self.children.alive)} process(es) running>")

    @property
    def pids(self) -> list[int]:
        """Every child process still running (the kernel-death test looks for them)."""
        return self.children.alive

    def fleet(self, topic: str, pattern: str = "none", **kwargs: Any) -> ServiceFleet:
        fleet = ServiceFleet(self, topic, pattern, **kwargs)
        self.fleets.append(fleet)
        return fleet

    def stop(self) -> None:
        """Stop every instance, the HTTP service and the database server; remove files."""
        for fleet in getattr(self, "fleets", []):
            fleet.stop()
        if self.postgres is not None:
            self.postgres.stop()
        self.children.close()
        shutil.rmtree(self.workdir, ignore_errors=True)


@dataclass
class Member:
    """One instance process of a fleet."""

    name: str
    proc: Any
    ops: Path  # its op log (an OpLog)
    role: str = "service"
    handled: bool = False  # its exit was looked at by the fleet's watcher


class ServiceFleet:
    """A consumer group of service instances, each its own process.

    Args:
        lab: the :class:`SideEffects` that owns the processes.
        topic: the input topic (orders).
        pattern: one of :data:`~deliverylab.services.instance.PATTERNS`.
        instances: how many instances share the group (2: the seed's picture; 1: a
            single instance, restarted by ``restart_instance``).
        run: the name rows and calls of this fleet carry (default: group name).
        max_poll_interval_ms: the group evicts a member that does not poll this long.
    """

    def __init__(self, lab: SideEffects, topic: str, pattern: str = "none",
                 instances: int = 2, group: str | None = None, run: str | None = None,
                 max_poll_interval_ms: int = 8000, batch: int = 10,
                 after: int = 3, stall_seconds: float | None = None) -> None:
        if pattern not in PATTERNS:
            raise bad_value("pattern", pattern, "one of " + ", ".join(PATTERNS))
        if not isinstance(instances, int) or not 1 <= instances <= 4:
            raise bad_value("instances", instances, "a whole number from 1 to 4")
        self.lab = lab
        self.topic = topic
        self.pattern = pattern
        self.group = group or f"svc-{pattern}-{uuid.uuid4().hex[:6]}"
        self.run = run or self.group
        self.after = after
        self.max_poll_interval_ms = int(max_poll_interval_ms)
        self.stall_seconds = stall_seconds or self.max_poll_interval_ms / 1000 + 4
        self.batch = batch
        self.dir = lab.workdir / self.group
        (self.dir / "markers").mkdir(parents=True, exist_ok=True)
        self.members: list[Member] = []
        self.pressed: list[dict[str, Any]] = []
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self.next_fleet: ServiceFleet | None = None
        self.out_topic: str | None = None
        if pattern == "outbox":
            self.out_topic = f"{topic}-payments-{uuid.uuid4().hex[:4]}"
            lab.cluster.create_topic(self.out_topic, partitions=1)
            self.next_fleet = ServiceFleet(lab, self.out_topic, "idempotent", instances,
                                           f"{self.group}-next", f"{self.run}/next",
                                           max_poll_interval_ms, batch, after,
                                           stall_seconds)
        for i in range(instances):
            self._spawn(f"{self.run}/i{i}")
        if pattern == "outbox":
            self._spawn(f"{self.run}/relay", role="relay")
        self._monitor = threading.Thread(target=self._watch, daemon=True,
                                         name=f"fleet-{self.group}")
        self._monitor.start()

    def __repr__(self) -> str:
        alive = sum(1 for m in self.members if m.proc.poll() is None)
        return (f"<ServiceFleet {self.group} pattern={self.pattern} on {self.topic}: "
                f"{alive} of {len(self.members)} process(es) alive>")

    # --- processes -------------------------------------------------------------------
    def _spawn(self, name: str, role: str = "service",
               faults: Iterable[dict[str, Any]] = ()) -> Member:
        ops = self.dir / f"{name.replace('/', '_')}.ops.jsonl"
        spec = {"bootstrap": self.lab.bootstrap, "topic": self.topic, "group": self.group,
                "instance": name, "run": self.run, "pattern": self.pattern,
                "db": self.lab.db.url, "http": self.lab.http.url, "ops": str(ops),
                "markers": str(self.dir / "markers"), "batch": self.batch,
                "consumer": {**CONSUMER, "max.poll.interval.ms": self.max_poll_interval_ms},
                "faults": list(faults), "role": role, "out_topic": self.out_topic}
        proc = self.lab.children.start(name, python_module("services.instance", "--spec",
                                                           json.dumps(spec)),
                                       ops.with_suffix(".log"), env=child_env(),
                                       stdin=True)
        member = Member(name, proc, ops, role)
        self.members.append(member)
        return member

    def _watch(self) -> None:
        """Start again an instance killed by ``restart_instance`` (a restarted service),
        and a relay killed by ``kill_relay``."""
        while not self._stopped.wait(0.2):
            for member in list(self.members):
                if member.proc.poll() is None or member.handled:
                    continue
                member.handled = True
                fired = [op for op in read_logs([member.ops]).ops if op.kind == "fault"]
                # restart_instance is the one service fault whose victim comes back.
                if fired and (member.role == "relay"
                              or fired[-1].fault == "restart_instance"):
                    # A killed relay is supervised: it comes back (and publishes again).
                    with self._lock:
                        if not self._stopped.is_set():
                            self._spawn(member.name + "+", role=member.role)

    # --- faults (buttons) --------------------------------------------------------------
    def arm(self, name: str, after: int | None = None) -> str:
        """Arm fault ``name`` in every running instance: the first to reach its point
        takes it. Returns one line for the panel."""
        registry_fault(name)
        if name not in POINTS:
            raise bad_value("fault", name, "one of " + ", ".join(POINTS))
        if name == "kill_relay" and self.pattern != "outbox":
            raise bad_value("fault", name, "a fault of an outbox fleet (this one's pattern "
                            f"is {self.pattern})")
        if self.next_fleet is not None and name in ("kill_after_http", "stall_consumer"):
            # The outbox stage makes no HTTP call: the next consumer does.
            self.next_fleet.arm(name, after)
            if name == "kill_after_http":
                return f"armed {name} in {self.next_fleet.group} (the outbox's next consumer)"
        token = f"{name}-{uuid.uuid4().hex[:8]}"
        armed = {"fault": name, "token": token,
                 "after": self.after if after is None else after,
                 "seconds": self.stall_seconds}
        self.pressed.append(armed)
        line = "arm " + json.dumps(armed) + "\n"
        role = "relay" if name == "kill_relay" else "service"
        for member in self.members:
            if member.role == role and member.proc.poll() is None:
                try:
                    member.proc.stdin.write(line)
                    member.proc.stdin.flush()
                except OSError:
                    continue
        return f"armed {name} in {self.group}: the next instance to reach its point takes it"

    def kill_after_db(self) -> str:
        return self.arm("kill_after_db")

    def kill_after_http(self) -> str:
        return self.arm("kill_after_http")

    def stall_consumer(self) -> str:
        return self.arm("stall_consumer")

    def restart_instance(self) -> str:
        return self.arm("restart_instance")

    def kill_relay(self) -> str:
        return self.arm("kill_relay")

    # --- evidence ------------------------------------------------------------------------
    def logs(self, all_stages: bool = True) -> list[Path]:
        """The op logs of the fleet's processes (and of the next fleet's)."""
        out = [m.ops for m in self.members]
        if all_stages and self.next_fleet is not None:
            out += self.next_fleet.logs()
        return out

    def ops(self, all_stages: bool = True) -> tuple[Op, ...]:
        """Every op the fleet's processes recorded (with the next fleet's), by time
        (``time.monotonic()``'s clock: :meth:`record` puts them on a History's)."""
        return read_logs(self.logs(all_stages)).ops

    def fired(self) -> list[str]:
        return [op.fault for op in self.ops() if op.kind == "fault" and op.fault]

    def caught_up(self) -> bool:
        """Every record of the input committed by the group (and, for the outbox, every
        outbox record published and committed by the next fleet)."""

        ends = {b["partition"]: b["high_watermark"] for b in bounds(self.lab.cluster,
                                                                    self.topic)}
        done = committed_offsets(self.lab.cluster, self.group, self.topic)
        if any(done.get(p, -1) < end for p, end in ends.items() if end > 0):
            return False
        if self.next_fleet is not None:
            left = self.lab.db.query("SELECT COUNT(*) FROM outbox WHERE run = ? AND "
                                     "published = 0", (self.run,))[0][0]
            return left == 0 and self.next_fleet.caught_up()
        return True

    def wait(self, timeout: float = 120.0) -> ServiceFleet:
        """Wait until the group has committed its whole input and every fault pressed
        has fired; raises (naming the logs) if not."""
        def done() -> bool:
            return self.all_fired() and self.caught_up()

        wait_until(f"fleet {self.group} to process all of {self.topic} (op logs in "
                   f"{self.dir})", done, timeout, check=self._check)
        return self

    def all_fired(self) -> bool:
        """Has every fault pressed on this fleet (and the next one) been taken?"""
        fired = [op for op in self.ops(all_stages=False) if op.kind == "fault"]
        mine = len(fired) >= len(self.pressed)
        return mine and (self.next_fleet is None or self.next_fleet.all_fired())

    def _check(self) -> None:
        if not any(m.proc.poll() is None for m in self.members if m.role == "service"):
            if not any(p["fault"] == "restart_instance" for p in self.pressed):
                raise LabError(f"every instance of {self.group} has exited; logs in "
                               f"{self.dir}")

    def record(self, history: History) -> int:
        """Merge the fleet's op logs into ``history`` (poll, db_write, http_call, commit,
        fault), by time, on its clock; returns how many ops."""
        return len(history.merge_logs(self.logs()).ops)

    def effects(self) -> Effects:
        """This fleet's side effects, counted (rows from the database, calls from the
        HTTP service's log, redeliveries from the instances' polls of the input)."""

        input_ids = [r.value for r in read_back(self.lab.cluster, [self.topic])
                     if r.value is not None]
        rows = [r[0] for r in self.lab.db.rows(self.run)]
        call_run = self.next_fleet.run if self.next_fleet is not None else self.run
        calls = self.lab.http.calls(call_run)
        ops = [op for op in self.ops() if op.kind != "poll" or op.topic == self.topic]
        return count_effects(self.pattern, input_ids, rows, calls, ops)

    def stop(self) -> None:
        """Stop every process of the fleet (a clean stop: instances leave the group)."""
        self._stopped.set()
        with self._lock:
            for member in self.members:
                if member.proc.poll() is None:
                    try:
                        member.proc.stdin.write("stop\n")
                        member.proc.stdin.flush()
                    except OSError:
                        pass
            deadline = time.monotonic() + 5  # let them leave the group cleanly first
            for member in self.members:
                try:
                    member.proc.wait(max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    pass
                self.lab.children.stop(member.proc, timeout=10)
        if self.next_fleet is not None:
            self.next_fleet.stop()

