"""Kafka Connect workers (distributed mode) on a lab cluster: chapter 07's source."""

from .connect import Connect, ConnectError, file_source

__all__ = ["Connect", "ConnectError", "file_source"]
