"""Delivery Guarantees Lab: break a real Kafka cluster, then inspect the evidence.

The library follows one vocabulary (see the design guide): a ``Cluster`` runs brokers,
a ``Proxy`` and the ``Nemesis`` inject the faults of one registry (``FAULTS``), a
``Workload`` writes unique values and records a ``History``, a ``Checker`` judges it,
an ``Inspector`` shows topics in Spark, a ``Scenario`` runs one mode under one fault.

Chapters import one name, as d2l's do, and their own chapter's kit beside it::

    import deliverylab as dl
    from deliverylab.chapters import at_least_once as kit  # this chapter's own code
    cluster = dl.Cluster.start(brokers=3, proxy=True)

Submodules load on first use (``dl.Inspector`` starts no Spark until called, and
``import deliverylab`` stays cheap for the command-line tools).
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

#: Module (its path in the package) -> the public names it defines: the module map, in
#: one place (docs/whats-here.md tells what each folder is for).
_MODULES: dict[str, str] = {
    "cluster": "Cluster",
    "faults": "FAULTS fault",
    "nemesis": "Nemesis",
    "schedule": "Schedule",
    "history": "History",
    "clients": "Recorder TxnProducer Fenced zombie_write",
    "workload": "ProducerWorkload Pipeline",
    "readers": "read_back final_read peek committed_offsets pending_count ReadTimeout",
    "checker": "check lost aborted_reads",
    "modes": "AT_MOST_ONCE AT_LEAST_ONCE IDEMPOTENT TRANSACTIONAL MODES mode",
    "scenario": "Scenario",
    "segments": "log_batches producer_summary",
    "spark.inspector": "Inspector",
    "spark.pipeline": "SparkPipeline",
    "services.fleet": "SideEffects ServiceFleet",
    "services.check": "count_effects",
    "connect.connect": "Connect file_source",
    "notebook.widgets": "FaultPanel FaultSpec fault_buttons",
    "notebook.stream": "Stream",
    "notebook.consoles": "TxnConsole",
    "notebook.progress": "busy progress",
    "notebook.chapter": "Chapter what_you_saw self_check",
    "notebook.predict": "Prediction reveal",
    "notebook.questions": "predict",
    "cluster.tools": "feature_level",
}
#: ``dl.<name>`` for a module itself (``dl.plots.timeline``): the name the chapters use ->
#: the module's path. A chapter's own code is no ``dl.`` name: the notebook imports its
#: kit beside the facade, ``from deliverylab.chapters import <chapter> as kit``.
_SUBMODULES: dict[str, str] = {
    "matrix": "matrix",
    "plots": "notebook.plots",
    "figures": "notebook.figures",
    "params": "notebook.params",
    "questions": "notebook.questions",
    "connect": "connect",
    # a callable module: dl.grade("02") grades, dl.grade.EXERCISES lists the exercises
    "grade": "grade",
}
_EXPORTS: dict[str, str] = {name: module for module, names in _MODULES.items()
                            for name in names.split()}

__all__ = sorted([*_EXPORTS, *_SUBMODULES])


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:  # a module itself: dl.plots, dl.params
        return importlib.import_module(f".{_SUBMODULES[name]}", __name__)
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'deliverylab' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS, *_SUBMODULES])
