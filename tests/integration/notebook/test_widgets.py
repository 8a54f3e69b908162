"""FaultPanel against real brokers: buttons are clicked through ipywidgets' Python API.

``button.click()`` runs exactly the handlers a browser click runs (the frontend only
sends a "click" comm message that ends in the same call), so these tests cover what a
student's click does, minus the rendering (tests/browser covers that).
"""

from __future__ import annotations

import threading

import pytest

from deliverylab.cluster import Cluster
from deliverylab.history import History
from deliverylab.nemesis import FaultRecord, Nemesis
from deliverylab.notebook.widgets import FaultPanel, FaultSpec, current_leader, fault_buttons
from deliverylab.waiting import wait_until
from deliverylab.workload import ProducerWorkload


@pytest.fixture
def nemesis(cluster: Cluster) -> Nemesis:
    return Nemesis(cluster)


@pytest.fixture
def topic(cluster: Cluster, topic_name: str) -> str:
    return cluster.create_topic(topic_name, partitions=3, replication_factor=3)


@pytest.mark.cluster
def test_kill_leader_button_kills_it_and_the_status_line_follows(cluster, nemesis, topic):
    leader = cluster.leader(topic, 0)
    panel = FaultPanel(cluster, nemesis, [
        FaultSpec("Kill leader", "kill_leader", {"topic": topic, "partition": 0},
                  style="danger"),
    ], topic=topic)
    try:
        assert f"{leader}:up" in panel.status_text
        assert f"p0->{leader}" in panel.status_text
        assert "no button pressed yet" in panel.output.value

        panel.buttons["Kill leader"].click()

        assert cluster.status()[leader] == "dead"
        assert f"{leader}:dead" in panel.status_text
        assert f"broker {leader}: dead" in panel.status.value  # the rendered chip
        [press] = panel.presses
        assert press.ok and isinstance(press.result, FaultRecord)
        assert press.result.node == leader and nemesis.records == [press.result]
        assert len(panel.lines) == 1 and "Kill leader" in panel.lines[0]
        assert f"killed broker {leader}" in panel.lines[0]  # the FaultRecord's words
        assert panel.lines[0].startswith("[")  # [HH:MM:SS]
        assert "Kill leader" in panel.output.value
        assert not any(b.disabled for b in panel.buttons.values())

        # The controller moves leadership; a refresh shows the new leader.
        new = cluster.wait_leader(topic, 0, exclude=(leader,), timeout=30)
        wait_until(f"p0->{new} in the status line", lambda: f"p0->{new}" in panel.refresh(),
                   30.0, interval=0.2)
    finally:
        panel.close()


@pytest.mark.cluster
def test_pause_and_resume_buttons(cluster, nemesis, topic):
    node = 2
    panel = FaultPanel(cluster, nemesis, [
        ("Pause broker 2", "pause_broker", {"node": node}),
        FaultSpec("Resume broker 2", "resume_broker", {"node": node}, style="success"),
    ], topic=topic, metadata_timeout=2.0)
    try:
        panel.buttons["Pause broker 2"].click()
        assert cluster.status()[node] == "paused"
        assert f"{node}:paused" in panel.status_text
        panel.buttons["Resume broker 2"].click()
        assert cluster.status()[node] == "up"
        assert f"{node}:up" in panel.status_text
        assert [p.label for p in panel.presses] == ["Pause broker 2", "Resume broker 2"]
        assert all(p.ok for p in panel.presses)
        assert panel.output.value.count("dl-log-line") == 2
    finally:
        panel.close()


@pytest.mark.cluster
def test_press_by_method_name_is_the_same_as_a_click(cluster, nemesis, topic):
    """A papermill schedule names methods; it must reach the same button."""
    panel = FaultPanel(cluster, nemesis, [("Pause broker 3", "pause_broker", {"node": 3})],
                       topic=topic, metadata_timeout=2.0)
    try:
        press = panel.press("pause_broker")
        assert press.ok and press.label == "Pause broker 3"
        assert cluster.status()[3] == "paused"
        assert "Pause broker 3" in panel.output.value
    finally:
        panel.close()


