"""The Inspector: topics as Spark DataFrames, and the checkers' questions asked in Spark.

Why Spark at all, when the Python :mod:`~deliverylab.checker` can judge a run? Because
the course's evidence must come from a reader that shares nothing with the clients
under test: Spark's Kafka connector is a different client (Java, its own offset
handling, its own isolation setting) looking at the same log. When Spark's view and the
checker's agree, the finding is about the log, not about our Python.

Three facts shape every method here (see the design guide):

- Spark's Kafka source defaults to ``read_uncommitted``; we always pass
  ``kafka.isolation.level`` explicitly, so a view says which reader it is.
- Transactional topics have offset gaps (commit/abort markers take an offset each, and
  ``read_committed`` skips aborted records): records are always *counted*, never
  derived from offset ranges.
- The last stable offset (LSO) holds ``read_committed`` back while a transaction is
  open: offsets at or past it are *pending*, neither committed nor aborted yet.

One SparkSession serves the whole kernel (starting one takes seconds and a JVM); every
:class:`Inspector` shares it, and it is stopped when the Python process exits.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from confluent_kafka.admin import AdminClient

from .. import clients, readers
from ..errors import JarsUnavailable, bad_value
from ..history import History, Op, Read
from .session import _alive, session, stop

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

ISOLATIONS: tuple[str, ...] = ("read_committed", "read_uncommitted")

#: A read of at least this many records is split so every core gets a share (_raw).
_SPLIT_FROM = 100_000

#: Kafka's fetch.max.wait.ms for the Inspector's batch reads (see _raw).
_FETCH_WAIT_MS = 10

#: Offset kinds in :meth:`Inspector.offset_gaps`.
MARKER, ABORTED, PENDING = "marker", "aborted", "pending"


# --- schemas -------------------------------------------------------------------------


def _value_schema():
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    # FIELDS from values.py: producer, seq, payload.
    return StructType([
        StructField("producer", StringType()),
        StructField("seq", LongType()),
        StructField("payload", StringType()),
    ])


def _ops_schema():
    from pyspark.sql.types import (
        ArrayType,
        DoubleType,
        IntegerType,
        LongType,
        StringType,
        StructField,
        StructType,
    )

    # The History's JSON Lines fields (Op), as Spark reads them.
    return StructType([
        StructField("process", StringType()),
        StructField("kind", StringType()),
        StructField("outcome", StringType()),
        StructField("time", DoubleType()),
        StructField("values", ArrayType(StringType())),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("txn", StringType()),
        StructField("error", StringType()),
        StructField("detail", StringType()),
        StructField("fault", StringType()),
    ])


# --- decoding lab values -----------------------------------------------------------

#: The exact bytes values.encode writes, when no JSON escape is needed: printable ASCII
#: without '"' or '\\' in the strings, a seq that fits a long without leading zeros.
#: Java regex syntax (Spark's rlike); \A and \z: the whole value and nothing else (Java's
#: $ would also take a trailing line terminator). Stricter than needed is safe: what does
#: not match goes to from_json.
_ENCODED = (r'\A\{"producer":"[ !#-\[\]-~]*","seq":-?(?:0|[1-9][0-9]{0,17}),'
            r'"payload":"[ !#-\[\]-~]*"\}\z')


def _lab_value(value):
    """The value column (binary) as a struct whose producer and seq are what
    ``from_json`` with :func:`_value_schema` decodes, in PERMISSIVE mode (nulls, never
    an error); its payload is left null on the fast path.

    Why not from_json alone: it runs a JSON parser per record, ~1 s per 1M records on
    two cores. A value in :func:`values.encode`'s exact layout (:data:`_ENCODED`) is cut
    by position instead: its strings hold no quote, backslash or control character, so
    the producer ends at the first '"' after the prefix and the seq at the first ',' after
    '"seq":', and the parts are what the parser would return. Anything else -- other JSON,
    spacing, escapes, non-ASCII, not JSON, a tombstone -- goes to from_json unchanged.
    """
    from pyspark.sql import functions as F

    text = value.cast("string")
    producer = F.substring_index(F.substring(text, len('{"producer":"') + 1, 1 << 30), '"', 1)
    seq = F.substring_index(F.substring_index(text, '"seq":', -1), ",", 1).cast("long")
    # The payload is not needed here: null on the fast path, from_json's struct as is on
    # the other (one parse per record; its fields are taken by the caller).
    cut = F.struct(producer.alias("producer"), seq.alias("seq"),
                   F.lit(None).cast("string").alias("payload"))
    return F.when(text.rlike(_ENCODED), cut).otherwise(
        F.from_json(text, _value_schema(), {"mode": "PERMISSIVE"}))


# --- the Inspector ---------------------------------------------------------------------


class Inspector:
    """Read-only views of a Kafka cluster's topics, as Spark DataFrames.

    ``cluster`` is a bootstrap address (``"127.0.0.1:9092,127.0.0.1:9093"``) or any object
    with ``.bootstrap_servers`` (a lab :class:`~deliverylab.cluster.Cluster`), so the same
    chapter works against local brokers, docker compose or an external cluster. An
    object's ``.direct_bootstrap_servers`` wins when it has one: the evidence must not
    pass through the fault proxies the Nemesis is breaking.
    Construction starts (or reuses) the kernel's SparkSession, which takes seconds.
    """

    def __init__(
        self,
        cluster: Any,
        master: str | None = None,
        conf: dict[str, str] | None = None,
        timeout: float = 15.0,
    ) -> None:
        self.bootstrap_servers = clients.bootstrap_of(cluster, direct=True)
        self.timeout = timeout
        self._admin = AdminClient(clients.config(self.bootstrap_servers))
        self.spark = session(master, conf)

    def __repr__(self) -> str:
        return f"<Inspector {self.bootstrap_servers} spark={self.spark.sparkContext.master}>"

    @property
    def spark(self) -> SparkSession:
        """The kernel's session, restarted transparently if someone stopped it."""
        if not _alive(self._spark):
            self._spark = session()
        return self._spark

    @spark.setter
    def spark(self, value: SparkSession) -> None:
        self._spark = value

    @staticmethod
    def stop() -> None:
        """Stop the kernel's SparkSession (shared by every Inspector)."""
        stop()

    # --- Kafka metadata (confluent-kafka: small and exact, no Spark job needed) ------

    def _partitions(self, name: str) -> list[int]:
        return readers.partitions(self._admin, name, self.timeout, self.bootstrap_servers)

    def bounds(self, name: str) -> list[dict[str, int]]:
        """Per partition: log start offset, high watermark and last stable offset
        (:func:`deliverylab.readers.bounds`)."""
        return readers.bounds(self._admin, name, self.timeout, self.bootstrap_servers)

    def wait_stable(self, name: str, timeout: float = 30.0) -> list[dict[str, int]]:
        """Wait until no transaction is open on ``name``
        (:func:`deliverylab.readers.wait_stable`)."""
        return readers.wait_stable(self._admin, name, timeout, self.bootstrap_servers)

    # --- reading topics ---------------------------------------------------------------

    def _raw(self, name: str, isolation: str, bounds: list[dict[str, int]],
             headers: bool = True) -> DataFrame:
        """Spark's batch read of one topic under one isolation level.

        The end is pinned to the offsets "latest" meant when the view was asked for
        (high watermark, or LSO for read_committed): every action on the DataFrame then
        reads the same records, even while producers keep writing. ``headers=False``
        skips building the headers column, for views that never look at it.
        """
        end_key = "last_stable_offset" if isolation == "read_committed" else "high_watermark"
        ending = json.dumps({name: {str(b["partition"]): b[end_key] for b in bounds}})
        reader = (
            self.spark.read.format("kafka")
            .option("kafka.bootstrap.servers", self.bootstrap_servers)
            .option("kafka.isolation.level", isolation)
            .option("subscribe", name)
            .option("startingOffsets", "earliest")
            .option("endingOffsets", ending)
            .option("includeHeaders", "true" if headers else "false")
            # How long the broker holds a fetch that finds no new data (Kafka's default
            # 500 ms). Each task's consumer pays it once near the end of its range, in
            # every wave of tasks: ~1 s of any read on 2 cores, small or big (1M records:
            # scan 1.9 s -> 1.0 s). The records read are the same; only idle waits shrink.
            .option("kafka.fetch.max.wait.ms", str(_FETCH_WAIT_MS))
        )
        # One Spark task per Kafka partition by default: 3 partitions on 2 cores run in
        # two waves, the second on one core while the other idles. Splitting each
        # partition in one range per core makes the task count a multiple of the cores
        # and the tasks equal. Small reads are left whole: a task costs a consumer.
        cores = self.spark.sparkContext.defaultParallelism
        records = sum(max(b[end_key] - b["log_start_offset"], 0) for b in bounds)
        if records >= _SPLIT_FROM and len(bounds) % cores:
            reader = reader.option("minPartitions", str(len(bounds) * cores))
        try:
            return reader.load()
        except Exception as exc:
            text = str(exc)
            if "Failed to find data source: kafka" in text or "DATA_SOURCE_NOT_FOUND" in text:
                raise JarsUnavailable(
                    "Spark says 'Failed to find data source: kafka': this SparkSession was "
                    "started without Kafka's connector (spark-sql-kafka-0-10). Restart the "
                    "kernel and create the Inspector before any other SparkSession") from exc
            raise

    @staticmethod
    def _check_isolation(isolation: str) -> str:
        if isolation not in ISOLATIONS:
            raise bad_value("isolation", isolation, "'read_committed' or 'read_uncommitted'")
        return isolation

    def topic(self, name: str, isolation: str = "read_committed") -> DataFrame:
        """The records of ``name`` as one isolation level sees them, values decoded.

        Columns: topic, partition, offset, timestamp, key (string), headers, producer,
        seq, payload_length, value (``"producer:seq"``, the History's and checker's
        spelling). Records that are not lab values (other JSON, not JSON, tombstones)
        get nulls there instead of failing the job: a topic is evidence, and one odd
        record must not hide the rest.
        """
        self._check_isolation(isolation)
        return self._view(name, isolation, self.bounds(name))

    def _view(self, name: str, isolation: str, bounds: list[dict[str, int]]) -> DataFrame:
        """One isolation level's records, decoded (the body of :meth:`topic`)."""
        from pyspark.sql import functions as F

        raw = self._raw(name, isolation, bounds)
        # PERMISSIVE: malformed JSON gives nulls, never an error (even with ANSI on).
        v = F.from_json(F.col("value").cast("string"), _value_schema(), {"mode": "PERMISSIVE"})
        lab = F.col("v.producer").isNotNull() & F.col("v.seq").isNotNull()
        return raw.select(
            "topic", "partition", "offset", "timestamp",
            F.col("key").cast("string").alias("key"), "headers", v.alias("v"),
        ).select(
            "topic", "partition", "offset", "timestamp", "key", "headers",
            F.col("v.producer").alias("producer"),
            F.col("v.seq").alias("seq"),
            F.length("v.payload").alias("payload_length"),
            F.when(lab, F.concat_ws(":", "v.producer", F.col("v.seq").cast("string")))
            .alias("value"),
        )

    def _lab_values(self, name: str, isolation: str,
                    bounds: list[dict[str, int]]) -> DataFrame:
        """partition, offset, producer, seq of every record: the slim read that the
        per-value questions group on (the same producer and seq as :meth:`_view`, see
        :func:`_lab_value`). Records that are not lab values have a null producer or
        seq; the caller drops them *after* grouping: a filter here is pushed into the
        scan by Spark's optimizer, which then decodes each record once more for the
        filter (~1 s per 1M records)."""
        from pyspark.sql import functions as F

        raw = self._raw(name, isolation, bounds, headers=False)
        return (
            raw.select("partition", "offset", _lab_value(F.col("value")).alias("v"))
            .select("partition", "offset", F.col("v.producer").alias("producer"),
                    F.col("v.seq").alias("seq"))
        )

    def reads(self, name: str, isolation: str = "read_committed") -> list[Read]:
        """The read-back as the checker's :class:`~deliverylab.history.Read` list.

        So Spark and the Python checker can be pointed at the *same* read of one run;
        ``reader`` is the isolation level, as the checker recommends.
        """
        pdf = self.topic(name, isolation).select("partition", "offset", "value").toPandas()
        return [
            Read(name, int(p), int(o), v if isinstance(v, str) else None, isolation)
            for p, o, v in zip(pdf["partition"], pdf["offset"], pdf["value"], strict=True)
        ]

    # --- views ------------------------------------------------------------------------

    def duplicates(self, name: str, isolation: str = "read_committed") -> DataFrame:
        """Values stored more than once: the checker's ``duplicates``, in Spark.

        Columns: topic, value, producer, seq, copies, offsets (sorted
        ``[partition, offset]`` pairs, the checker's format). Copies in different
        partitions count too: a value is unique per topic, not per partition.
        """
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        self._check_isolation(isolation)
        # Nearly every value is stored once, so the question is answered in two steps:
        # a count per value over the whole read, then offsets for the few kept values.
        # The count is a window over one shuffle and one sort; an aggregate that also
        # collects the offsets of every value (collect_list) would need Spark's object
        # aggregation, which past 128 keys falls back to sorting both before and after
        # the shuffle. On the rows left the grouping is small and needs no new shuffle.
        # Grouped by the value's parts (seq, producer) alone: one topic is read, and a
        # value *is* "producer:seq", so the groups are the same with a smaller key;
        # topic and value are put back on the groups kept. Seq first: the sort's
        # prefix is then the number, not the producer name every record shares.
        # Lab values only: counting just the records with producer and seq leaves the
        # null groups (non-lab records) at 0 copies, dropped by `copies > 1`, a filter
        # on a window the optimizer cannot push back into the scan (see _lab_values).
        lab = F.col("producer").isNotNull() & F.col("seq").isNotNull()
        per_value = Window.partitionBy("seq", "producer")
        return (
            self._lab_values(name, isolation, self.bounds(name))
            .withColumn("copies", F.count(F.when(lab, 1)).over(per_value))
            .where(F.col("copies") > 1)
            .groupBy("seq", "producer")
            .agg(F.count("*").alias("copies"),
                 F.sort_array(F.collect_list(F.array(F.col("partition").cast("long"),
                                                     "offset"))).alias("offsets"))
            .select(F.lit(name).alias("topic"),
                    F.concat_ws(":", "producer", F.col("seq").cast("string")).alias("value"),
                    "producer", "seq", "copies", "offsets")
            # The rows kept are few: one sorted partition. orderBy would range-partition
            # them, and sampling the ranges runs everything after the shuffle twice.
            .repartition(1)
            .sortWithinPartitions("producer", "seq")
        )

    def aborted(self, name: str) -> DataFrame:
        """Records of aborted transactions: read_uncommitted minus read_committed.

        Only below the last stable offset: past it a transaction is still open, and its
        records are *pending* (see :meth:`offset_gaps`), not aborted.
        """
        from pyspark.sql import functions as F

        bounds = self.bounds(name)
        pair = self._decoded_pair(name, bounds)
        lso = self.spark.createDataFrame(
            [(b["partition"], b["last_stable_offset"]) for b in bounds], "partition int, lso long")
        return (
            pair["read_uncommitted"]
            .join(lso, "partition")
            .where(F.col("offset") < F.col("lso"))
            .drop("lso")
            .join(pair["read_committed"].select("partition", "offset"),
                  ["partition", "offset"], "left_anti")
            .orderBy("partition", "offset")
        )

    def _decoded_pair(self, name: str, bounds: list[dict[str, int]]) -> dict[str, DataFrame]:
        """Both isolation views pinned to the *same* bounds, so their difference is exact."""
        return {isolation: self._view(name, isolation, bounds) for isolation in ISOLATIONS}

    def offset_gaps(self, name: str, isolation: str = "read_committed") -> DataFrame:
        """Offsets the reader skipped, per partition, in runs of one kind.

        Columns: partition, first_offset, last_offset, size, kind, where kind is

        - ``marker``: no isolation level returns it: a transaction's commit or abort
          marker (on a compacted topic, also a record compaction removed);
        - ``aborted``: only read_uncommitted returns it: a record of an aborted
          transaction (read_committed views only);
        - ``pending``: at or past the last stable offset: an open transaction holds
          read_committed back here (read_committed views only).

        The range examined is [log start, high watermark): a marker at the very end of
        a partition (every committed transaction ends with one) is a gap too.
        """
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        self._check_isolation(isolation)
        bounds = self.bounds(name)
        b = self.spark.createDataFrame(
            [(x["partition"], x["log_start_offset"], x["high_watermark"],
              x["last_stable_offset"]) for x in bounds],
            "partition int, start long, hw long, lso long")
        pair = self._decoded_pair(name, bounds) if isolation == "read_committed" else {
            isolation: self._raw(name, isolation, bounds)}
        seen = pair[isolation].select("partition", "offset")
        # Sentinels just outside [start, hw) make leading and trailing gaps visible.
        edges = b.select("partition", (F.col("start") - 1).alias("offset")).unionByName(
            b.select("partition", F.col("hw").alias("offset")))
        by_offset = Window.partitionBy("partition").orderBy("offset")
        gaps = (
            seen.unionByName(edges)
            .withColumn("next", F.lead("offset").over(by_offset))
            .where(F.col("next") - F.col("offset") > 1)
            .select("partition",
                    F.explode(F.sequence(F.col("offset") + 1, F.col("next") - 1))
                    .alias("offset"))
            .join(b.select("partition", "lso"), "partition")
        )
        if isolation == "read_committed":
            other = pair["read_uncommitted"].select(
                "partition", "offset", F.lit(True).alias("in_other"))
            gaps = gaps.join(other, ["partition", "offset"], "left")
            kind = (F.when(F.col("offset") >= F.col("lso"), F.lit(PENDING))
                    .when(F.col("in_other"), F.lit(ABORTED))
                    .otherwise(F.lit(MARKER)))
        else:
            kind = F.lit(MARKER)
        # Gaps and islands: consecutive offsets of one kind share offset - row_number.
        by_kind = Window.partitionBy("partition", "kind").orderBy("offset")
        return (
            gaps.withColumn("kind", kind)
            .withColumn("island", F.col("offset") - F.row_number().over(by_kind))
            .groupBy("partition", "kind", "island")
            .agg(F.min("offset").alias("first_offset"), F.max("offset").alias("last_offset"),
                 F.count("*").alias("size"))
            .select("partition", "first_offset", "last_offset", "size", "kind")
            .orderBy("partition", "first_offset")
        )

    def partition_summary(self, name: str) -> DataFrame:
        """Per partition: records counted under each isolation level beside the offsets.

        Columns: partition, records_committed, records_uncommitted, first_offset,
        last_offset (of records read uncommitted), log_start_offset, high_watermark,
        last_stable_offset, offset_span (high watermark - log start). ``offset_span``
        is there to be compared, not used: on a transactional topic it exceeds the
        record count by the markers (and aborted records), and an LSO below the high
        watermark means a transaction is open right now.
        """
        from pyspark.sql import functions as F

        bounds = self.bounds(name)
        pair = self._decoded_pair(name, bounds)
        uncommitted = pair["read_uncommitted"].groupBy("partition").agg(
            F.count("*").alias("records_uncommitted"),
            F.min("offset").alias("first_offset"), F.max("offset").alias("last_offset"))
        committed = pair["read_committed"].groupBy("partition").agg(
            F.count("*").alias("records_committed"))
        b = self.spark.createDataFrame(
            [(x["partition"], x["log_start_offset"], x["high_watermark"],
              x["last_stable_offset"]) for x in bounds],
            "partition int, log_start_offset long, high_watermark long, "
            "last_stable_offset long")
        return (
            b.join(committed, "partition", "left")
            .join(uncommitted, "partition", "left")
            .fillna(0, ["records_committed", "records_uncommitted"])
            .select("partition", "records_committed", "records_uncommitted", "first_offset",
                    "last_offset", "log_start_offset", "high_watermark", "last_stable_offset",
                    (F.col("high_watermark") - F.col("log_start_offset")).alias("offset_span"))
            .orderBy("partition")
        )

    # --- the History beside the log --------------------------------------------------

    def history_frame(self, history: History | Iterable[Op] | str | Path) -> DataFrame:
        """A History as a Spark DataFrame of ops (a saved JSON Lines file or in memory)."""
        import pandas as pd

        if isinstance(history, (str, Path)):
            path = Path(history)
            if not path.is_file():
                raise bad_value("history", str(history),
                                "a History, or the path of a file written by History.save()")
            return self.spark.read.schema(_ops_schema()).json(str(path))
        ops = list(history) if isinstance(history, Iterable) else None
        if ops is None or not all(isinstance(op, Op) for op in ops):
            raise bad_value("history", history, "a History, a list of Op, or a saved path")
        cols = [f.name for f in _ops_schema().fields]
        pdf = pd.DataFrame(
            [(o.process, o.kind, o.outcome, float(o.time), list(o.values), o.topic,
              o.partition, o.offset, o.txn, o.error, o.detail, o.fault) for o in ops],
            columns=cols,
        )
        for col in ("partition", "offset"):
            pdf[col] = pdf[col].astype("Int64")
        return self.spark.createDataFrame(pdf, schema=_ops_schema())

    def writers(self, history: History | Iterable[Op] | str | Path,
                topic: str) -> DataFrame:
        """Which process wrote each value to ``topic``, per the History's sends: columns
        value, written_by (sorted process names), copies. A value written by two
        instances of a consumer group was processed twice. Introduced in
        ``labs/02b_consumer_groups.ipynb``."""
        from pyspark.sql import functions as F

        ops = self.history_frame(history)
        return (ops.where((F.col("kind") == "send") & (F.col("topic") == topic))
                .select(F.explode("values").alias("value"), "process")
                .groupBy("value")
                .agg(F.sort_array(F.collect_list("process")).alias("written_by"),
                     F.count("*").alias("copies")))

    def history_join(
        self,
        name: str,
        history: History | Iterable[Op] | str | Path,
        isolation: str = "read_committed",
    ) -> DataFrame:
        """For every value sent to ``name``: what the client was told, and what the log holds.

        Columns: value, producer, seq, outcome (over all its sends, strongest first:
        ok, then info, then fail), sends, txn, txn_fate (committed / aborted / unknown,
        by the checker's rule, or null outside transactions), times_read, offsets.
        ``times_read`` 0 for an ``ok`` send of a committed value is a loss; more than 1
        is a duplicate; 0 for ``info`` is the course's point: nobody promised either.
        Sends recorded without a topic count for every topic, as in the checker.
        The History is read when this is called; the topic, when the view is computed.
        """
        from pyspark.sql import functions as F

        self._check_isolation(isolation)
        # Read the History once, here: it is needed twice below (fates, sends) and,
        # unlike a topic, it does not change. Only the ops that matter are kept.
        ops = (
            self.history_frame(history)
            .select("kind", "outcome", "values", "topic", "txn")
            .where(((F.col("kind") == "send")
                    & (F.col("topic").isNull() | (F.col("topic") == name)))
                   | F.col("kind").isin("commit_txn", "abort_txn"))
            .localCheckpoint(eager=True)
        )
        # Transaction fates, the checker's rule (checker.txn_fates): committed if a
        # commit_txn ended ok; else aborted if an abort_txn ended ok; else unknown if a
        # commit_txn ended info; else aborted (the coordinator aborts a dead producer's).
        def seen(kind: str, outcome: str):
            hit = (F.col("kind") == kind) & (F.col("outcome") == outcome)
            return F.max(F.when(hit, 1).otherwise(0))

        fates = (
            ops.where(F.col("txn").isNotNull())
            .groupBy("txn")
            .agg(seen("commit_txn", "ok").alias("c_ok"), seen("abort_txn", "ok").alias("a_ok"),
                 seen("commit_txn", "info").alias("c_info"))
            .select("txn", F.when(F.col("c_ok") == 1, "committed")
                    .when(F.col("a_ok") == 1, "aborted")
                    .when(F.col("c_info") == 1, "unknown")
                    .otherwise("aborted").alias("txn_fate"))
        )
        rank = (F.when(F.col("outcome") == "ok", 2)
                .when(F.col("outcome") == "info", 1).otherwise(0))
        sends = (
            ops.where(F.col("kind") == "send")
            .select(F.explode("values").alias("value"), "outcome", "txn")
            .groupBy("value")
            .agg(F.max(rank).alias("rank"), F.count("*").alias("sends"),
                 F.first("txn", ignorenulls=True).alias("txn"))
            .select("value", F.element_at(F.array(F.lit("fail"), F.lit("info"), F.lit("ok")),
                                          F.col("rank") + 1).alias("outcome"), "sends", "txn")
        )
        read = (
            self.topic(name, isolation)
            .where(F.col("value").isNotNull())
            .groupBy("value")
            .agg(F.count("*").alias("times_read"),
                 F.sort_array(F.collect_list(F.array(F.col("partition").cast("long"),
                                                     "offset"))).alias("offsets"))
        )
        # Split on the last colon, as parse_value does (a producer id may hold colons).
        seq = F.substring_index("value", ":", -1)
        producer = F.expr("left(value, length(value) - length(substring_index(value, ':', -1))"
                          " - 1)")
        return (
            # One row per transaction: broadcast it, or the rows without a txn (all of
            # them, outside transactions) would meet on one shuffle partition.
            sends.join(F.broadcast(fates), "txn", "left")
            .join(read, "value", "left")
            .select(
                "value",
                producer.alias("producer"),
                seq.cast("long").alias("seq"),
                "outcome", "sends", "txn", "txn_fate",
                F.coalesce("times_read", F.lit(0)).alias("times_read"),
                F.coalesce("offsets", F.array().cast("array<array<bigint>>")).alias("offsets"),
            )
            .orderBy("producer", "seq")
        )
