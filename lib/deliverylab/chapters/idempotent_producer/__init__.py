"""Chapter 03's kit (``labs/03_idempotent_producer.ipynb``): the lost-ack recipe again,
now with ``enable.idempotence`` on.

The notebook reaches it one way, ``from deliverylab.chapters import idempotent_producer
as kit``: ``kit.lost_ack_duplicate(..., idempotent=True)``. The recipe is chapter 02's,
which introduces it (:mod:`deliverylab.chapters.at_least_once.lost_ack`); this kit
imports it from there rather than hold a copy.
"""

from __future__ import annotations

from ..at_least_once.lost_ack import LostAckResult, lost_ack_duplicate

__all__ = ["LostAckResult", "lost_ack_duplicate"]
