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

import atexit
import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from confluent_kafka.admin import AdminClient

from . import clients, jars, readers
from .errors import JarsUnavailable, JavaNotFound, bad_value
from .history import History, Op, Read
from .java import find_java, java_home, record_archive

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

ISOLATIONS: tuple[str, ...] = ("read_committed", "read_uncommitted")
MASTER_ENV = "DELIVERYLAB_SPARK_MASTER"
DEFAULT_MASTER = "local[2]"

#: The connector's entry point: loadable iff ``format("kafka")`` will work.
_KAFKA_PROVIDER = "org.apache.spark.sql.kafka010.KafkaSourceProvider"

#: Spark's ``spark.sql.sources.useV1SourceList`` default without "kafka" (see _start).
_V1_LIST = "spark.sql.sources.useV1SourceList"
_V1_SOURCES = "avro,csv,json,orc,parquet,text"

#: A read of at least this many records is split so every core gets a share (_raw).
_SPLIT_FROM = 100_000

#: Kafka's fetch.max.wait.ms for the Inspector's batch reads (see _raw).
_FETCH_WAIT_MS = 10

#: Offset kinds in :meth:`Inspector.offset_gaps`.
MARKER, ABORTED, PENDING = "marker", "aborted", "pending"

_session: SparkSession | None = None
_session_lock = threading.Lock()


def _say(message: str) -> None:
    print(f"[inspector] {message}", flush=True)


# --- the one SparkSession -----------------------------------------------------------


def _alive(spark: SparkSession | None) -> bool:
    """A session is usable until someone calls ``stop()`` on it (ours or their own)."""
    if spark is None:
        return False
    from pyspark import SparkContext

    return SparkContext._active_spark_context is spark.sparkContext and (
        spark.sparkContext._jsc is not None
    )


def _connector_jars() -> list[Path]:
    """The pinned connector jars; fetched (once, online) only if the cache lacks them."""
    try:
        return jars.spark_connector_jars(fetch=False)
    except JarsUnavailable:
        _say("Spark's Kafka connector is not cached yet: downloading its pinned jars "
             "(first time only, needs the network)...")
        return jars.spark_connector_jars(fetch=True)


def _jdbc_jars() -> list[Path]:
    """The pinned JDBC drivers (SQLite, PostgreSQL): Spark's JDBC source reads chapter
    06's database tables with them. On the classpath from the start, because a running
    JVM cannot gain a driver later; fetched once if the cache lacks them."""
    try:
        return jars.classpath("jdbc", fetch=False)
    except JarsUnavailable:
        _say("the JDBC drivers are not cached yet: downloading their pinned jars "
             "(first time only, needs the network)...")
        return jars.classpath("jdbc", fetch=True)


# Spark's driver log, cut to errors: its start-up warnings (hostname, native Hadoop,
# "default log4j profile") are noise in a notebook, while real errors must stay visible.
_LOG4J2 = """\
status = error
appender.err.type = Console
appender.err.name = ERR
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = [spark] %-5p %m (%c{1})%n
rootLogger.level = error
rootLogger.appenderRef.err.ref = ERR
"""


def _log_config() -> Path:
    path = jars.cache_dir() / "inspector-log4j2.properties"
    if not path.exists() or path.read_text() != _LOG4J2:
        path.write_text(_LOG4J2)
    return path


#: A Spark class archive of another key unused this long is removed when one is recorded
#: (each venv records its own: ~150 MB each).
ARCHIVE_MAX_AGE_S = 7 * 24 * 3600


