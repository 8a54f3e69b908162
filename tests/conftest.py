"""Shared fixtures. Real brokers only: a cluster fixture starts real Kafka JVMs."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

from deliverylab.cluster import Cluster

ARTIFACTS = os.path.join(os.path.dirname(__file__), "..", "test-artifacts")


def heal(cluster: Cluster) -> None:
    """Bring every node back so the next test starts from a whole cluster."""
    for node, state in cluster.status().items():
        if state == "paused":
            cluster.resume(node)
        elif state == "dead":
            cluster.restart(node)
    for node in cluster.partitioned:
        cluster.heal_partition(node)
    for proxy in cluster.proxies.values():
        proxy.heal()


@pytest.fixture(scope="session")
def cluster3() -> Iterator[Cluster]:
    """One 3-node cluster with fault proxies, shared by the integration tests."""
    with Cluster.start(brokers=3, proxy=True) as cluster:
        yield cluster


@pytest.fixture
def cluster(cluster3: Cluster) -> Iterator[Cluster]:
    """The shared cluster, healed after each test whatever the test broke."""
    yield cluster3
    heal(cluster3)


@pytest.fixture
def topic_name() -> str:
    return f"t-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="session")
def artifacts() -> str:
    os.makedirs(ARTIFACTS, exist_ok=True)
    return ARTIFACTS
