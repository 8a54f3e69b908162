"""Records/s through the Spark pipeline, per sink, beside the Python pipeline.

Run: ``PYTHONPATH=lib .venv/bin/python bench/spark_pipeline.py`` (through the heavy
queue; about 2-4 minutes with the defaults on 2 cores). One cluster, one input topic of
``--values`` values written once (at-least-once producer), then every stage copies that
same input to its own output, one run each, no fault:

- the Python pipeline (:class:`deliverylab.workload.Pipeline`) in AT_LEAST_ONCE and in
  TRANSACTIONAL mode (the references: chapter 02's and chapter 04's loop);
- chapter 05's Spark query (:class:`deliverylab.spark.pipeline.SparkPipeline`) into each
  sink of :data:`deliverylab.spark.query.SINKS`, ``--max-offsets`` offsets a micro-batch,
  on the kernel's one Spark session (started first and timed on its own, so no sink
  pays for it).

Before the measured runs, ``--warmup`` values go once through the Python loop and the
Spark Kafka sink, unreported: the first consumer group on a fresh cluster creates
``__consumer_offsets`` (seconds), and Spark's first query loads and compiles its Kafka
connector; without this the first row of each kind pays for everyone.

Every stage records its History as the chapters do (the Spark sinks append each op to a
JSON Lines file with an fsync, so that a SIGKILLed driver's ops survive: that cost is
part of the pipeline as the course runs it, and is counted). A run's time is from its
start to its last output; records/s = input values / that time. Prints each figure
beside its ratio to the Python at-least-once loop. Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))

from deliverylab.cluster import Cluster  # noqa: E402
from deliverylab.history import History  # noqa: E402
from deliverylab.spark.pipeline import SparkPipeline  # noqa: E402
from deliverylab.spark.query import SINKS  # noqa: E402
from deliverylab.spark.sinks import control_topic  # noqa: E402
from deliverylab.workload import Pipeline, ProducerWorkload  # noqa: E402


def python_stage(cluster: Cluster, source: str, mode: str, values: int,
                 partitions: int) -> dict:
    """One Python pipeline instance copies ``source`` to a fresh topic in ``mode``."""
    out = f"{source}-py-{mode.lower()}"
    cluster.create_topic(out, partitions=partitions)
    history = History()
    t0 = time.monotonic()
    report = Pipeline(cluster, source, out, mode, history, group=f"{out}-group").run(
        expected=values)
    seconds = time.monotonic() - t0
    return {"stage": f"python {mode}", "seconds": seconds, "records": report.processed,
            "sends": sum(1 for op in history if op.kind == "send" and op.outcome == "ok")}


def spark_stage(cluster: Cluster, source: str, sink: str, max_offsets: int,
                partitions: int) -> dict:
    """One Spark query (no crash) copies ``source`` into ``sink``."""
    out = f"{source}-spark-{sink}"
    if sink in ("kafka", "kafka_txn"):
        cluster.create_topic(out, partitions=partitions)
    if sink == "kafka_txn":
        cluster.create_topic(control_topic(out), partitions=1)
    pipe = SparkPipeline(cluster, source, sink,
                         output=out if sink in ("kafka", "kafka_txn") else None,
                         max_offsets=max_offsets, name=f"bench-{sink}")
    try:
        t0 = time.monotonic()
        pipe.run()
        seconds = time.monotonic() - t0
        history = pipe.history
        return {"stage": f"spark {sink}", "seconds": seconds,
                "records": sum(1 for op in history if op.kind == "poll" and op.values),
                "sends": sum(1 for op in history if op.kind == "send" and op.outcome == "ok"),
                "batches": len(pipe.batches())}
    finally:
        pipe.clean()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--values", type=int, default=5000)
    parser.add_argument("--max-offsets", type=int, default=1000,
                        help="Spark: offsets per micro-batch (chapter 05 uses 10)")
    parser.add_argument("--warmup", type=int, default=300,
                        help="values through each kind of stage first, not reported")
    parser.add_argument("--sinks", default=",".join(SINKS))
    parser.add_argument("--out", default="", help="also write the rows as JSON here")
    args = parser.parse_args()
    sinks = [s for s in args.sinks.split(",") if s]
    for s in sinks:
        if s not in SINKS:
            parser.error(f"--sinks item {s!r} is not accepted; expected one of "
                         + ", ".join(SINKS))

    t0 = time.monotonic()
    rows = []
    with Cluster.start(brokers=args.brokers, proxy=False) as cluster:
        started = time.monotonic() - t0
        source = f"bench-in-{uuid.uuid4().hex[:6]}"
        cluster.create_topic(source, partitions=args.partitions)
        warm = f"{source}-warmup"
        cluster.create_topic(warm, partitions=args.partitions)
        ProducerWorkload(cluster, warm, "AT_LEAST_ONCE", History()).run(args.warmup)
        tw = time.monotonic()
        ProducerWorkload(cluster, source, "AT_LEAST_ONCE", History()).run(args.values)
        wrote = time.monotonic() - tw
        tu = time.monotonic()
        python_stage(cluster, warm, "AT_LEAST_ONCE", args.warmup, args.partitions)
        warmed = time.monotonic() - tu
        for mode in ("AT_LEAST_ONCE", "TRANSACTIONAL"):
            rows.append(python_stage(cluster, source, mode, args.values,
                                     args.partitions))
        from deliverylab.spark.session import session, stop

        ts = time.monotonic()
        session()
        spark_start = time.monotonic() - ts
        try:
            tu = time.monotonic()
            spark_stage(cluster, warm, "kafka", args.max_offsets, args.partitions)
            warmed += time.monotonic() - tu
            for sink in sinks:
                rows.append(spark_stage(cluster, source, sink, args.max_offsets,
                                        args.partitions))
        finally:
            stop()
    base = args.values / rows[0]["seconds"]  # the Python at-least-once loop
    print(f"\n{args.brokers} brokers, {args.partitions} partitions, {args.values} values "
          f"written once (at-least-once producer, {wrote:.1f} s) and copied by every "
          f"stage; Spark local[2], {args.max_offsets} offsets a micro-batch; one run each\n")
    head = f"{'stage':<28}{'seconds':>9}{'records/s':>11}{'x python ALO':>14}" \
           f"{'in':>8}{'out':>8}{'batches':>9}"
    print(head)
    print("-" * len(head))
    for r in rows:
        rate = args.values / r["seconds"]
        r["records_per_s"] = rate
        r["ratio"] = rate / base
        print(f"{r['stage']:<28}{r['seconds']:>9.2f}{rate:>11.0f}{r['ratio']:>14.2f}"
              f"{r['records']:>8}{r['sends']:>8}{r.get('batches', '-'):>9}")
    print(f"\ncluster start {started:.0f} s, Spark session start {spark_start:.0f} s, "
          f"warm-up ({args.warmup} values, Python + Spark kafka) {warmed:.0f} s: in no "
          f"row; total {time.monotonic() - t0:.0f} s")
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
