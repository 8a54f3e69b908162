"""Delivery Guarantees Lab: break a real Kafka cluster, then inspect the evidence.

The library follows one vocabulary (see the design guide): a ``Cluster`` runs brokers,
a ``Proxy`` and the ``Nemesis`` inject the faults of one registry (``FAULTS``), a
``Workload`` writes unique values and records a ``History``, a ``Checker`` judges it,
an ``Inspector`` shows topics in Spark, a ``Scenario`` runs one mode under one fault.

Chapters import one name, as d2l's do::

    import deliverylab as dl
    cluster = dl.Cluster.start(brokers=3, proxy=True)

Submodules load on first use (``dl.Inspector`` starts no Spark until called, and
``import deliverylab`` stays cheap for the command-line tools).
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

#: Public name -> the module that defines it. The module map, in one place.
_EXPORTS: dict[str, str] = {
    # cluster and faults
    "Cluster": "cluster", "Nemesis": "nemesis", "Schedule": "nemesis",
    "FAULTS": "faults", "fault": "faults",
    # clients and what they record
    "History": "history", "ProducerWorkload": "workload", "Pipeline": "workload",
    "Stream": "workload", "TxnProducer": "clients", "Fenced": "clients",
    "Recorder": "clients", "zombie_write": "clients",
    # readers
    "read_back": "readers", "final_read": "readers", "peek": "readers",
    "committed_offsets": "readers", "pending_count": "readers", "ReadTimeout": "readers",
    # judging
    "check": "checker", "lost": "checker", "aborted_reads": "checker",
    "AT_MOST_ONCE": "modes", "AT_LEAST_ONCE": "modes", "IDEMPOTENT": "modes",
    "TRANSACTIONAL": "modes", "MODES": "modes", "mode": "modes",
    "Scenario": "scenario", "stall_takeover": "scenario",
    "lost_ack_duplicate": "recipes", "acked_then_lost": "recipes",
    # evidence
    "Inspector": "inspector", "log_batches": "segments", "producer_summary": "segments",
    "plots": "", "timeline": "plots", "offset_strips": "plots",
    # the notebook side
    "FaultPanel": "widgets", "FaultSpec": "widgets", "fault_buttons": "widgets",
    "TxnConsole": "consoles", "busy": "progress", "progress": "progress",
    "Chapter": "chapter", "what_you_saw": "chapter", "self_check": "chapter",
    "params": "",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'deliverylab' has no attribute {name!r}")
    if module == "":  # a submodule itself: dl.plots, dl.params
        return importlib.import_module(f".{name}", __name__)
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
