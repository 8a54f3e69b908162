"""Shared fixtures. Real brokers only: a cluster fixture starts real Kafka JVMs."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

from deliverylab.cluster import Cluster
from deliverylab.nemesis import Nemesis

ARTIFACTS = os.path.join(os.path.dirname(__file__), "..", "test-artifacts")


def heal(cluster: Cluster) -> None:
    """Bring every node back so the next test starts from a whole cluster: the
    Nemesis' one heal (network partitions, proxies, paused and dead brokers)."""
    Nemesis(cluster).heal()


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
