"""Chapter 06's evidence as Spark DataFrames: the database through Spark's JDBC source,
the HTTP service's call log, joined with the topic and the History per message id.

The database is read by Spark itself (``format("jdbc")`` with the pinned drivers of the
``jdbc`` jar set, which the Inspector's session carries), not through the instances'
Python driver: the evidence comes from where the effect landed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .db import TABLES, Database
from .errors import bad_value

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from .history import History
    from .inspector import Inspector


def table(inspector: Inspector, db: Database, name: str) -> DataFrame:
    """One of the lab's tables (:data:`~deliverylab.db.TABLES`) through Spark's JDBC
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
    from .plots import COLORS, LabFigure, _finish

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
    return _finish(fig, save)
