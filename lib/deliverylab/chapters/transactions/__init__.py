"""Chapter 04's kit (``labs/04_transactions.ipynb``): the live zombie, an instance paused
mid-transaction whose group moved on, fenced by its group generation
(:mod:`.zombie`).

The notebook reaches it one way, ``from deliverylab.chapters import transactions as
kit``: ``kit.live_zombie(cluster, values=...)``.

Names load on first use (:func:`deliverylab.chapters.lazy_names`): :mod:`.zombie` is also
each instance's process (``python -m deliverylab.chapters.transactions.zombie``),
which must not be imported by its own package before it runs as ``__main__``.
"""

from __future__ import annotations

from .. import lazy_names

#: The kit's names -> (module of this package, its name there).
_NAMES = {
    "live_zombie": ("zombie", "live_zombie"),
    "LiveZombie": ("zombie", "LiveZombie"),
    "GENERATION_FENCING": ("zombie", "GENERATION_FENCING"),
}

__getattr__ = lazy_names(__name__, _NAMES)
__all__ = sorted(_NAMES)
