"""Chapter 09's kit (``labs/09_kafka_bugs.ipynb``): published Kafka delivery bugs,
reproduced on demand, broken and fixed side by side (:mod:`.reproductions`).

The notebook reaches it one way, ``from deliverylab.chapters import kafka_bugs as kit``:
``kit.OVERRIDES`` (the cluster's settings the reproductions need), ``kit.BUGS``,
``kit.expired_producer``, ``kit.stale_end_txn``, ``kit.java_stale_end_txn``,
``kit.hanging_transaction``, ``kit.transaction_version`` and
``kit.finalized_transaction_version``, ``kit.table``, ``kit.buttons``.
"""

from __future__ import annotations

from .reproductions import (
    BUGS,
    OVERRIDES,
    Bug,
    Reproduction,
    buttons,
    expired_producer,
    finalized_transaction_version,
    hanging_transaction,
    java_stale_end_txn,
    stale_end_txn,
    table,
    transaction_version,
)

__all__ = ["BUGS", "OVERRIDES", "Bug", "Reproduction", "buttons", "expired_producer",
           "finalized_transaction_version", "hanging_transaction", "java_stale_end_txn",
           "stale_end_txn", "table", "transaction_version"]
