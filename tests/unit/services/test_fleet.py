"""Chapter 06's fault names and buttons, checked without starting anything."""

from __future__ import annotations

import pytest

from deliverylab.chapters.side_effects.runs import fleet_buttons
from deliverylab.errors import BadValue
from deliverylab.faults import FAULTS
from deliverylab.notebook.params import SPECS
from deliverylab.services.fleet import SERVICE_FAULTS, ServiceFleet, SideEffects
from deliverylab.services.instance import PATTERNS, POINTS


def test_every_service_fault_is_a_registry_client_fault_and_a_fleet_method():
    for name in SERVICE_FAULTS:
        assert FAULTS[name].kind == "client"
        assert callable(getattr(ServiceFleet, name)) and name in POINTS


def test_the_chapter_accepts_exactly_its_buttons():
    assert set(SPECS["06_side_effects"]["faults"].choices) == {*SERVICE_FAULTS, "lose_ack",
                                                                 "heal"}


def test_buttons_press_the_fleet_methods_of_the_same_names():
    class Fleet:  # the four methods, recording the press
        def __init__(self):
            self.pressed = []
        for _name in SERVICE_FAULTS:
            exec(f"def {_name}(self): self.pressed.append({_name!r}); return 'armed'")

    fleet = Fleet()
    specs = fleet_buttons(fleet)
    assert [s.label for s in specs] == [FAULTS[n].label for n in SERVICE_FAULTS]
    assert [s.method_name for s in specs] == list(SERVICE_FAULTS)
    for spec in specs:
        spec.method()
    assert fleet.pressed == list(SERVICE_FAULTS)


def test_a_bad_database_or_pattern_is_one_line():
    with pytest.raises(BadValue, match="'sqlite', 'postgres' or a URL"):
        SideEffects("127.0.0.1:1", "mysql")
    assert "outbox" in PATTERNS


def _fleet(tmp_path, members, next_fleet=None, pressed=()):
    """A fleet whose processes have come and gone: only its op logs are left."""
    from deliverylab.services.fleet import Member

    fleet = ServiceFleet.__new__(ServiceFleet)  # no cluster, no process started
    fleet.members = [Member(name, None, tmp_path / f"{name}.ops.jsonl") for name in members]
    fleet.next_fleet, fleet.pressed, fleet.topic = next_fleet, list(pressed), "orders"
    return fleet


def test_an_instance_s_ops_reach_the_history_and_the_count_through_the_op_log(tmp_path):
    from types import SimpleNamespace

    from deliverylab.history import History, OpLog
    from deliverylab.services.check import count_effects
    from deliverylab.services.instance import Instance

    history = History()
    nxt = _fleet(tmp_path, ["next-i0"])
    fleet = _fleet(tmp_path, ["i0", "i1"], next_fleet=nxt, pressed=[{"fault": "kill_after_db"}])
    i0, i1, n0 = (SimpleNamespace(log=OpLog(m.ops), name=m.name)
                  for m in (*fleet.members, *nxt.members))
    Instance.emit(i0, "poll", message_id="o:0", topic="orders", partition=0, offset=0)
    Instance.emit(i0, "db_write", message_id="o:0", partition=0, offset=0)
    Instance.emit(i1, "poll", message_id="o:1", topic="orders", partition=1, offset=0)
    Instance.emit(n0, "poll", message_id="o:0", topic="payments", partition=0, offset=0)
    Instance.emit(i0, "fault", "info", fault="kill_after_db", detail="i0 is killed")
    Instance.emit(i1, "commit", "fail", detail="orders/1@1", error="UNKNOWN_MEMBER_ID")
    assert [op.kind for op in fleet.ops()] == ["poll", "db_write", "poll", "poll", "fault",
                                               "commit"]
    mine = fleet.ops(all_stages=False)
    assert [op.process for op in mine] == ["i0", "i0", "i1", "i0", "i1"]
    assert fleet.fired() == ["kill_after_db"] and fleet.all_fired()
    assert fleet.record(history) == 6
    assert [op.values for op in history][:2] == [("o:0",), ("o:0",)]
    assert all(0 <= op.time <= history.now() for op in history)
    effects = count_effects("none", ["o:0", "o:1"], ["o:0"], [], mine)
    assert (effects.redelivered, effects.faults, effects.rejected_commits) == (
        0, ["kill_after_db"], 1)
