"""What does Spark cost, and what does it buy, over the Python checker? Figures, not tests.

Run: ``PYTHONPATH=lib python bench/inspector.py [--records 1000000] [--before]``

The approach, chosen to be fair to both sides:

- One 1-broker cluster, one topic of 3 partitions. ``--records`` unique values are
  produced with a fast confluent producer (lz4, linger, big batches), every send recorded
  in a real History by its delivery callback; then every ``--every``-th value is sent a
  second time, so both sides have real duplicates to find. The producer is idempotent:
  on a loaded machine a plain one retries and reorders, and the data set should hold
  only the anomalies it was built with.
- Spark is timed on what a chapter does: start the session, compute the duplicate view
  and the History join (executed in full with Spark's ``noop`` sink, which runs every
  stage but collects nothing), once cold and once warm. The History join is timed from
  the saved JSON Lines file and from the History in memory.
- The Python checker needs the read-back as ``Read`` objects. Two ways to get it are
  timed separately -- the checker's own read-back (``readers.read_back``: a confluent
  consumer reading the topic), and ``Inspector.reads``
  (Spark, then to pandas) -- so the checker's own time is not hidden in either. The
  checker then runs ``duplicates`` and the whole ``check`` (lost, unseen, aborted ...),
  which includes the same History join.

The machine's load average is printed: on a shared box the figures move a lot.

Goals, printed at the end next to each figure: session start <= 5 s (issue 18); the
duplicates view over 1M records <= 2 s warm (issue 41; median of ``--warm-runs``) and
never slower than the Python checker's read-back plus check on the same data.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import Producer

from deliverylab import checker
from deliverylab.clients import config
from deliverylab.cluster import Cluster
from deliverylab.history import History, outcome_of
from deliverylab.readers import read_back
from deliverylab.spark.inspector import Inspector
from deliverylab.spark.session import class_archive
from deliverylab.values import encode, key


def timed(label: str, fn: Callable[[], Any], note: str = "",
          into: dict[str, float] | None = None) -> Any:
    """Run ``fn``, print its time; ``into[label]`` keeps the figure for the summary."""
    t0 = time.perf_counter()
    result = fn()
    seconds = time.perf_counter() - t0
    print(f"  {label:<52} {seconds:8.2f} s  {note}", flush=True)
    if into is not None:
        into[label] = seconds
    return result


def produce(bootstrap: str, topic: str, records: int, every: int, history: History) -> int:
    """Send ``records`` values, then every ``every``-th again; record each outcome."""
    producer = Producer(config(bootstrap, **{
        "acks": "all", "enable.idempotence": True, "linger.ms": 20, "batch.size": 1_000_000,
        "compression.type": "lz4", "queue.buffering.max.messages": 2_000_000,
        "queue.buffering.max.kbytes": 1_048_576}))
    name = "bench"

    def send(seq: int) -> None:
        value = f"{name}:{seq}"

        def done(err, msg) -> None:
            history.record(name, "send", outcome_of(err), [value], topic=topic,
                           partition=msg.partition(), offset=msg.offset(), error=err)

        while True:
            try:
                producer.produce(topic, encode(name, seq), key(name), on_delivery=done,
                                 partition=seq % 3)
                break
            except BufferError:  # local queue full: let deliveries drain
                producer.poll(0.1)
        producer.poll(0)

    for seq in range(records):
        send(seq)
    duplicates = list(range(0, records, every))
    for seq in duplicates:
        send(seq)
    if producer.flush(300):
        raise RuntimeError("messages still queued after 300 s")
    return len(duplicates)


def before_duplicates(inspector: Inspector, topic: str):
    """The duplicates view as it was before (main at 3f4febf): Kafka's default fetch wait,
    from_json on every value, then one aggregate that counts and collects the offsets of
    every value, then orderBy. Kept here only to time it beside the view (``--before``);
    the split into 2 ranges per partition is the old _raw's on 2 cores."""
    from pyspark.sql import functions as F

    from deliverylab.spark.inspector import _value_schema

    bounds = inspector.bounds(topic)
    ending = json.dumps({topic: {str(b["partition"]): b["last_stable_offset"] for b in bounds}})
    reader = (inspector.spark.read.format("kafka")  # _raw's options then: no fetch wait
              .option("kafka.bootstrap.servers", inspector.bootstrap_servers)
              .option("kafka.isolation.level", "read_committed").option("subscribe", topic)
              .option("startingOffsets", "earliest").option("endingOffsets", ending)
              .option("includeHeaders", "false"))
    if sum(b["last_stable_offset"] - b["log_start_offset"] for b in bounds) >= 100_000:
        reader = reader.option("minPartitions", str(2 * len(bounds)))
    raw = reader.load()
    v = F.from_json(F.col("value").cast("string"), _value_schema(), {"mode": "PERMISSIVE"})
    lab = F.col("producer").isNotNull() & F.col("seq").isNotNull()
    return (
        raw.select("partition", "offset", v.alias("v"))
        .select("partition", "offset", F.col("v.producer").alias("producer"),
                F.col("v.seq").alias("seq"))
        .groupBy("seq", "producer")
        .agg(F.count(F.when(lab, 1)).alias("copies"),
             F.collect_list(F.when(lab, F.array(F.col("partition").cast("long"),
                                                "offset"))).alias("offsets"))
        .where(F.col("copies") > 1)
        .select(F.lit(topic).alias("topic"),
                F.concat_ws(":", "producer", F.col("seq").cast("string")).alias("value"),
                "producer", "seq", "copies", F.sort_array("offsets").alias("offsets"))
        .orderBy("producer", "seq")
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--every", type=int, default=1000,
                        help="send every N-th value twice (default 1000)")
    parser.add_argument("--warm-runs", type=int, default=5,
                        help="warm runs of the duplicates view (the median counts)")
    parser.add_argument("--before", action="store_true",
                        help="also time the view's previous form, warm runs interleaved, "
                             "and check both return the same rows")
    args = parser.parse_args()
    partitions = 3
    figures: dict[str, float] = {}
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")

    with Cluster.start(brokers=1) as cluster, tempfile.TemporaryDirectory() as tmp:
        topic = cluster.create_topic("bench", partitions=partitions)
        history = History()
        print(f"\nwriting {args.records:,} values (+ every {args.every}-th again)")
        dups = timed("produce, with a History op per send", lambda: produce(
            cluster.bootstrap_servers, topic, args.records, args.every, history))
        total = args.records + dups
        path = timed("History.save (JSON Lines)", lambda: history.save(Path(tmp) / "h.jsonl"))
        print(f"  {total:,} records, {len(history):,} ops, {dups:,} duplicated values, "
              f"History file {path.stat().st_size / 1e6:.0f} MB")

        print("\nSpark (Inspector)")
        inspector = timed("start SparkSession (Inspector construction)",
                          lambda: Inspector(cluster), into=figures)

        def run(df) -> None:  # execute every stage, collect nothing
            df.write.format("noop").mode("overwrite").save()

        timed("duplicates view, cold", lambda: run(inspector.duplicates(topic)), into=figures)
        if args.before:
            timed("previous form of the view, cold", lambda: run(
                before_duplicates(inspector, topic)))
        warm, before = [], []
        for attempt in range(args.warm_runs):
            t0 = time.perf_counter()
            timed(f"duplicates view, warm {attempt + 1}",
                  lambda: run(inspector.duplicates(topic)))
            warm.append(time.perf_counter() - t0)
            if args.before:
                t0 = time.perf_counter()
                timed(f"previous form of the view, warm {attempt + 1}",
                      lambda: run(before_duplicates(inspector, topic)))
                before.append(time.perf_counter() - t0)
        figures["duplicates view, warm (median)"] = statistics.median(warm)
        if args.before:
            figures["previous form, warm (median)"] = statistics.median(before)
            same = ([tuple(r) for r in inspector.duplicates(topic).collect()]
                    == [tuple(r) for r in before_duplicates(inspector, topic).collect()])
            print(f"  -> the view and its previous form return the same rows: {same}")
        # Where the view's seconds go: reading the records alone (count() decodes
        # nothing: Spark prunes from_json away), the rest is decoding and grouping.
        timed("Kafka scan alone: topic(...).count(), warm",
              lambda: inspector.topic(topic).count(), into=figures)
        found = inspector.duplicates(topic).count()
        print(f"  -> Spark finds {found:,} duplicated values")
        for attempt in ("cold", "warm"):
            timed(f"history_join from the JSON Lines file, {attempt}",
                  lambda: run(inspector.history_join(topic, path)))
        timed("history_join from the History in memory",
              lambda: run(inspector.history_join(topic, history)))
        joined = inspector.history_join(topic, path)
        twice = joined.where("times_read > 1").count()
        print(f"  -> values read more than once: {twice:,}")

        print("\nread-back as checker Reads")
        reads = timed("confluent consumer + decode (pure Python)",
                      lambda: read_back(cluster.bootstrap_servers, [topic], timeout=600,
                                        expect=total),
                      into=figures)
        spark_reads = timed("Inspector.reads (Spark -> pandas -> Read)",
                            lambda: inspector.reads(topic))
        print(f"  -> {len(reads):,} and {len(spark_reads):,} reads")

        print("\nPython checker (on the consumer's reads)")
        py_dups = timed("checker.duplicates", lambda: checker.duplicates(reads), into=figures)
        result = timed("checker.check (every detector)", lambda: checker.check(
            history, reads, allowed={checker.DUPLICATES}), into=figures)
        print(f"  -> checker finds {len(py_dups):,} duplicated values; "
              f"{result.summary()}")
        inspector.stop()
    print(f"\nload average at end: {os.getloadavg()[0]:.1f}")
    start = figures["start SparkSession (Inspector construction)"]
    warm_s = figures["duplicates view, warm (median)"]
    # Like for like: the same question (which values are stored twice) in Python.
    python = (figures["confluent consumer + decode (pure Python)"]
              + figures["checker.duplicates"])
    everything = (figures["confluent consumer + decode (pure Python)"]
                  + figures["checker.check (every detector)"])
    print(f"\ngoals ({args.records:,} records):")
    # The driver maps make setup's class archive (~2 s of class loading) when it exists.
    archive = ("with class archive" if class_archive().exists()
               else "no class archive: `make setup` records one")
    print(f"  Spark session start            {start:6.2f} s   goal <= 5 s  {verdict(start <= 5)}"
          f"  ({archive})")
    print(f"  duplicates view, warm median   {warm_s:6.2f} s   goal <= 2 s  "
          f"{verdict(warm_s <= 2)}")
    print(f"  duplicates view, cold          {figures['duplicates view, cold']:6.2f} s   "
          "(no goal)")
    if "previous form, warm (median)" in figures:
        print(f"  previous form, warm median     {figures['previous form, warm (median)']:6.2f} s"
              "   (the view as it was, same run; no goal)")
    scan = figures["Kafka scan alone: topic(...).count(), warm"]
    print(f"  of which the Kafka scan alone  {scan:6.2f} s   (reference: one JVM consumer "
          f"reads ~1M small records/s, {args.records / 1e6:.1f} s here)")
    print(f"  Python read-back + duplicates  {python:6.2f} s   Spark warm must not be slower: "
          f"{verdict(warm_s <= python)}")
    print(f"  Python read-back + full check  {everything:6.2f} s   (every detector; no goal)")


def verdict(ok: bool) -> str:
    return "MET" if ok else "MISSED"


if __name__ == "__main__":
    main()