def class_archive() -> Path:
    """Where the Spark driver's class-data-sharing archive lives (``make setup``).

    The driver JVM loads ~20k classes at start; mapped from this archive the session
    starts in ~3.1 s instead of ~5.1 s (2 cores, medians of 5 fresh processes).
    Its name carries Spark's version and a key of what the JVM checks before it maps an
    archive: the driver's classpath (pyspark's jars, their paths, sizes and modification
    times: another venv, or a reinstall, changes them) and the Java that runs it. A JVM
    handed an archive that does not match ignores it (-Xshare:auto) and starts ~2 s
    slower, so each venv gets its own, recorded by its ``make setup``.
    """
    import hashlib

    import pyspark

    key = hashlib.sha1()
    try:
        key.update(str(Path(java_home()).resolve()).encode())
    except JavaNotFound:  # the session will say so; any key will do
        key.update(b"no-java")
    for jar in sorted((Path(pyspark.__file__).parent / "jars").glob("*.jar")):
        st = jar.stat()
        key.update(f"{jar}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return jars.cache_dir() / f"spark-{pyspark.__version__}-{key.hexdigest()[:10]}-driver.jsa"


def _prune_archives(keep: Path, max_age_s: float = ARCHIVE_MAX_AGE_S) -> None:
    """Remove Spark class archives of other keys not modified for ``max_age_s``."""
    for old in keep.parent.glob("spark-*-driver.jsa"):
        try:
            if old != keep and time.time() - old.stat().st_mtime > max_age_s:
                old.unlink()
        except OSError:
            pass


def _driver_java_options(record: Path | None = None) -> str:
    """spark.driver.extraJavaOptions: our log config, plus the class archive when one
    exists (or, with ``record``, the file to record one into at the JVM's exit)."""
    opts = [f"-Dlog4j.configurationFile={_log_config()}"]
    if record is not None:
        opts.append(f"-XX:ArchiveClassesAtExit={record}")
    elif (archive := class_archive()).exists():
        opts += [f"-XX:SharedArchiveFile={archive}", "-Xshare:auto"]
    return " ".join(opts)


def record_class_archive(bootstrap: str, final: Path | None = None) -> Path | None:
    """Record :func:`class_archive` (or ``final``) in a fresh Python process (one driver
    JVM per process): start the session, read a few records from ``bootstrap``, stop,
    and wait for the JVM to exit, when it writes the archive. Written beside its final
    name and renamed: a half-written archive is never used. None if none was written."""
    import sys

    from .serviceprocs import child_env

    final = final or class_archive()
    code = "import sys; from deliverylab import inspector; inspector._record(*sys.argv[1:])"
    got = record_archive(final, lambda partial: [sys.executable, "-c", code, bootstrap,
                                                 str(partial)], timeout=300, env=child_env())
    if got is not None:
        _prune_archives(got)
    return got


def _record(bootstrap: str, partial: str) -> None:
    """The child of :func:`record_class_archive`."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import NewTopic
    from pyspark import SparkContext

    topic = "deliverylab-class-archive"
    admin = AdminClient(clients.config(bootstrap))
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    producer = Producer(clients.config(bootstrap))
    for i in range(100):
        producer.produce(topic, str(i).encode())
    producer.flush(30)
    spark = _start("local[2]", {"spark.driver.extraJavaOptions":
                                _driver_java_options(record=Path(partial))})
    (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
     .option("subscribe", topic).load().count())
    spark.stop()
    # The gateway JVM exits when its stdin closes, and writes the archive as it exits.
    proc = SparkContext._gateway.proc
    proc.stdin.close()
    proc.wait(timeout=240)


def jvm_log() -> Path:
    """Where this Python process's Spark JVM writes its own output (see _jvm_output)."""
    return Path(tempfile.gettempdir()) / f"deliverylab-spark-{os.getpid()}.log"


@contextmanager
def _jvm_output(log: Path) -> Iterator[Path]:
    """Point file descriptors 1 and 2 at ``log`` while pyspark launches its JVM.

    Why: the gateway JVM inherits them, and the kernel copies whatever reaches them into
    the student's cell as red stderr -- "WARNING: Using incubator modules:
    jdk.incubator.vector", "Setting default log level to WARN", none of which a student
    can act on. Launched with the log as its fds, the JVM writes there for its whole
    life; ours are restored as soon as it is up. Python's own ``print`` does not go
    through these fds in a kernel, so the lab's messages still reach the cell.
    """
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    target = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    saved = [os.dup(1), os.dup(2)]
    try:
        os.dup2(target, 1)
        os.dup2(target, 2)
        yield log
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, target):
            os.close(fd)


def _has_connector(spark: SparkSession) -> bool:
    """Can this session's JVM load the Kafka source? (A session someone else started
    without the connector cannot gain it: Spark fixes its classpath at launch.)"""
    try:
        loader = spark._jvm.org.apache.spark.util.Utils.getContextOrSparkClassLoader()
        spark._jvm.java.lang.Class.forName(_KAFKA_PROVIDER, False, loader)
        return True
    except Exception:  # py4j wraps ClassNotFoundException
        return False


def session(master: str | None = None, conf: dict[str, str] | None = None) -> SparkSession:
    """The kernel's SparkSession with Kafka's connector, started on first use.

    ``master`` (else ``$DELIVERYLAB_SPARK_MASTER``, else ``local[2]``) only matters for
    the first call: a running session is reused, because a second JVM per kernel would
    double the memory and Spark allows one SparkContext per process anyway. ``conf``
    adds Spark settings (e.g. ``{"spark.driver.memory": "4g"}``) for that first start.

    The connector jars come from the lab's cache through ``spark.jars`` (never
    ``spark.jars.packages``), so a session starts offline once ``make setup`` has run.
    """
    global _session
    with _session_lock:
        wanted = master or os.environ.get(MASTER_ENV) or DEFAULT_MASTER
        if _alive(_session):
            running = _session.sparkContext.master
            if master and master != running:
                _say(f"Spark is already running on {running}; reusing it (call "
                     f"Inspector.stop() first to switch to {master})")
            return _session
        _session = _start(wanted, conf or {})
        return _session


