"""The fault registry: every name a button, a schedule, a scenario or a test uses is in it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from deliverylab.classroom.course import run as course
from deliverylab.errors import BadValue
from deliverylab.faults import FAULTS, SCENARIO_FAULTS, check_names, fault
from deliverylab.modes import CLAIMS, MODES
from deliverylab.nemesis import CLUSTER_FAULTS, Nemesis
from deliverylab.notebook import params
from deliverylab.notebook.chapter import chapter_names
from deliverylab.notebook.widgets import FaultSpec
from deliverylab.scenario import FAULTS as SCENARIO_CHOICES

LABS = Path(__file__).resolve().parents[2] / "labs"


def test_a_name_outside_the_registry_is_one_line_listing_the_registry():
    with pytest.raises(BadValue, match=r"fault='lose_akc' is not accepted; expected one of "
                                       r"lose_ack, kill_leader"):
        fault("lose_akc")
    with pytest.raises(BadValue, match="heal"):
        check_names(["lose_ack", "heal"], accepted=["lose_ack"])


def test_every_cluster_fault_is_a_nemesis_method_and_every_client_fault_is_not():
    for name, entry in FAULTS.items():
        assert callable(getattr(Nemesis, name, None)) == (entry.kind == "cluster"), name
    assert set(CLUSTER_FAULTS) == {n for n, f in FAULTS.items() if f.kind == "cluster"}


def test_scenarios_and_the_matrix_draw_their_faults_from_the_registry():
    assert SCENARIO_CHOICES == ("none", *SCENARIO_FAULTS)
    assert set(SCENARIO_FAULTS) <= set(FAULTS)


def test_every_matrix_cell_has_a_claim_and_only_known_names():
    cells = {(m, f) for m in MODES for f in SCENARIO_FAULTS}
    assert set(CLAIMS) == cells
    for rules in CLAIMS.values():
        assert rules and set(rules.values()) <= {"always", "never"}


def test_headless_schedules_and_chapter_parameters_use_registry_names():
    for chapter, settings in course.HEADLESS.items():
        for item in settings.get("faults", []):
            assert item in FAULTS, (chapter, item)
    for chapter, specs in params.SPECS.items():
        if "faults" in specs:
            assert set(specs["faults"].choices) <= set(FAULTS), chapter


def _buttons_in(notebook: Path) -> list[str]:
    source = "\n".join("".join(c["source"]) for c in json.loads(notebook.read_text())["cells"]
                       if c["cell_type"] == "code")
    names = []
    for call in re.findall(r"fault_buttons\(([^)]*)\)", source):
        names += re.findall(r'"([a-z_]+)"', call)
    assert "FaultSpec(" not in source, f"{notebook.name} builds a button by hand"
    return names


def test_every_chapter_button_is_a_registry_fault():
    seen = set()
    for notebook in (LABS / f"{c}.ipynb" for c in chapter_names(LABS)):
        names = _buttons_in(notebook)
        seen.update(names)
        for name in names:
            assert name in CLUSTER_FAULTS, (notebook.name, name)
    assert {"lose_ack", "kill_leader", "pause_followers", "heal"} <= seen


def test_a_registry_button_takes_its_label_and_help_from_the_registry():
    spec = FaultSpec.fault("lose_ack")
    assert spec.label == FAULTS["lose_ack"].label and spec.help == FAULTS["lose_ack"].help
    assert FaultSpec.of("heal").label == "Heal"
    with pytest.raises(BadValue):
        FaultSpec.fault("crash_consumer")  # a client fault: no Nemesis button


def test_a_restarted_producer_and_a_zombie_are_two_faults():
    """Chapter 03's restart (a new instance, a new producer id, writing again) and chapter
    04's zombie (the old instance coming back, fenced) were once one name; 04's lesson
    rests on the difference, so each has its own, and only the restart is a Scenario's."""
    restart, zombie = fault("restart_producer"), fault("zombie_producer")
    assert restart.scenario and "restart_producer" in SCENARIO_FAULTS
    assert not zombie.scenario and "zombie_producer" not in SCENARIO_FAULTS
    assert restart.permits and not zombie.permits
    assert all(("TRANSACTIONAL", f) not in CLAIMS for f in ("zombie_producer",))
