"""The worker's shared 3-node cluster (conftest's ``cluster3``), stopped while it would
only idle."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from tests.scheduling import unit_of, weight_of

from deliverylab.cluster import Cluster


def _start() -> Cluster:
    return Cluster.start(brokers=3, proxy=True).__enter__()


class SharedCluster:
    """A worker's one 3-node cluster with fault proxies, shared by the integration tests
    (``cluster3``): started when a test first asks, kept from module to module, and
    stopped while the worker runs a long unit that does not use it.

    Why stop it: an idle 3-node cluster still costs ~8 CPU-seconds a minute (heartbeats,
    fetch long-polls, the JVMs' own threads; ``bench/idle_cluster.py``), and each worker
    of ``make test`` kept one for the whole parallel part, idle through every chapter
    (minutes each, with clusters of their own) on a 2-core machine. A start costs ~7.5
    CPU-seconds, so it is stopped only before a unit of :data:`IDLE_LONGER` seconds or
    more (its measured weight), and started again when a test asks."""

    #: Seconds (tests/scheduling.py's weights) a unit must be expected to take before the
    #: cluster is stopped for it: beyond the ~1 minute of idling a restart costs.
    IDLE_LONGER = 60

    def __init__(self, start: Callable[[], Cluster] = _start) -> None:
        self._start = start
        self.cluster: Cluster | None = None
        self._users: set[str] | None = None  # the units some test of which uses it

    def get(self) -> Cluster:
        """The running cluster, started first if there is none."""
        if self.cluster is None:
            self.cluster = self._start()
        return self.cluster

    def stop(self) -> None:
        if self.cluster is not None:
            cluster, self.cluster = self.cluster, None
            cluster.stop()

    def stop_before(self, item: pytest.Item, nextitem: pytest.Item | None) -> None:
        """After ``item``'s teardown: stop the cluster if the next test opens a long unit,
        in another module (so no module-scoped fixture still holds the cluster), none of
        whose tests uses it."""
        if (self.cluster is None or nextitem is None or nextitem.module is item.module
                or weight_of(nextitem.nodeid) < self.IDLE_LONGER):
            return
        if self._users is None:
            self._users = {unit_of(i.nodeid) for i in nextitem.session.items
                           if "cluster3" in i.fixturenames}
        unit = unit_of(nextitem.nodeid)
        if unit not in self._users:
            print(f"\nthe shared cluster stops while {unit} runs (~{weight_of(unit):.0f} s "
                  "without it)", flush=True)
            self.stop()
