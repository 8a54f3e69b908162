"""A real Kafka cluster (KRaft) for the lab; see :class:`Cluster`.

Its names load on first use (:func:`~deliverylab.process.lazy.lazy_names`): ``from
..cluster import ready`` (the readers, the nemesis, Connect, 04's zombie instances) and
``python -m deliverylab.cluster.tools`` run this file, and need none of what
:mod:`.cluster` pulls in (the local backend, psutil, the JVMs' runtime, quorum, restart).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..process.lazy import lazy_names

if TYPE_CHECKING:  # the names, for readers and the layout test's import graph
    from .cluster import Cluster, free_ports

__all__ = ["Cluster", "free_ports"]
__getattr__, __dir__ = lazy_names(__name__, {name: ("cluster", name) for name in __all__})
