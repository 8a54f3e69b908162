"""Kafka's own command-line tools, run from the pinned jars: no Kafka download needed.

Why: the lab's Python views (Inspector, checker) are the lesson's lens, but a student
should also see a cluster the way an operator does, with the tools every Kafka guide
uses. They ship here as small launchers over the ``tools`` jar set, so
``kafka-topics --bootstrap-server ... --list`` works in a JupyterLab terminal exactly
as ``bin/kafka-topics.sh`` does in a Kafka download.

    kafka-topics --bootstrap-server 127.0.0.1:PORT --list     # console scripts in .venv/bin
    python -m deliverylab.cluster.tools kafka-topics --bootstrap-server 127.0.0.1:PORT --list

From a notebook, ``cluster.tool_command("kafka-topics", "--list")`` prints the line to
type (bootstrap filled in) and ``cluster.tool("kafka-topics", "--list")`` runs it.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from ..errors import LabError, bad_value, command_failed
from ..runtime import classpaths, jars
from ..runtime.java import find_java, record_archive, temp_opts

#: name -> (jar set, Java main class, takes --bootstrap-server). Main classes checked
#: against the 4.1.1 jars (kafka-dump-log is still the Scala one, in the broker jar).
TOOLS: dict[str, tuple[str, str, bool]] = {
    "kafka-topics": ("tools", "org.apache.kafka.tools.TopicCommand", True),
    "kafka-console-consumer": ("tools", "org.apache.kafka.tools.consumer.ConsoleConsumer",
                               True),
    "kafka-console-producer": ("tools", "org.apache.kafka.tools.ConsoleProducer", True),
    "kafka-consumer-groups": ("tools",
                              "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
                              True),
    "kafka-transactions": ("tools", "org.apache.kafka.tools.TransactionsCommand", True),
    "kafka-get-offsets": ("tools", "org.apache.kafka.tools.GetOffsetShell", True),
    "kafka-features": ("tools", "org.apache.kafka.tools.FeatureCommand", True),
    "kafka-dump-log": ("kafka", "kafka.tools.DumpLogSegments", False),
}
# A tool runs for seconds: optimise for start-up, keep the heap small beside brokers.
# The JVM's own warnings (e.g. a class archive it cannot map) go to stderr, not into the
# standard output the lab parses.
JVM_OPTS = ["-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            "-Djava.awt.headless=true", "-Xlog:disable", "-Xlog:all=warning:stderr"]
LOG_CONFIG = Path(__file__).parents[1] / "resources" / "tools-log4j2.properties"


def _spec(name: str) -> tuple[str, str, bool]:
    if name not in TOOLS:
        raise bad_value("tool", name, f"one of {', '.join(TOOLS)}")
    return TOOLS[name]


def with_bootstrap(name: str, args: tuple[str, ...] | list[str],
                   bootstrap: str | None) -> list[str]:
    """``args`` with ``--bootstrap-server`` first, if the tool takes one and it is missing."""
    takes = _spec(name)[2]
    if bootstrap and takes and "--bootstrap-server" not in args:
        return ["--bootstrap-server", bootstrap, *args]
    return list(args)


def class_archive() -> Path:
    """Where the ``tools`` jar set's class-data-sharing archive lives (``make setup``).

    A tool runs for about a second, most of it loading the admin client's classes:
    mapped from an archive, ``kafka-transactions list`` takes 0.71 s instead of 1.08 s
    (median of 5, one broker). Named after the jar set, so a new pin records a new one;
    a JVM handed an archive of other jars ignores it without a word.
    """
    return jars.cache_dir() / f"{jars.COMPONENTS['tools'].dir}.jsa"


def java_command(name: str, *args: str, fetch: bool = True,
                 jvm_opts: tuple[str, ...] = (), shared: bool = True) -> list[str]:
    """The full ``java ... MainClass args`` of a tool (its jars checked first); with
    ``shared``, mapping :func:`class_archive` when there is one."""
    component, main, _ = _spec(name)
    return _java(component, main, args, fetch=fetch, jvm_opts=jvm_opts, shared=shared)


def _java(component: str, main: str, args: tuple[str, ...] | list[str], *,
          fetch: bool = True, jvm_opts: tuple[str, ...] = (), shared: bool = True
          ) -> list[str]:
    """``java`` with the tools' options (:data:`JVM_OPTS`, :func:`temp_opts`, their log
    config) running ``main`` from the ``component`` jar set."""
    classpath = os.pathsep.join(str(p) for p in classpaths.classpath(component, fetch=fetch))
    archive = class_archive()
    shared_opts = ([f"-XX:SharedArchiveFile={archive}"]
                   if shared and component == "tools" and archive.exists() else [])
    return [find_java(), *JVM_OPTS, *temp_opts(), *shared_opts, *jvm_opts,
            f"-Dlog4j2.configurationFile={LOG_CONFIG}", "-cp", classpath, main, *args]


def producer_perf_command(bootstrap: str, topic: str, client_id: str, records: int,
                          rate: float, transaction_ms: int, request_timeout_ms: int
                          ) -> list[str]:
    """``java ... ProducerPerformance ...`` (Kafka's Java producer, chapter 09) writing
    ``records`` in transactions of ``transaction_ms``: a tools JVM like the others (it
    once had its own copy of the options, without :func:`temp_opts`, and left
    ``/tmp/hsperfdata_<user>`` behind). Without the tools' class archive, as before."""
    return _java("tools", "org.apache.kafka.tools.ProducerPerformance", [
        "--topic", topic, "--num-records", str(records), "--throughput", str(rate),
        "--record-size", "16", "--transactional-id", f"tx-{client_id}",
        "--transaction-duration-ms", str(transaction_ms), "--producer-props",
        f"bootstrap.servers={bootstrap}", f"client.id={client_id}",
        f"request.timeout.ms={request_timeout_ms}", "delivery.timeout.ms=30000"],
        shared=False)


def record_class_archive(bootstrap: str, final: Path | None = None) -> Path | None:
    """Record :func:`class_archive` (or ``final``) from one ``kafka-transactions list``
    against a running broker (the admin client's classes are what every tool loads).
    Written beside its final name and renamed: a half-written archive is never used.
    None if the JVM wrote none (not fatal: tools just start slower)."""
    return record_archive(final or class_archive(), lambda partial: java_command(
        "kafka-transactions", "--bootstrap-server", bootstrap, "list",
        jvm_opts=(f"-XX:ArchiveClassesAtExit={partial}",), shared=False), timeout=120)


def launcher(name: str) -> list[str]:
    """What a person types: the console script if installed beside this Python, else
    ``python -m deliverylab.cluster.tools NAME``."""
    _spec(name)
    script = Path(sys.executable).parent / name
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", "deliverylab.cluster.tools", name]


def command_line(name: str, *args: str, bootstrap: str | None = None) -> str:
    """The shell line to type for a tool, ``--bootstrap-server`` filled in."""
    return shlex.join([*launcher(name), *with_bootstrap(name, args, bootstrap)])


def run(name: str, *args: str, bootstrap: str | None = None, timeout: float = 120.0) -> str:
    """Run a tool to completion and return its standard output.

    Raises ``LabError`` with the tool's last error line when it exits non-zero (Kafka's
    tools print the reason last), so a notebook cell shows one readable line.
    """
    cmd = java_command(name, *with_bootstrap(name, args, bootstrap))
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        raise LabError(f"{name} did not finish within {timeout:.0f}s (a console consumer "
                       "needs --max-messages or --timeout-ms to stop): "
                       f"{command_line(name, *args, bootstrap=bootstrap)}") from exc
    if done.returncode != 0:
        lines = [ln for ln in (done.stderr + done.stdout).strip().splitlines() if ln.strip()]
        raise LabError(f"{name} exited {done.returncode}: "
                       f"{lines[-1] if lines else 'no output'} (command: "
                       f"{command_line(name, *args, bootstrap=bootstrap)})")
    return done.stdout


def feature_level(cluster: Any, feature: str) -> int:
    """The cluster's finalized level of a metadata ``feature``, as ``kafka-features
    describe`` reports it (e.g. ``transaction.version``: 2 on a new 4.1 cluster, KIP-890
    part 2; ``eligible.leader.replicas.version``: chapter 01, KIP-966).

    Here, beside the tools, because it is machinery two chapters read (01 its ELR level,
    09 its transaction version): a chapter's kit imports it, and a notebook reaches it as
    ``dl.feature_level``. ``cluster`` is anything with ``tool(name, *args)``
    (:meth:`~deliverylab.cluster.Cluster.tool`)."""
    out = cluster.tool("kafka-features", "describe")
    found = re.search(rf"Feature:\s*{re.escape(feature)}\s.*?FinalizedVersionLevel:\s*(\d+)",
                      out)
    if found is None:
        raise LabError(f"kafka-features describe did not list {feature}: {out!r}")
    return int(found.group(1))


def main(argv: list[str] | None = None) -> int:
    """``python -m deliverylab.cluster.tools NAME ARGS...``: become the tool's JVM (exec), so
    Ctrl-C, standard input and the exit code are the tool's own."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m deliverylab.cluster.tools NAME [ARGS...]\ntools: "
              + ", ".join(TOOLS), file=sys.stderr)
        return 0 if argv else 2
    try:
        cmd = java_command(argv[0], *argv[1:])
    except LabError as exc:
        return command_failed(argv[0], exc)
    sys.stdout.flush()
    os.execv(cmd[0], cmd)
    return 1  # not reached


def _entry(name: str):
    def entry() -> int:
        return main([name, *sys.argv[1:]])

    entry.__name__ = name.replace("-", "_")
    entry.__doc__ = f"Console script ``{name}`` (see pyproject.toml)."
    return entry


kafka_topics = _entry("kafka-topics")
kafka_console_consumer = _entry("kafka-console-consumer")
kafka_console_producer = _entry("kafka-console-producer")
kafka_consumer_groups = _entry("kafka-consumer-groups")
kafka_transactions = _entry("kafka-transactions")
kafka_get_offsets = _entry("kafka-get-offsets")
kafka_features = _entry("kafka-features")
kafka_dump_log = _entry("kafka-dump-log")

if __name__ == "__main__":
    sys.exit(main())
