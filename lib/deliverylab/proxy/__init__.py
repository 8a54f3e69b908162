"""The fault proxy in front of each broker: it sees Kafka's frames and drops, holds or
replays them on demand (``AckLoss``, ``Hold``). Chapters 01-04 and 09 aim faults here."""

from .proxy import Proxy

__all__ = ["Proxy"]
