"""Cluster's start without brokers: a port taken between picking and binding is retried
on other ports, within limits (the start itself is tested on real brokers in
tests/integration/cluster/test_cluster.py)."""

from __future__ import annotations

import pytest

from deliverylab.cluster.cluster import Cluster
from deliverylab.errors import PortTaken


def _flaky(cluster: Cluster, failures: int, seen: list) -> None:
    """Replace the one real start with one that fails ``failures`` times first."""

    def once() -> Cluster:
        seen.append(cluster.workdir)
        assert cluster.spec is None and cluster.states == {}
        if len(seen) <= failures:
            cluster.workdir.rmdir()  # as the real one's stop() removes its folder
            raise PortTaken("node 3 could not bind its port (taken by another process)")
        return cluster

    cluster._start_once = once


def test_a_port_taken_in_between_starts_again_in_a_fresh_folder():
    cluster, seen = Cluster(brokers=1), []
    _flaky(cluster, failures=2, seen=seen)
    assert cluster._start() is cluster
    assert len(seen) == 3 and len(set(seen)) == 3
    assert cluster.workdir.is_dir()
    cluster.workdir.rmdir()


def test_a_port_taken_every_time_raises_after_the_last_attempt():
    cluster, seen = Cluster(brokers=1), []
    _flaky(cluster, failures=Cluster.PORT_ATTEMPTS, seen=seen)
    with pytest.raises(PortTaken):
        cluster._start()
    assert len(seen) == Cluster.PORT_ATTEMPTS


@pytest.mark.parametrize("given", [{"base_port": 20000}, {"keep_data": True}])
def test_given_ports_or_kept_data_are_not_retried(given, tmp_path):
    cluster, seen = Cluster(brokers=1, **given), []
    _flaky(cluster, failures=1, seen=seen)
    with pytest.raises(PortTaken):
        cluster._start()
    assert len(seen) == 1


def test_a_given_folder_is_not_retried(tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    cluster, seen = Cluster(brokers=1, data_dir=folder), []
    _flaky(cluster, failures=1, seen=seen)
    with pytest.raises(PortTaken):
        cluster._start()
    assert len(seen) == 1


def test_a_bind_error_far_above_the_logs_tail_is_still_a_taken_port(tmp_path):
    """Seen in a cold run: Kafka's 'Address already in use' heads a long stack trace
    and the shutdown after it, 60 lines above the log's end; the start is retried on
    other ports, not failed as a broker that exited."""
    log = tmp_path / "broker.log"
    log.write_text("ERROR Socket server failed to bind to 127.0.0.1:40001: Address "
                   "already in use.\n" + "\tat java.base/sun.nio.ch.Net.bind0\n" * 40
                   + "INFO [ControllerServer id=1] shutting down\n" * 20)

    class Exited:
        def exit_code(self, node_id: int) -> int:
            return 1

        def log_path(self, node_id: int):
            return log

    cluster = Cluster(brokers=1)
    cluster.backend, cluster.states = Exited(), {1: "up"}
    try:
        with pytest.raises(PortTaken, match="could not bind its port"):
            cluster._check_alive()
    finally:
        cluster.workdir.rmdir()
