"""Chapter 06's fault names and buttons, checked without starting anything."""

from __future__ import annotations

import pytest

from deliverylab.chapters.side_effects import fleet_buttons
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
