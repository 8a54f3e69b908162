"""The fault proxy in front of each broker: it sees Kafka's frames and drops, holds or
replays them on demand (``AckLoss``, ``Hold``). Chapters 01-04 and 09 aim faults here.

``Proxy`` loads on first use (:func:`~deliverylab.process.lazy.lazy_names`): the engine,
a child process of every proxied cluster (``python -m deliverylab.proxy.engine``), runs
this file first and needs only the wire format, not its owner's side.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..process.lazy import lazy_names

if TYPE_CHECKING:  # the name, for readers and the layout test's import graph
    from .proxy import Proxy

__all__ = ["Proxy"]
__getattr__, __dir__ = lazy_names(__name__, {"Proxy": ("proxy", "Proxy")})