@pytest.mark.cluster
def test_a_failing_fault_is_one_readable_line(cluster, nemesis, topic):
    panel = FaultPanel(cluster, nemesis, [("Kill broker 9", "kill_broker", {"node": 9})],
                       topic=topic)
    try:
        panel.buttons["Kill broker 9"].click()  # no such node: the cluster refuses
        [press] = panel.presses
        assert not press.ok
        [line] = panel.lines
        assert "Kill broker 9: FAILED" in line and "node=9" in line
        assert "\n" not in line and "Traceback" not in panel.output.value
        assert panel.output.value.count("dl-log-line") == 1
        assert set(cluster.status().values()) == {"up"}  # nothing was harmed
        with pytest.raises(Exception, match="node=9"):
            panel.press("Kill broker 9", raise_errors=True)
    finally:
        panel.close()


@pytest.mark.cluster
def test_a_partition_button_on_local_brokers_is_greyed_out_and_says_why(cluster, topic):
    history = History()
    nemesis = Nemesis(cluster, history=history)
    buttons = fault_buttons("partition_leader", "heal", topic=topic)
    panel = FaultPanel(cluster, nemesis, buttons, topic=topic)
    try:
        button = panel.buttons["Partition leader"]
        assert button.disabled and "needs containers" in button.tooltip
        assert panel.absent == {"Partition leader": button.tooltip}
        assert "not on this cluster" in panel.output.value
        press = panel.press("partition_leader")  # a headless schedule that asks anyway
        assert not press.ok and "backend='docker'" in str(press.error)
        assert history.faults() == [] and cluster.partitioned == set()
        panel.press("heal", raise_errors=True)  # the rest of the panel still works
        assert button.disabled and not panel.buttons["Heal"].disabled
    finally:
        panel.close()


@pytest.mark.cluster
def test_status_counts_the_history_and_auto_refresh_stops(cluster, nemesis, topic):
    history = History()
    panel = FaultPanel(cluster, nemesis, [("Pause broker 1", "pause_broker", {"node": 1})],
                       topic=topic, history=lambda: history, auto_refresh=0.2)
    try:
        assert panel.auto_refreshing
        ProducerWorkload(cluster, topic, "AT_LEAST_ONCE", history=history).run(7)
        # No explicit refresh: the background thread picks the sends up.
        wait_until("the auto-refresh to count 7 acked sends",
                   lambda: "sends: 7 recorded, 7 acked, 0 unknown" in panel.status_text, 10,
                   interval=0.2)
    finally:
        panel.close()
    assert not panel.auto_refreshing
    assert not [t for t in threading.enumerate() if t.name == "fault-panel-refresh"]


@pytest.mark.cluster
def test_press_time_kwargs_follow_the_leader(cluster, nemesis, topic):
    """A kwargs callable is evaluated per press: the second press hits the new leader."""
    panel = FaultPanel(cluster, nemesis, [
        FaultSpec("Pause leader", "pause_broker", current_leader(topic, 0)),
        FaultSpec("Heal", "heal", style="success"),
    ], topic=topic, metadata_timeout=2.0)
    try:
        first = cluster.leader(topic, 0)
        assert panel.press("Pause leader").kwargs == {"node": first}
        panel.press("Heal")
        assert set(cluster.status().values()) == {"up"}
        assert "resumed [" in panel.lines[-1]
    finally:
        panel.close()


class _StoppingCluster:
    """Just a ``status()`` that reports a stop after a while (no brokers needed)."""

    def __init__(self) -> None:
        self.stopped = threading.Event()

    def status(self) -> dict[int, str]:
        return {1: "stopped" if self.stopped.is_set() else "up"}


class _Faults:
    def fail(self) -> None:
        raise RuntimeError("first line\nsecond line of a long story")


def test_auto_refresh_ends_when_the_cluster_stops() -> None:
    """The refresh thread must not outlive the cluster, even if nobody closes the panel."""
    fake = _StoppingCluster()
    panel = FaultPanel(fake, _Faults(), [("Fail", "fail")], auto_refresh=0.05)
    try:
        assert panel.auto_refreshing
        fake.stopped.set()
        wait_until("the refresh thread to end", lambda: not panel.auto_refreshing, 5,
                   interval=0.2)
        assert panel.status_text.startswith("cluster stopped")
        press = panel.press("Fail")
        assert panel.lines == [press.line()]
        assert press.line().endswith("FAILED -- RuntimeError: first line")
    finally:
        panel.close()
