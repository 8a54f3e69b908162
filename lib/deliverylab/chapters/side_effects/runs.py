"""Chapter 06's runs (labs/06_side_effects): one fault against every pattern's fleet
(:func:`run_fault`), the fleet's buttons, and the evidence as Spark DataFrames: the
database through Spark's JDBC source, the HTTP service's call log, joined with the topic
and the History per message id.

The database is read by Spark itself (``format("jdbc")`` with the pinned drivers of the
``jdbc`` jar set, which the Inspector's session carries), not through the instances'
Python driver: the evidence comes from where the effect landed.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...errors import LabError, bad_value
from ...faults import FAULTS
from ...faults import fault as registry_fault
from ...history import History
from ...modes import AT_LEAST_ONCE
from ...notebook.plots import COLORS, LabFigure, finish
from ...notebook.widgets import FaultSpec
from ...services.check import Effects
from ...services.db import TABLES, Database
from ...services.fleet import SERVICE_FAULTS, ServiceFleet, SideEffects
from ...services.instance import PATTERNS
from ...workload import ProducerWorkload

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from ...spark.inspector import Inspector


def table(inspector: Inspector, db: Database, name: str) -> DataFrame:
    """One of the lab's tables (:data:`~deliverylab.services.db.TABLES`) through Spark's JDBC
    source."""
    if name not in TABLES:
        raise bad_value("table", name, "one of " + ", ".join(TABLES))
    return (inspector.spark.read.format("jdbc").options(**db.jdbc_options)
            .option("dbtable", name).load())


def call_log(inspector: Inspector, http: Any) -> DataFrame:
    """The HTTP service's call log (one row per request that reached it)."""
    from pyspark.sql.types import (
        BooleanType,
        DoubleType,
        LongType,
        StringType,
        StructField,
        StructType,
    )

    schema = StructType([
        StructField("call", LongType()), StructField("time", DoubleType()),
        StructField("wall", DoubleType()), StructField("run", StringType()),
        StructField("message_id", StringType()), StructField("instance", StringType()),
        StructField("key", StringType()), StructField("effect", BooleanType()),
        StructField("payment", LongType())])
    return inspector.spark.read.schema(schema).json(str(http.log))


def per_message(inspector: Inspector, lab: Any, fleet: Any,
                history: History | None = None) -> DataFrame:
    """One row per message id of ``fleet``'s input: copies in the topic, times polled
    (History), rows in the database, calls and effects at the HTTP service.

    Columns: message_id, in_topic, polled, rows, calls, effects. A message with
    ``rows`` or ``effects`` above 1 was processed twice outside Kafka.
    """
    from pyspark.sql import functions as F

    topic = (inspector.topic(fleet.topic).where(F.col("value").isNotNull())
             .groupBy(F.col("value").alias("message_id"))
             .agg(F.count("*").alias("in_topic")))
    rows = (table(inspector, lab.db, "orders_rows").where(F.col("run") == fleet.run)
            .groupBy("message_id").agg(F.count("*").alias("rows")))
    call_run = fleet.next_fleet.run if fleet.next_fleet is not None else fleet.run
    calls = (call_log(inspector, lab.http).where(F.col("run") == call_run)
             .groupBy("message_id")
             .agg(F.count("*").alias("calls"),
                  F.sum(F.col("effect").cast("int")).alias("effects")))
    out = topic.join(rows, "message_id", "left").join(calls, "message_id", "left")
    if history is not None:
        ops = inspector.history_frame(history)
        names = [m.name for m in fleet.members]
        polled = (ops.where((F.col("kind") == "poll") & F.col("process").isin(names)
                            & (F.col("topic") == fleet.topic))
                  .select(F.explode("values").alias("message_id"))
                  .groupBy("message_id").agg(F.count("*").alias("polled")))
        out = out.join(polled, "message_id", "left")
    else:
        out = out.withColumn("polled", F.lit(None).cast("long"))
    return (out.select("message_id", "in_topic",
                       F.coalesce("polled", F.lit(0)).alias("polled"),
                       F.coalesce("rows", F.lit(0)).alias("rows"),
                       F.coalesce("calls", F.lit(0)).alias("calls"),
                       F.coalesce("effects", F.lit(0)).cast("long").alias("effects"))
            .orderBy("message_id"))


