"""Chapter 04's kit (``labs/04_transactions.ipynb``): the live zombie, an instance paused
mid-transaction whose group moved on, fenced by its group generation
(:mod:`.zombie`).

The notebook reaches it one way, ``from deliverylab.chapters import transactions as
kit``: ``kit.live_zombie(cluster, values=...)``.

Names load on first use (:func:`deliverylab.process.lazy.lazy_names`): :mod:`.zombie` is also
each instance's process (``python -m deliverylab.chapters.transactions.zombie``),
which must not be imported by its own package before it runs as ``__main__``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...process.lazy import lazy_names

if TYPE_CHECKING:  # the names, for readers and the layout test's import graph
    from .zombie import GENERATION_FENCING, LiveZombie, live_zombie

__all__ = ["GENERATION_FENCING", "LiveZombie", "live_zombie"]
__getattr__, __dir__ = lazy_names(__name__, {name: ("zombie", name) for name in __all__})
