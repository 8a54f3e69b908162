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

#: Module -> the public names it defines: the module map, in one place. A module
#: listed with no names is itself public (``dl.plots``, ``dl.params``).
_MODULES: dict[str, str] = {
    "cluster": "Cluster",
    "faults": "FAULTS fault",
    "nemesis": "Nemesis Schedule",
    "history": "History",
    "clients": "Recorder TxnProducer Fenced zombie_write",
    "workload": "ProducerWorkload Pipeline Stream",
    "readers": "read_back final_read peek committed_offsets pending_count ReadTimeout",
    "checker": "check lost aborted_reads",
    "modes": "AT_MOST_ONCE AT_LEAST_ONCE IDEMPOTENT TRANSACTIONAL MODES mode",
    "scenario": "Scenario stall_takeover",
    "recipes": "lost_ack_duplicate acked_then_lost partitioned_leader",
    "inspector": "Inspector",
    "segments": "log_batches producer_summary",
    "plots": "",
    "matrix": "",
    "widgets": "FaultPanel FaultSpec fault_buttons",
    "consoles": "TxnConsole",
    "progressbar": "busy progress",
    "chapter": "Chapter what_you_saw self_check",
    "params": "",
    "streaming_scene": "",
    "streaming": "SparkPipeline",
    "servicefleet": "SideEffects ServiceFleet run_fault fleet_buttons",
    "servicecheck": "count_effects",
    "dbviews": "",
    "cost": "",
    "connect": "Connect file_source",
    "connect_runs": "Runs SourceFile fence_from_python",
    "connect_panel": "ConnectPanel plot_copies",
    "bugs": "",
    "grade": "",  # a callable module: dl.grade("02") grades, dl.grade.EXERCISES lists
}
_EXPORTS: dict[str, str] = {name: module for module, names in _MODULES.items()
                            for name in names.split()}
_EXPORTS.update({module: "" for module, names in _MODULES.items() if not names})

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
