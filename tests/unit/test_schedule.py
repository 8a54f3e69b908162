"""Schedules and the fault-name validation they use, without a cluster (a fake Nemesis
records calls). The Nemesis itself: test_nemesis.py and
tests/integration/cluster/test_sizes.py."""

from __future__ import annotations

import pytest

from deliverylab.errors import BadValue
from deliverylab.nemesis import FAULTS, FaultRecord, validate
from deliverylab.schedule import At, Schedule, Sent, Step


class FakeNemesis:
    """Records ``apply`` calls; its clock is set by the test."""

    def __init__(self) -> None:
        self.t = 0.0
        self.calls: list[tuple[str, dict]] = []

    def now(self) -> float:
        return self.t

    def apply(self, name: str, **args) -> FaultRecord:
        validate(name, args)
        self.calls.append((name, args))
        return FaultRecord(name, args, self.t, 0.0, "fake")


def test_count_triggers_fire_once_in_order():
    schedule = Schedule([(Sent(100), "kill_leader", {"topic": "t"}),
                         (Sent(100), "lose_ack"), (Sent(250), "heal")])
    nemesis = FakeNemesis()
    schedule.start(nemesis)
    assert schedule.tick(99) == []
    fired = schedule.tick(100)
    assert [r.name for r in fired] == ["kill_leader", "lose_ack"]
    assert schedule.tick(200) == [] and schedule.tick(100) == []
    assert [r.name for r in schedule.tick(10_000)] == ["heal"]
    assert schedule.done and not schedule.pending
    assert nemesis.calls == [("kill_leader", {"topic": "t"}), ("lose_ack", {}), ("heal", {})]


def test_time_triggers_use_the_nemesis_clock():
    schedule = Schedule([(At(1.5), "pause_broker", {"node": 2}), (3.0, "heal")])
    nemesis = FakeNemesis()
    nemesis.t = 10.0
    schedule.start(nemesis)
    assert schedule.tick() == []
    nemesis.t = 11.6
    assert [r.name for r in schedule.tick()] == ["pause_broker"]
    nemesis.t = 13.0
    assert [r.name for r in schedule.tick(sent=5)] == ["heal"]


def test_a_step_waits_for_the_steps_before_it():
    schedule = Schedule([(Sent(500), "heal"), (At(0), "lose_ack")])
    schedule.start(FakeNemesis())
    assert schedule.tick(10) == []  # the time step is due, but comes after a count step
    assert len(schedule.tick(500)) == 2


def test_papermill_params_round_trip():
    params = [{"sent": 500, "fault": "kill_leader", "topic": "orders"},
              {"at": 2.5, "fault": "delay_client", "node": 1, "ms": 50},
              {"sent": 900, "fault": "heal"}]
    schedule = Schedule.from_params(params)
    assert schedule.steps[0] == Step(Sent(500), "kill_leader", {"topic": "orders"})
    assert schedule.to_params() == params
    assert Schedule.from_params(schedule.to_params()).steps == schedule.steps
    assert "sent 500 kill_leader(topic='orders')" in repr(schedule)
    assert Schedule.from_params(None).steps == ()


def test_bad_fault_names_and_arguments_name_what_is_accepted():
    with pytest.raises(BadValue, match="kill_leader") as info:
        Schedule([{"sent": 5, "fault": "kill_leadr"}])
    assert all(name in str(info.value) for name in FAULTS)
    # Arguments are the Nemesis' to check (a panel's buttons carry their own), when a
    # schedule is bound to it, before anything fires.
    with pytest.raises(BadValue, match="topic"):
        validate("kill_leader", {})  # missing its topic
    with pytest.raises(BadValue, match="node"):
        validate("pause_broker", {"nod": 1})
    with pytest.raises(BadValue, match="client fault"):
        validate("crash_consumer", {})
    with pytest.raises(BadValue, match="exactly one"):
        Schedule([{"sent": 5, "at": 1, "fault": "heal"}])
    with pytest.raises(BadValue):
        Schedule([(Sent(-1), "heal")])
    with pytest.raises(BadValue):
        Schedule(["heal"])
    with pytest.raises(BadValue, match="partition_client"):
        Schedule.random(1, ["partition-client"])


def test_random_schedule_is_seeded():
    a = Schedule.random(42, topic="t", steps=4)
    b = Schedule.random(42, topic="t", steps=4)
    c = Schedule.random(43, topic="t", steps=4)
    assert a.steps == b.steps and a.to_params() == b.to_params()
    assert a.steps != c.steps
    assert a.seed == 42


def test_random_schedule_shape():
    schedule = Schedule.random(7, faults=["kill_broker", "lose_ack", "partition_client"],
                               steps=5, sent=(1000, 6000), nodes=(1, 2, 3))
    steps = schedule.steps
    assert len(steps) == 10  # each fault followed by its heal
    counts = [s.trigger.count for s in steps]
    assert counts == sorted(counts) and 1000 <= counts[0] and counts[-1] < 6000
    for fault, heal in zip(steps[::2], steps[1::2], strict=True):
        assert fault.fault != "heal" and heal.fault == "heal"
        if fault.fault in ("kill_broker", "partition_client"):
            assert fault.args["node"] in (1, 2, 3)
    timed = Schedule.random(7, faults=["pause_broker"], steps=2, seconds=(0, 10), heal=False)
    assert [type(s.trigger) for s in timed.steps] == [At, At]
    assert all(s.trigger.seconds < 10 for s in timed.steps)
    with pytest.raises(BadValue, match="topic"):
        Schedule.random(1, ["kill_leader"])


def test_random_schedule_replays_identically():
    """The same seed drives the same calls: a CI run repeats a classroom run."""
    runs = []
    for _ in range(2):
        nemesis = FakeNemesis()
        schedule = Schedule.random(2024, topic="t", steps=3, sent=(0, 300)).start(nemesis)
        for sent in range(0, 301, 10):
            schedule.tick(sent)
        runs.append(nemesis.calls)
    assert runs[0] == runs[1] and len(runs[0]) == 6


def test_tick_before_start_is_an_error():
    from deliverylab.errors import LabError

    with pytest.raises(LabError, match="start"):
        Schedule([(Sent(1), "heal")]).tick(1)


def _plan(items, count):
    return [(s.trigger.count, s.fault) for s in Schedule.spread(items, count)]


def test_spread_puts_bare_names_evenly_and_keeps_explicit_counts():
    assert _plan([], 100) == []
    assert _plan(["lose_ack"], 60) == [(30, "lose_ack")]
    assert _plan(["lose_ack", "kill_leader", "heal"], 60) == [
        (15, "lose_ack"), (30, "kill_leader"), (45, "heal")]
    assert _plan([{"fault": "heal", "sent": 50}, "lose_ack"], 60) == [
        (30, "lose_ack"), (50, "heal")]
    assert _plan(["heal", "heal"], 30) == [(10, "heal"), (20, "heal")]
    with pytest.raises(BadValue):
        _plan([{"fault": "heal", "sent": 99}], 60)
    with pytest.raises(BadValue):
        _plan([42], 60)
    with pytest.raises(BadValue, match="lose_akc"):
        _plan(["lose_akc"], 60)  # not in the registry
