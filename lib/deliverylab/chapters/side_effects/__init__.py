"""Chapter 06's kit (``labs/06_side_effects.ipynb``): one fault against every pattern's
fleet, the fleet's buttons, and the evidence as Spark DataFrames (:mod:`.runs`).

The notebook reaches it one way, ``from deliverylab.chapters import side_effects as
kit``: ``kit.run_fault(...)``, ``kit.fleet_buttons(...)``, and the views ``kit.table``,
``kit.call_log``, ``kit.per_message``, ``kit.calls_plot``.
"""

from __future__ import annotations

from .runs import FaultRun, call_log, calls_plot, fleet_buttons, per_message, run_fault, table

__all__ = ["FaultRun", "call_log", "calls_plot", "fleet_buttons", "per_message", "run_fault",
           "table"]
