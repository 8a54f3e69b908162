"""Delivery Guarantees Lab: break a real Kafka cluster, then inspect the evidence.

The library follows one vocabulary (see the design guide): a ``Cluster`` runs brokers,
a ``Proxy`` and the ``Nemesis`` inject faults, a ``Workload`` writes unique values and
records a ``History``, a ``Checker`` judges it, an ``Inspector`` shows topics in Spark.
"""

__version__ = "0.1.0"
