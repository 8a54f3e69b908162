"""Chapter 02's lost-ack recipe: a produce whose acknowledgement is lost, two copies
without idempotence, one copy with it (:func:`lost_ack_duplicate`).

Chapter 02 introduces it (at least once: a lost ack makes a duplicate) and chapter 03
runs it again with idempotence on, importing it from here (its kit,
:mod:`deliverylab.chapters.idempotent_producer`, re-exports it). It is written on the
recipes' shared helpers, which live in chapter 01's kit, where the recipes begin
(:mod:`deliverylab.chapters.at_most_once.recipes`).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from confluent_kafka import Producer

from ... import values
from ...clients import config
from ...history import History
from ...nemesis import Nemesis
from ..at_most_once.recipes import RecipeFailed, Send, ensure_topic, evidence

if TYPE_CHECKING:
    from ...cluster import Cluster


@dataclass(frozen=True)
class LostAckResult:
    """Evidence of one lost-ack run.

    ``copies`` is how many records of the partition carry ``value``: 2 without
    idempotence (the original and the retry), 1 with it. ``acked_offset`` is what the
    client was finally told; ``offsets`` is where the copies really are.
    """

    topic: str
    partition: int
    idempotent: bool
    value: str
    copies: int
    offsets: tuple[int, ...]
    acked_offset: int | None
    acks_dropped: int
    leader: int
    error: str | None
    records: tuple[tuple[int, str | None], ...] = field(repr=False)
    #: The fault op the Nemesis recorded (``lose_ack``, aimed at this producer only).
    history: History = field(default_factory=History, repr=False, compare=False)

    @property
    def duplicated(self) -> bool:
        return self.copies > 1

    def __str__(self) -> str:
        mode = "idempotent" if self.idempotent else "not idempotent"
        return (f"lost ack ({mode}): value {self.value} acked at offset {self.acked_offset}, "
                f"found {self.copies} time(s) at offsets {list(self.offsets)} "
                f"({self.acks_dropped} ack dropped by the proxy of broker {self.leader})")


def lost_ack_duplicate(cluster: Cluster, topic: str, idempotent: bool = False,
                       timeout: float = 30.0, history: History | None = None,
                       ) -> LostAckResult:
    """Produce one value whose acknowledgement is lost; count its copies in the topic.

    Why it is deterministic: the leader's proxy forwards the produce request, the
    broker appends the value and replicates it (``acks=all``), and the proxy swallows
    the response and closes the connection. The client now holds a request it knows
    was sent but not whether it was written, so it retries it on a new connection.
    Without idempotence the broker cannot tell a retry from a new write and appends a
    second copy -- always, because the first copy is certainly in the log (its
    response existed) before the retry is sent. With ``enable.idempotence`` the retry
    carries the same producer id and sequence number and the broker answers with the
    first copy's offset instead of appending. ``max.in.flight=1`` keeps exactly one
    request in flight, so exactly one write is ever in doubt.

    A first value is written before the fault so that the connection (and, with
    idempotence, the producer id) exists and the fault hits the value under test. The
    fault goes through the :class:`~deliverylab.nemesis.Nemesis`, so ``history`` (or the
    result's own) holds its ``lose_ack`` op like any other run's.
    """
    if not cluster.proxies:
        raise RecipeFailed("lost_ack_duplicate needs the fault proxy: start the cluster "
                           "with Cluster.start(..., proxy=True)")
    ensure_topic(cluster, topic, {})
    leader = cluster.wait_leader(topic, 0)
    producer_id = f"lost-ack-{uuid.uuid4().hex[:8]}"
    producer = Producer(config(cluster.bootstrap_servers, **{
        "client.id": producer_id, "enable.idempotence": bool(idempotent), "acks": "all",
        "max.in.flight.requests.per.connection": 1, "retries": 10,
        "retry.backoff.ms": 100, "linger.ms": 0,
        "message.timeout.ms": int(timeout * 1000)}))
    key = values.key(producer_id)
    warmup = Send(producer, topic, values.encode(producer_id, 0), key)
    if not warmup.wait(timeout) or not warmup.ok:
        raise RecipeFailed(f"the first write to {topic!r} failed ({warmup.error_name}) "
                           "before any fault: is the cluster healthy?")
    # Only this producer's request: a workload running beside the recipe keeps its acks.
    nemesis = Nemesis(cluster, history)
    loss = nemesis.lose_ack(node=leader, api="Produce", client_id=producer_id).handle
    try:
        victim = Send(producer, topic, values.encode(producer_id, 1), key)
        victim.wait(timeout)
        if not loss.wait(1.0):
            raise RecipeFailed(f"the proxy of broker {leader} never saw the produce "
                               "request: did the leader move?")
    finally:
        loss.cancel()
        producer.flush(5)
    labels = tuple((r.offset, r.value) for r in evidence(cluster, topic, timeout))
    name = str(values.ValueId(producer_id, 1))
    offsets = tuple(offset for offset, label in labels if label == name)
    return LostAckResult(topic=topic, partition=0, idempotent=bool(idempotent), value=name,
                         copies=len(offsets), offsets=offsets, acked_offset=victim.offset,
                         acks_dropped=loss.dropped, leader=leader,
                         error=victim.error_name, records=labels, history=nemesis.history)


__all__ = ["LostAckResult", "lost_ack_duplicate"]
