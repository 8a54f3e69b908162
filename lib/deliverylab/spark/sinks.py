"""The Spark pipeline's sinks: one at-least-once, three exactly-once, same crash.

Every sink is a ``foreachBatch`` function, because only there does the driver hold
the window the chapter is about -- after the sink's write, before Spark writes
``commits/N`` (the function *is* the sink's ``addBatch``). Each one:

- records what it read (``poll`` per input record, with its offset) and what it wrote
  (``send`` per output record, ``detail`` naming the batch), through an
  :class:`~deliverylab.history.OpLog`;
- then calls ``after_write(batch)``, where a planned crash happens.

The sinks:

- ``kafka``: Spark's own Kafka writer (``df.write.format("kafka").mode("append")``,
  the V2 ``KafkaDataWriter`` the streaming Kafka sink uses). A replayed batch is sent
  again.
- ``files``: Spark's own ``FileStreamSink.addBatch`` (the class behind
  ``writeStream.format("parquet")``), which appends ``_spark_metadata/N`` after its
  files and skips a batch id it already holds.
- ``database``: SQLite (a real database file, stdlib), one transaction per batch that
  stores the rows *and* ``(query id, batch id)``; a batch id already there is skipped.
- ``kafka_txn``: a transactional producer (chapter 04) writes the rows and a progress
  marker ``query id -> batch id`` to a control topic in one transaction; a replay that
  finds its batch id committed skips. The crash lands inside the open transaction: the
  restarted driver's ``init_transactions`` aborts it (read_uncommitted still sees it).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import values as V
from ..history import OpLog, Read
from .query import QuerySpec, await_query, query_id

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.streaming import DataStreamWriter

AfterWrite = Callable[[int], None]


def _vid(value: str | None) -> str | None:
    try:
        return str(V.decode(value)) if value is not None else None
    except ValueError:
        return None


def _polls(spec: QuerySpec, log: OpLog, rows: list[Any], batch: int) -> None:
    for r in rows:
        vid = _vid(r["value"])
        log.record(spec.process, "poll", "ok", [vid] if vid else [], topic=r["topic"],
                   partition=int(r["partition"]), offset=int(r["offset"]),
                   detail=f"batch {batch}")


def _sends(spec: QuerySpec, log: OpLog, rows: list[Any], batch: int,
           topic: str | None = None) -> None:
    for r in rows:
        vid = _vid(r["value"])
        if vid:
            log.record(spec.process, "send", "ok", [vid], topic=topic or spec.target,
                       partition=int(r["partition"]),
                       detail=f"batch {batch} key {r['provenance']}")


def writer(spec: QuerySpec, frame: DataFrame, log: OpLog,
           after_write: AfterWrite) -> DataStreamWriter:
    """The query's ``writeStream`` for ``spec.sink``."""
    make = {"kafka": _kafka, "files": _files, "database": _database,
            "kafka_txn": _kafka_txn}[spec.sink]
    return frame.writeStream.foreachBatch(make(spec, log, after_write))


# --- kafka: at-least-once -------------------------------------------------------------


def _kafka(spec: QuerySpec, log: OpLog, after_write: AfterWrite):
    def write(df: DataFrame, batch: int) -> None:
        from pyspark.sql import functions as F

        df = df.persist()
        rows = df.collect()
        _polls(spec, log, rows, batch)
        # Same partition number as the input (as the Python Pipeline does), the
        # provenance as the key. The writer flushes and checks every ack before the
        # job succeeds: the whole batch is in the topic when this returns. Mode append:
        # the lab's session writes Kafka through the V2 writer (spark.session._start), which
        # refuses the default ErrorIfExists; the V1 writer accepts append too.
        (df.select(F.col("provenance").alias("key"), "value", "partition")
         .write.format("kafka").mode("append")
         .option("kafka.bootstrap.servers", spec.bootstrap)
         .option("topic", spec.target).save())
        _sends(spec, log, rows, batch)
        df.unpersist()
        after_write(batch)

    return write


# --- files: Spark's file sink ---------------------------------------------------------


