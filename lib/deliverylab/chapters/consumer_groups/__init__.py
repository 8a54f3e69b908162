"""Chapter 02b's kit (``labs/02b_consumer_groups.ipynb``): a consumer group under a
stall, and what the rebalances that follow cost the other members.

The notebook reaches it one way, ``from deliverylab.chapters import consumer_groups as
kit``:

- ``kit.stall_takeover(...)``: one instance stalls past ``max.poll.interval.ms``, a
  second takes over and redoes its batch, the late commit is refused (:mod:`.stall`);
- ``kit.compare_rebalances(...)``, ``kit.rebalance_claims(...)``,
  ``kit.plot_rebalances(...)``: the same stall in a group of three, under the eager and
  cooperative strategies and static membership, its pauses measured from a timeline
  (:mod:`.rebalance`), drawn by :mod:`.figure`.
"""

from __future__ import annotations

from .figure import plot as plot_rebalances
from .rebalance import FLUSH_S, LABELS, STRATEGIES, GroupRun
from .rebalance import claims as rebalance_claims
from .rebalance import compare as compare_rebalances
from .rebalance import margins as rebalance_margins
from .stall import Takeover, stall_takeover

__all__ = ["FLUSH_S", "LABELS", "STRATEGIES", "GroupRun", "Takeover", "compare_rebalances",
           "plot_rebalances", "rebalance_claims", "rebalance_margins", "stall_takeover"]
