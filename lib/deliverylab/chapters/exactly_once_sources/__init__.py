"""Chapter 07's kit (``labs/07_exactly_once_sources.ipynb``): Kafka Connect's file source
on a real Connect cluster, killed, with and without exactly-once support.

The notebook reaches it one way, ``from deliverylab.chapters import exactly_once_sources
as kit``:

- ``kit.Runs``, ``kit.SourceFile``, ``kit.fence_from_python``: the experiments, each
  returning what it saw (:mod:`.sources`);
- ``kit.ConnectPanel``, ``kit.plot_copies``: the buttons with Connect's status line, and
  the copies per run (:mod:`.panel`);
- ``kit.task_producer``: what a task's producer really ran with, from the worker's log
  (:mod:`.producer`);
- ``kit.kill_mid_stream``, ``kit.kill_in_open_transaction``: a worker killed inside the
  offset window or an open transaction (:mod:`.window`).
"""

from __future__ import annotations

from .panel import ConnectPanel, plot_copies
from .producer import task_producer
from .sources import Runs, SourceFile, SourceRun, fence_from_python
from .window import kill_in_open_transaction, kill_mid_stream

__all__ = ["ConnectPanel", "Runs", "SourceFile", "SourceRun", "fence_from_python",
           "kill_in_open_transaction", "kill_mid_stream", "plot_copies", "task_producer"]