def _files(spec: QuerySpec, log: OpLog, after_write: AfterWrite):
    sinks: dict[str, Any] = {}

    def write(df: DataFrame, batch: int) -> None:
        spark = df.sparkSession
        jvm = spark._jvm
        if "sink" not in sinks:
            utils = jvm.org.apache.spark.api.python.PythonUtils
            fmt = jvm.org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat()
            sinks["sink"] = jvm.org.apache.spark.sql.execution.streaming.FileStreamSink(
                spark._jsparkSession, spec.target, fmt,
                utils.toSeq(jvm.java.util.ArrayList()),
                utils.toScalaMap(jvm.java.util.HashMap()))
        df = df.persist()
        rows = df.collect()
        _polls(spec, log, rows, batch)
        before = set(file_batches(spec.target))
        sinks["sink"].addBatch(batch, df._jdf)
        if batch not in before:  # the sink skips a batch its log already holds
            _sends(spec, log, rows, batch)
        df.unpersist()
        after_write(batch)

    return write


def file_batches(folder: str | Path) -> dict[int, list[str]]:
    """The file sink's log: batch id -> the files ``_spark_metadata/N`` lists."""
    meta = Path(folder) / "_spark_metadata"
    out: dict[int, list[str]] = {}
    if not meta.is_dir():
        return out
    for path in meta.iterdir():
        if path.name.isdigit():
            lines = path.read_text().splitlines()[1:]
            out[int(path.name)] = [json.loads(line)["path"] for line in lines if line.strip()]
    return dict(sorted(out.items()))


def read_files(spark: Any, folder: str | Path, label: str = "spark") -> list[Read]:
    """The folder as Spark reads it (through ``_spark_metadata``): checker reads."""
    rows = spark.read.parquet(str(folder)).select("partition", "offset", "value").collect()
    return _in_input_order(str(folder), [(r["partition"], r["offset"], r["value"])
                                         for r in rows], label)


def _in_input_order(where: str, rows: list[tuple[int, int, str]], label: str) -> list[Read]:
    """Rows of a folder or table as checker reads: numbered in input order (partition,
    input offset), so a producer's order reads as it was; copies keep their own place."""
    rows = sorted(rows, key=lambda r: (int(r[0]), int(r[1])))
    return [Read(where, int(p), i, _vid(v), label) for i, (p, _, v) in enumerate(rows)]


def read_folder_plainly(folder: str | Path) -> list[Read]:
    """Every parquet file in the folder, as a reader that ignores ``_spark_metadata``
    (pyarrow on a glob) sees it: files of a failed attempt count too."""
    import pyarrow.parquet as pq

    rows: list[tuple[int, int, str]] = []
    for path in sorted(Path(folder).glob("part-*.parquet")):
        table = pq.read_table(path, columns=["partition", "offset", "value"]).to_pylist()
        rows.extend((r["partition"], r["offset"], r["value"]) for r in table)
    return _in_input_order(str(folder), rows, "plain")


# --- database: keyed by (query id, batch id) --------------------------------------------

_SCHEMA = """
CREATE TABLE IF NOT EXISTS batches (query_id TEXT, batch_id INTEGER,
                                    PRIMARY KEY (query_id, batch_id));
CREATE TABLE IF NOT EXISTS records (id INTEGER PRIMARY KEY, query_id TEXT,
                                    batch_id INTEGER, provenance TEXT,
                                    partition INTEGER, value TEXT);
"""


def _database(spec: QuerySpec, log: OpLog, after_write: AfterWrite):

    def write(df: DataFrame, batch: int) -> None:
        rows = df.collect()
        _polls(spec, log, rows, batch)
        qid = query_id(spec.checkpoint)
        db = sqlite3.connect(spec.target, timeout=30, isolation_level=None)
        try:
            db.executescript(_SCHEMA)
            db.execute("BEGIN IMMEDIATE")
            done = db.execute("SELECT 1 FROM batches WHERE query_id=? AND batch_id=?",
                              (qid, batch)).fetchone()
            if done is None:
                db.executemany(
                    "INSERT INTO records (query_id, batch_id, provenance, partition, value)"
                    " VALUES (?, ?, ?, ?, ?)",
                    [(qid, batch, r["provenance"], int(r["partition"]), r["value"])
                     for r in rows])
                db.execute("INSERT INTO batches VALUES (?, ?)", (qid, batch))
            db.execute("COMMIT")
        finally:
            db.close()
        if done is None:
            _sends(spec, log, rows, batch)
        after_write(batch)

    return write


def read_database(path: str | Path) -> list[Read]:
    """The database's records as checker reads (topic = the database file)."""
    db = sqlite3.connect(str(path))
    try:
        rows = db.execute("SELECT partition, provenance, value FROM records").fetchall()
    finally:
        db.close()
    return _in_input_order(str(path), [(p, int(prov.rsplit("-", 1)[1]), v)
                                       for p, prov, v in rows], "database")


# --- kafka_txn: one Kafka transaction per batch ------------------------------------------


