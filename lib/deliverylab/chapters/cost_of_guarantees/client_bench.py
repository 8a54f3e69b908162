"""The cost of idempotence and transactions, measured with both clients side by side.

Chapter 08's quotes come from the Java producer (KIP-679: idempotence "won't have a
significant performance impact"); its measurements come from librdkafka. The two are
different implementations with different defaults, so this module measures the same
variants with each, alternating them on the same cluster:

* Java: Kafka's own ``ProducerPerformance`` tool (``kafka-producer-perf-test.sh``), from
  the pinned tools jars; its final line gives records/s and latency percentiles;
* librdkafka: :func:`.costs.throughput`, the loop chapter 08 measures with.

One more librdkafka variant tests an explanation rather than a client: librdkafka's
``max.in.flight.requests.per.connection`` defaults to 1,000,000 (Java: 5), and
idempotence caps it at 5 (librdkafka CONFIGURATION.md, ``enable.idempotence``). So the
librdkafka baseline and its idempotent producer differ in *two* things; ``acks=all,
5 in flight`` differs from the idempotent one in idempotence alone.
"""

from __future__ import annotations

import json
import re
import statistics
import subprocess
import uuid
from dataclasses import dataclass, field
from typing import Any

from ...cluster.tools import LOG_CONFIG
from ...errors import LabError, bad_value
from ...runtime import classpaths
from ...runtime.java import find_java, temp_opts

PERF_MAIN = "org.apache.kafka.tools.ProducerPerformance"
_TOTAL = re.compile(r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), "
                    r"([\d.]+) ms avg latency, ([\d.]+) ms max latency, (\d+) ms 50th, "
                    r"(\d+) ms 95th, (\d+) ms 99th")


@dataclass(frozen=True)
class BenchVariant:
    """One variant, as each client spells it (None: not measured with that client)."""

    name: str
    java: dict[str, str] | None
    librdkafka: dict[str, Any] | None
    commit_ms: int | None = None


#: The variants; "acks=all" is the baseline both ratios are taken against.
VARIANTS = (
    BenchVariant("acks=all", {"acks": "all", "enable.idempotence": "false"},
                 {"acks": "all", "enable.idempotence": False}),
    BenchVariant("acks=all, 5 in flight", None,
                 {"acks": "all", "enable.idempotence": False,
                  "max.in.flight.requests.per.connection": 5}),
    BenchVariant("idempotent", {"acks": "all", "enable.idempotence": "true"},
                 {"acks": "all", "enable.idempotence": True}),
    BenchVariant("txn 1000ms", {"acks": "all", "enable.idempotence": "true"},
                 {"acks": "all", "enable.idempotence": True}, commit_ms=1000),
)
BASELINE = "acks=all"


_METRIC = re.compile(r"^producer-metrics:([a-z-]+):\{client-id=[^}]*\}\s*:\s*([\d.Ee+-]+|NaN)\s*$",
                     re.M)


def parse_metrics(output: str) -> dict[str, float]:
    """The producer metrics ``ProducerPerformance --print-metrics`` prints at the end
    (``producer-metrics:<name>:{client-id=...} : <value>``), by name; NaN left out."""
    return {name: float(value) for name, value in _METRIC.findall(output) if value != "NaN"}


def parse_total(output: str) -> dict[str, float]:
    """The final summary line of ``ProducerPerformance``, as numbers."""
    found = _TOTAL.findall(output)
    if not found:
        raise LabError(f"ProducerPerformance printed no summary line: {output[-400:]!r}")
    n, rate, mb, avg, mx, p50, p95, p99 = found[-1]
    return {"records": int(n), "records_s": float(rate), "mb_s": float(mb),
            "avg_ms": float(avg), "max_ms": float(mx), "p50_ms": float(p50),
            "p95_ms": float(p95), "p99_ms": float(p99)}


def java_run(bootstrap: str, topic: str, variant: BenchVariant, records: int, size: int,
             linger_ms: float, batch_size: int, timeout: float = 180.0) -> dict[str, float]:
    """One ``ProducerPerformance`` run of ``variant`` (unthrottled)."""
    if variant.java is None:
        raise bad_value("variant", variant.name, "a variant with Java settings")
    props = {"bootstrap.servers": bootstrap, "linger.ms": str(int(linger_ms)),
             "batch.size": str(batch_size), **variant.java}
    args = ["--topic", topic, "--num-records", str(records), "--record-size", str(size),
            "--throughput", "-1", "--print-metrics",
            "--producer-props", *[f"{k}={v}" for k, v in props.items()]]
    if variant.commit_ms is not None:
        args += ["--transactional-id", f"perf-{uuid.uuid4().hex[:8]}",
                 "--transaction-duration-ms", str(variant.commit_ms)]
    classpath = ":".join(str(p) for p in classpaths.classpath("tools", fetch=False))
    cmd = [find_java(), "-Xmx512m", *temp_opts(), f"-Dlog4j2.configurationFile={LOG_CONFIG}",
           "-cp", classpath, PERF_MAIN, *args]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise LabError(f"ProducerPerformance ({variant.name}, {records} records) did not "
                       f"finish within {timeout:g} s") from exc
    if proc.returncode != 0:
        raise LabError(f"ProducerPerformance ({variant.name}) exited {proc.returncode}: "
                       f"{proc.stderr.strip()[-400:]}")
    metrics = parse_metrics(proc.stdout)
    return {**parse_total(proc.stdout),
            "records_per_request": metrics.get("records-per-request-avg")}


