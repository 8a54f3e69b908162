"""A real Kafka cluster (KRaft) for the lab; see :class:`Cluster`."""

from .cluster import Cluster, free_ports

__all__ = ["Cluster", "free_ports"]