def control_topic(target: str) -> str:
    """Where the transactional sink commits its progress (query id -> batch id)."""
    return f"{target}-progress"


def _committed_batch(bootstrap: str, topic: str, qid: str, timeout: float = 30.0) -> int:
    """The highest batch id committed for ``qid`` (read_committed), or -1: the control
    topic's one partition read to its end by the one read-back (a read that cannot get
    there raises ``ReadTimeout``: a transaction may still be open on it)."""
    from ..readers import read_records

    records = read_records(bootstrap, [topic], "read_committed", timeout, partition=0)
    return max((int(r.value) for r in records if r.key and r.key.decode() == qid and
                r.value is not None), default=-1)


def _kafka_txn(spec: QuerySpec, log: OpLog, after_write: AfterWrite):
    from confluent_kafka import Producer

    from ..clients import Recorder, config, end_transaction
    from ..history import History

    state: dict[str, Any] = {}

    def write(df: DataFrame, batch: int) -> None:
        rows = df.collect()
        _polls(spec, log, rows, batch)
        qid = query_id(spec.checkpoint)
        ctrl = control_topic(spec.target)
        if "producer" not in state:
            # One transactional.id per query: a restarted driver fences its dead
            # predecessor, and its init aborts the transaction the crash left open.
            producer = Producer(config(spec.bootstrap, **{
                "transactional.id": f"spark-{qid}", "enable.idempotence": True,
                "acks": "all", "transaction.timeout.ms": 30000}))
            producer.init_transactions(30)
            log.record(spec.process, "init_txn", "ok", detail=f"spark-{qid}")
            state["producer"] = producer
        producer = state["producer"]
        if _committed_batch(spec.bootstrap, ctrl, qid) >= batch:
            after_write(batch)  # already committed: nothing to write
            return
        txn = f"{spec.process}/batch-{batch}"
        # The Recorder records into a History of its own; copied to the log, each op
        # with its batch, once the flush has reported every send.
        history = History()
        recorder = Recorder(history, spec.process, spec.target)
        producer.begin_transaction()
        log.record(spec.process, "begin_txn", "ok", txn=txn)
        for r in rows:
            vid = _vid(r["value"])
            if vid:
                recorder.send(producer, V.parse(vid), int(r["partition"]), txn)
        producer.produce(ctrl, key=qid.encode(), value=str(batch).encode(), partition=0)
        producer.flush(30)
        for op in history.snapshot():
            log.record(op.process, op.kind, op.outcome, op.values,
                       time=history.origin + op.time, topic=op.topic,
                       partition=op.partition, offset=op.offset, txn=op.txn, error=op.error,
                       detail=f"batch {batch}")
        after_write(batch)  # a crash here leaves the transaction open
        end_transaction(producer, "commit")
        log.record(spec.process, "commit_txn", "ok", txn=txn,
                   detail=f"batch {batch} committed with its marker")

    return write


# --- downstream: deduplicate the at-least-once output -----------------------------------

ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


def deduplicate(spark: Any, bootstrap: str, source: str, target: str, checkpoint: str,
                watermark: str = "10 minutes", timeout: float = 300.0) -> None:
    """A second query: read the at-least-once output, keep the first record of each
    provenance key (``dropDuplicatesWithinWatermark``, state in RocksDB), write the
    rest to ``target``. A replayed batch's copies carry the same provenance as the
    originals, so each input record comes out once. The watermark bounds the state:
    copies further apart than ``watermark`` (by Kafka timestamp) would both pass."""
    from pyspark.sql import functions as F

    spark.conf.set("spark.sql.streaming.stateStore.providerClass", ROCKSDB)
    frame = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", source)
        .option("startingOffsets", "earliest")
        .option("kafka.isolation.level", "read_committed")
        .load()
        .select(F.col("key").cast("string").alias("key"), "value", "partition",
                "timestamp")
        .withWatermark("timestamp", watermark)
        .dropDuplicatesWithinWatermark(["key"])
        .select("key", "value", "partition")
    )
    query = (frame.writeStream.format("kafka")
             .option("kafka.bootstrap.servers", bootstrap).option("topic", target)
             .option("checkpointLocation", checkpoint)
             .queryName("deliverylab-dedup").trigger(availableNow=True).start())

    await_query(query, "the dedup query", checkpoint, timeout)


def state_rows(spark: Any, checkpoint: str) -> int:
    """Keys held in the dedup query's state store (Spark's ``statestore`` reader)."""
    return spark.read.format("statestore").load(checkpoint).count()