def calls_plot(frames: dict[str, Any], title: str = "HTTP calls and effects per message id",
               save: str | None = None) -> Any:
    """One panel per pattern: HTTP calls (bars) and effects (dots) per message id.

    ``frames``: pattern -> a pandas frame of :func:`per_message` (``.toPandas()``). A bar
    above 1 is a duplicate call; a dot above 1 a duplicate payment.
    """
    if not frames:
        raise bad_value("frames", frames, "at least one pattern's per-message frame")
    fig = LabFigure(figsize=(10, 1.8 * len(frames) + 0.6))
    axes = fig.subplots(len(frames), 1, sharex=False, squeeze=False)[:, 0]
    for ax, (pattern, pdf) in zip(axes, frames.items(), strict=True):
        pdf = pdf.assign(seq=pdf["message_id"].str.rsplit(":", n=1).str[-1].astype(int))
        pdf = pdf.sort_values("seq")
        ax.bar(pdf["seq"], pdf["calls"], color=COLORS["read"], alpha=0.6, label="calls")
        ax.plot(pdf["seq"], pdf["effects"], "o", color=COLORS["duplicate"], label="effects")
        ax.axhline(1, color="#777777", lw=0.8, ls="--")
        ax.set_ylabel(pattern)
        ax.set_ylim(0, max(2.5, float(pdf["calls"].max() if len(pdf) else 1) + 0.5))
    axes[0].legend(loc="upper right", fontsize=8)
    axes[-1].set_xlabel("order (message id sequence number)")
    fig.suptitle(title)
    return finish(fig, save)


# --- one fault, every pattern ------------------------------------------------------------


@dataclass
class FaultRun:
    """Every pattern's side effects under one fault."""

    fault: str
    topic: str
    effects: dict[str, Effects] = field(default_factory=dict)
    fleets: dict[str, ServiceFleet] = field(default_factory=dict, repr=False)
    seconds: float = 0.0

    def table(self) -> Any:
        """One row per pattern: the counts of :class:`~deliverylab.services.check.Effects`."""
        import pandas as pd

        cols = ["pattern", "messages", "input_copies", "redelivered", "rows",
                "duplicate_rows", "calls", "duplicate_calls", "effects", "duplicate_effects",
                "missing_rows", "rejected_commits"]
        return pd.DataFrame([{c: getattr(e, c) for c in cols} | {"fault": self.fault}
                             for e in self.effects.values()])

    def summary(self) -> str:
        return f"under {self.fault}:\n" + "\n".join(
            "  " + e.summary() for e in self.effects.values())


def run_fault(lab: SideEffects, fault: str, patterns: Iterable[str] = PATTERNS,
              orders: int = 20, nemesis: Any = None, history: History | None = None,
              tag: str = "", max_poll_interval_ms: int = 8000,
              timeout: float = 180.0) -> FaultRun:
    """Write ``orders`` orders, run one fleet per pattern on them, inject ``fault``.

    ``lose_ack`` is done by the Nemesis to the orders' producer (a duplicate from
    upstream: the orders topic holds a message twice, at two offsets);
    ``restart_instance`` runs single-instance fleets; the others, two instances per
    fleet. Every fault pressed must fire, and every fleet must commit its whole input,
    or this raises.
    """
    t0 = time.monotonic()
    registry_fault(fault)
    accepted = (*SERVICE_FAULTS, "kill_relay", "lose_ack")
    if fault not in accepted:
        raise bad_value("fault", fault, "one of " + ", ".join(accepted))
    patterns = list(patterns)
    if fault == "kill_relay" and patterns != ["outbox"]:
        raise bad_value("patterns", patterns, "['outbox']: only the outbox has a relay")
    history = history if history is not None else History()
    topic = lab.cluster.create_topic(f"orders-{fault}{tag}-{uuid.uuid4().hex[:4]}",
                                     partitions=1)
    if fault == "lose_ack":
        if nemesis is None:
            raise bad_value("nemesis", nemesis, "a Nemesis, to lose the producer's ack")
        record = nemesis.lose_ack(topic=topic)
        ProducerWorkload(lab.cluster, topic, AT_LEAST_ONCE, history,
                         process="orders").run(orders)
        if not record.handle.wait(10):
            raise LabError(f"the proxy lost no ack while writing {topic}")
    else:
        ProducerWorkload(lab.cluster, topic, AT_LEAST_ONCE, history,
                         process="orders").run(orders)
    instances = 1 if fault == "restart_instance" else 2
    fleets = [lab.fleet(topic, p, instances=instances, run=f"{topic}/{p}",
                        group=f"{topic}-{p}", max_poll_interval_ms=max_poll_interval_ms)
              for p in patterns]
    try:
        if fault != "lose_ack":
            for fleet in fleets:
                getattr(fleet, fault)()
        for fleet in fleets:
            fleet.wait(timeout)
    finally:
        for fleet in fleets:
            fleet.stop()
    run = FaultRun(fault, topic)
    for fleet in fleets:
        fleet.record(history)
        run.effects[fleet.pattern] = fleet.effects()
        run.fleets[fleet.pattern] = fleet
    run.seconds = time.monotonic() - t0
    return run


def fleet_buttons(fleet: ServiceFleet) -> list[Any]:
    """FaultPanel buttons for the registry's service faults, pressing ``fleet``'s
    methods of the same names (a click and a papermill schedule alike)."""
    return [FaultSpec(FAULTS[name].label, getattr(fleet, name), help=FAULTS[name].help,
                      style="danger" if name.startswith("kill") else "warning")
            for name in SERVICE_FAULTS]
