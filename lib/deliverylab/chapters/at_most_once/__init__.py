"""Chapter 01's kit (``labs/01_at_most_once.ipynb``): the recipes that make an
acknowledged write disappear in a failover, every time (:mod:`.recipes`).

The notebook reaches it one way, ``from deliverylab.chapters import at_most_once as kit``:

- ``kit.acked_then_lost(...)``: a write acknowledged by a leader its followers never
  copied, then the leader dies;
- ``kit.partitioned_leader(...)``: the same from a real network partition (containers).

The recipes' shared helpers live in :mod:`.recipes` too: chapter 01 introduces the
recipes, and chapter 02's lost-ack recipe imports them from here.
"""

from __future__ import annotations

from .recipes import (
    AckedThenLostResult,
    PartitionedLeaderResult,
    RecipeFailed,
    acked_then_lost,
    partitioned_leader,
)

__all__ = ["AckedThenLostResult", "PartitionedLeaderResult", "RecipeFailed",
           "acked_then_lost", "partitioned_leader"]
