"""The kernel's one SparkSession: started once (seconds and a JVM), with the pinned Kafka
connector and JDBC drivers on its classpath, shared by every Inspector and the Spark
pipeline, stopped when Python exits. Also the driver's class archive (``make setup``
records one; a session started over it boots faster), keyed by the driver's classpath
and Java so an archive of another venv is never used.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from confluent_kafka.admin import AdminClient

from .. import clients
from ..errors import JarsUnavailable, JavaNotFound
from ..process.children import child_env
from ..runtime import classpaths, jars
from ..runtime.java import find_java, java_home, record_archive, temp_opts
from ..runtime.profile import current as current_profile

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

MASTER_ENV = "DELIVERYLAB_SPARK_MASTER"
DEFAULT_MASTER = "local[2]"

#: The connector's entry point: loadable iff ``format("kafka")`` will work.
_KAFKA_PROVIDER = "org.apache.spark.sql.kafka010.KafkaSourceProvider"

#: Spark's ``spark.sql.sources.useV1SourceList`` default without "kafka" (see _start).
_V1_LIST = "spark.sql.sources.useV1SourceList"
_V1_SOURCES = "avro,csv,json,orc,parquet,text"

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
        return classpaths.spark_connector_jars(fetch=False)
    except JarsUnavailable:
        _say("Spark's Kafka connector is not cached yet: downloading its pinned jars "
             "(first time only, needs the network)...")
        return classpaths.spark_connector_jars(fetch=True)


def _jdbc_jars() -> list[Path]:
    """The pinned JDBC drivers (SQLite, PostgreSQL): Spark's JDBC source reads chapter
    06's database tables with them. On the classpath from the start, because a running
    JVM cannot gain a driver later; fetched once if the cache lacks them."""
    try:
        return classpaths.classpath("jdbc", fetch=False)
    except JarsUnavailable:
        _say("the JDBC drivers are not cached yet: downloading their pinned jars "
             "(first time only, needs the network)...")
        return classpaths.classpath("jdbc", fetch=True)


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


#: JVM options of every Spark driver the lab starts (the kernel's, the grader's and
#: chapter 05's child drivers), in every profile: the C1 compiler only and the serial
#: collector. The lab's queries read teaching-sized topics (hundreds to thousands of
#: records), so a driver spends most of its CPU compiling with C2 and collecting with G1's
#: threads, not querying. Measured on 2 cores, alternating runs: a kernel-like session
#: (start, then 16 small views over 5,000 records) took 28.2-28.8 CPU-s and 21.2-21.7 s
#: with these against 47.7-50.4 CPU-s and 27.2-27.7 s without; exercise 05's grade at one crash
#: point (3 child drivers and a cluster) 27-30 CPU-s against 47-56, and ran faster.
#: A caller's own ``spark.driver.extraJavaOptions`` replaces all of the lab's.
DRIVER_JVM_OPTS = ["-Xms64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                   "-XX:ReservedCodeCacheSize=64m"]


def _driver_java_options(record: Path | None = None) -> str:
    """spark.driver.extraJavaOptions: our log config, plus the class archive when one
    exists (or, with ``record``, the file to record one into at the JVM's exit), then
    :data:`DRIVER_JVM_OPTS` (every profile's: a profile caps the driver's memory with
    ``spark_conf``)."""
    opts = [f"-Dlog4j.configurationFile={_log_config()}", *temp_opts(temp_dir())]
    if record is not None:
        opts.append(f"-XX:ArchiveClassesAtExit={record}")
    else:
        if (archive := class_archive()).exists():
            opts += [f"-XX:SharedArchiveFile={archive}", "-Xshare:auto"]
        # The archive is recorded by the lab's own JVM without these (its classes map
        # under either collector).
        opts += DRIVER_JVM_OPTS
    return " ".join(opts)


def record_class_archive(bootstrap: str, final: Path | None = None) -> Path | None:
    """Record :func:`class_archive` (or ``final``) in a fresh Python process (one driver
    JVM per process): start the session, read a few records from ``bootstrap``, stop,
    and wait for the JVM to exit, when it writes the archive. Written beside its final
    name and renamed: a half-written archive is never used. None if none was written."""
    import sys


    final = final or class_archive()
    code = "import sys; from deliverylab.spark import session; session._record(*sys.argv[1:])"
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


def temp_dir() -> Path:
    """This Python process's Spark folder in ``$TMPDIR`` (a student's own in a
    classroom): ``spark.local.dir`` (Spark's ``spark-*``, ``blockmgr-*``) and the driver's
    ``java.io.tmpdir`` (native library copies), removed when Python exits, or by the
    next session of this user if Python was killed (:func:`_prune_stale`)."""
    return Path(tempfile.gettempdir()) / f"deliverylab-spark-{os.getpid()}"


def driver_env(home: Path) -> dict[str, str]:
    """The environment of a child Spark driver whose temporary files live in ``home``.

    A driver the lab SIGKILLs (``kill_driver``, the grader's crashes) runs no exit hook:
    its Spark folder and JVM log stayed in the shared temporary directory until the
    next session swept them. With ``TMPDIR`` inside a folder its owner removes (the
    pipeline's work folder, the grade run's), nothing of it outlives the owner.
    """
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    return {**child_env(), "TMPDIR": str(home)}


def _prune_stale() -> None:
    """Remove Spark folders and JVM logs of this user's Python processes that are gone
    (a SIGKILLed kernel runs no ``atexit``)."""
    import shutil

    for path in Path(tempfile.gettempdir()).glob("deliverylab-spark-*"):
        pid = path.name.removeprefix("deliverylab-spark-").removesuffix(".log")
        try:
            if not pid.isdigit() or path.lstat().st_uid != os.getuid() or _pid_alive(int(pid)):
                continue
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
        except OSError:
            continue


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


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

    # Spark's launcher is a JVM of its own: no perf data in /tmp for it either.
    launcher = os.environ.get("SPARK_LAUNCHER_OPTS", "")
    if "-XX:-UsePerfData" not in launcher:
        os.environ["SPARK_LAUNCHER_OPTS"] = f"{launcher} -XX:-UsePerfData".strip()
    _prune_stale()
    tmp = temp_dir()
    tmp.mkdir(mode=0o700, exist_ok=True)
    # Executors on this host (a lab standalone) share the folder; elsewhere only perf data.
    local_host = master.startswith(("local", "spark://127.0.0.1", "spark://localhost"))
    executor_opts = temp_opts(tmp) if local_host else ["-XX:-UsePerfData"]

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
        .config("spark.local.dir", str(tmp))
        .config("spark.executor.extraJavaOptions", " ".join(executor_opts))
        # Batch reads of Kafka through the DataSource V2 scan (KafkaScan): the V1
        # relation, Spark's default for "kafka", turns every record into an external Row
        # and back (`internalCreateDataFrame(...).rdd`), a per-record cost the V2 reader
        # does not pay (~0.5 s of the duplicates view over 1M records). Session-wide, so
        # batch *writes* to Kafka take the V2 writer too, which refuses the default save
        # mode (ErrorIfExists): spark/sinks.py's Kafka sink says mode("append").
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
    # The student profile's Spark settings ($DELIVERYLAB_PROFILE), the caller's on top.
    for key, value in {**current_profile().spark_conf, **conf}.items():
        builder = builder.config(key, value)
    # A JVM launched earlier in this process (a session started, then stopped) keeps
    # the classpath it was launched with: spark.jars cannot reach its driver any more.
    relaunch = SparkContext._gateway is not None
    with _jvm_output(jvm_log()) as log:
        try:
            spark = builder.getOrCreate()
        except Exception as exc:  # the JVM's reason is in its log, not on our stderr
            exc.add_note(f"the Spark JVM's own output ({log}), last lines:\n"
                         + _tail(log))
            raise
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


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _stop_at_exit() -> None:
    try:
        stop()
    except Exception:  # the JVM may already be gone; exiting must not print tracebacks
        pass
    jvm_log().unlink(missing_ok=True)  # the lab leaves nothing in the temporary folder
    shutil.rmtree(temp_dir(), ignore_errors=True)


# On Unix pyspark's gateway JVM exits by itself when its Python parent dies, even by
# SIGKILL (it exits on EOF of its stdin, a pipe from us); stopping explicitly at exit
# also removes Spark's temporary directories.
atexit.register(_stop_at_exit)