def produce_requests_per(stats: list[str]) -> float | None:
    """Records per Produce request of one librdkafka run, from its last statistics
    report (librdkafka's STATISTICS.md): messages transmitted (``txmsgs``) over Produce
    requests sent (``brokers.<name>.req.Produce``), both counted up to the same moment.
    None without a report or a request."""
    if not stats:
        return None
    last = json.loads(stats[-1])
    brokers = last.get("brokers", {}).values()
    produce = sum(b.get("req", {}).get("Produce", 0) for b in brokers if b.get("nodeid", -1) >= 0)
    return last.get("txmsgs", 0) / produce if produce else None


@dataclass
class SideBySide:
    """Medians per (client, variant) over the repetitions, and the raw runs."""

    runs: list[dict[str, Any]] = field(default_factory=list)

    def rows(self) -> list[dict[str, Any]]:
        """One row per variant: each client's median records/s and ratio to acks=all."""
        med: dict[tuple[str, str], float] = {}
        for client in ("java", "librdkafka"):
            for v in VARIANTS:
                xs = [r["records_s"] for r in self.runs
                      if r["client"] == client and r["variant"] == v.name]
                if xs:
                    med[(client, v.name)] = statistics.median(xs)
        out = []
        for v in VARIANTS:
            row: dict[str, Any] = {"variant": v.name}
            for client in ("java", "librdkafka"):
                value = med.get((client, v.name))
                base = med.get((client, BASELINE))
                row[f"{client} records/s"] = value
                row[f"{client} ratio"] = (value / base if value is not None and base
                                          else None)
                per = [r["records_per_request"] for r in self.runs
                       if r["client"] == client and r["variant"] == v.name
                       and r.get("records_per_request") is not None]
                row[f"{client} records/request"] = (round(statistics.median(per), 1) if per
                                                    else None)
            out.append(row)
        return out

    def ratio(self, client: str, variant: str, over: str = BASELINE) -> float:
        """Median records/s of ``variant`` over ``over``, for one client."""
        def med(name: str) -> float:
            xs = [r["records_s"] for r in self.runs
                  if r["client"] == client and r["variant"] == name]
            if not xs:
                raise bad_value("variant", name, f"a variant measured with {client}")
            return statistics.median(xs)
        return med(variant) / med(over)


def side_by_side(cluster: Any, size: int = 1024, records: int = 60_000,
                 seconds: float = 1.5, reps: int = 3, linger_ms: float = 5.0,
                 batch_size: int = 1_000_000, partitions: int = 3) -> SideBySide:
    """Alternate every variant with both clients ``reps`` times on one topic.

    Java runs ``records`` records per run (the tool counts, it does not time; a run of
    well under a second measures the JVM warming up more than the producer); the
    librdkafka loop runs for ``seconds``. Rates, not counts, are compared.
    """
    from ...clients import bootstrap_of
    from ...modes import AT_LEAST_ONCE, IDEMPOTENT, TRANSACTIONAL
    from .costs import Variant, throughput

    if not (isinstance(reps, int) and reps >= 1):
        raise bad_value("reps", reps, "a whole number >= 1")
    bootstrap = bootstrap_of(cluster, direct=True)
    topic = cluster.create_topic(f"bench-clients-{uuid.uuid4().hex[:6]}",
                                 partitions=partitions)
    result = SideBySide()
    for rep in range(reps):
        # Every other repetition runs the variants in reverse: a variant's place in the
        # round (right after a JVM exit, or after the heaviest run) must not favour it.
        for v in VARIANTS if rep % 2 == 0 else VARIANTS[::-1]:
            if v.java is not None:
                got = java_run(bootstrap, topic, v, records, size, linger_ms, batch_size)
                result.runs.append({"client": "java", "variant": v.name, "rep": rep, **got})
            if v.librdkafka is not None:
                mode = (TRANSACTIONAL if v.commit_ms else
                        IDEMPOTENT if v.librdkafka["enable.idempotence"] else AT_LEAST_ONCE)
                lv = Variant(v.name, mode, dict(v.librdkafka),
                             float(v.commit_ms) if v.commit_ms else None)
                stats: list[str] = []
                n, secs = throughput(bootstrap, topic, partitions, lv, size, seconds,
                                     settings={"linger.ms": linger_ms,
                                               "batch.size": batch_size,
                                               "statistics.interval.ms": 500,
                                               "stats_cb": stats.append})
                result.runs.append({"client": "librdkafka", "variant": v.name, "rep": rep,
                                    "records": n, "records_s": n / secs,
                                    "records_per_request": produce_requests_per(stats)})
    return result