def _start(master: str, conf: dict[str, str]) -> SparkSession:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    jars = _connector_jars() + _jdbc_jars()
    connector = next(j for j in jars if j.name.startswith("spark-sql-kafka-0-10"))
    foreign = SparkContext._active_spark_context
    if foreign is not None:
        # getOrCreate() would silently return it, ignoring spark.jars: check, don't hope.
        spark = SparkSession(foreign)
        if not _has_connector(spark):
            raise JarsUnavailable(
                f"a SparkSession without Kafka's connector is already running in this "
                f"Python process (master {foreign.master}); Spark cannot add jars to a "
                "running JVM. Call spark.stop() on it, or restart the kernel, and create "
                "the Inspector first")
        # Its settings are its owner's: useV1SourceList is left as they have it (our
        # reads are then V1 scans, slower, same records).
        _say(f"reusing the SparkSession already running on {foreign.master}")
        return spark

    # Spark 4 needs Java 17+, and its launcher reads JAVA_HOME, not PATH.
    home = java_home()
    if os.environ.get("JAVA_HOME") != home:
        if os.environ.get("JAVA_HOME"):
            _say(f"JAVA_HOME={os.environ['JAVA_HOME']} is not Java 17+; using {home}")
        os.environ["JAVA_HOME"] = home
    find_java()  # raises JavaNotFound with a one-line fix

    _say(f"starting Spark ({master}) with Kafka connector {connector.name} "
         "- this takes 10-30 seconds...")
    t0 = time.monotonic()
    builder = (
        SparkSession.builder.master(master)
        .appName("deliverylab-inspector")
        .config("spark.jars", ",".join(str(j) for j in jars))
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")  # progress bars garble notebooks
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        # The class archive (if `make setup` recorded one) maps ~2 s of class loading.
        .config("spark.driver.extraJavaOptions", _driver_java_options())
        # Batch reads of Kafka through the DataSource V2 scan (KafkaScan): the V1
        # relation, Spark's default for "kafka", turns every record into an external Row
        # and back (`internalCreateDataFrame(...).rdd`), a per-record cost the V2 reader
        # does not pay (~0.5 s of the duplicates view over 1M records). Session-wide, so
        # batch *writes* to Kafka take the V2 writer too, which refuses the default save
        # mode (ErrorIfExists): streaming_sinks' Kafka sink says mode("append").
        # Streaming reads and writes are V2 whatever this list says.
        .config(_V1_LIST, _V1_SOURCES)
    )
    if master.startswith("local"):
        # The driver talks only to itself; the hostname may not resolve (or resolve
        # to a public address), so pin everything to loopback. A real cluster's
        # executors must reach the driver, so there we leave Spark's defaults.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        builder = (
            builder.config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.sql.shuffle.partitions", "4")
        )
    for key, value in conf.items():
        builder = builder.config(key, value)
    # A JVM launched earlier in this process (a session started, then stopped) keeps
    # the classpath it was launched with: spark.jars cannot reach its driver any more.
    relaunch = SparkContext._gateway is not None
    with _jvm_output(jvm_log()) as log:
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    if not _has_connector(spark):
        spark.stop()
        if relaunch:
            raise JarsUnavailable(
                "this Python process already ran a SparkSession without Kafka's connector, "
                "and its JVM cannot gain the connector now: restart the kernel and create "
                "the Inspector before any other SparkSession")
        raise JarsUnavailable(
            f"Spark started but cannot load Kafka's connector ({_KAFKA_PROVIDER}) from "
            f"{connector}: the cached jar may be damaged; delete {connector.parent} and "
            "run `make setup` again")
    _say(f"Spark {spark.version} ready in {time.monotonic() - t0:.1f} s "
         f"(its JVM's messages: {log})")
    return spark


def stop() -> None:
    """Stop the kernel's SparkSession (the next Inspector call starts a new one)."""
    global _session
    with _session_lock:
        if _alive(_session):
            _session.stop()
        _session = None


def _stop_at_exit() -> None:
    try:
        stop()
    except Exception:  # the JVM may already be gone; exiting must not print tracebacks
        pass


# On Unix pyspark's gateway JVM exits by itself when its Python parent dies, even by
# SIGKILL (it exits on EOF of its stdin, a pipe from us); stopping explicitly at exit
# also removes Spark's temporary directories.
atexit.register(_stop_at_exit)


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
        bootstrap = cluster
        if not isinstance(cluster, str):
            for attr in ("direct_bootstrap_servers", "bootstrap_servers"):
                found = getattr(cluster, attr, None)
                found = found() if callable(found) else found
                if isinstance(found, str) and found:
                    bootstrap = found
                    break
        if not isinstance(bootstrap, str) or not bootstrap.strip():
            raise bad_value("cluster", cluster,
                            "a bootstrap address 'host:port[,host:port]' or an object "
                            "with .bootstrap_servers (e.g. a Cluster)")
        self.bootstrap_servers = bootstrap.strip()
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
        ``labs/02_at_least_once.ipynb``."""
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
