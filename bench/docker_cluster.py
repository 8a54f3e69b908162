"""The Docker backend beside the local one: time to ready, memory, time to stop, and
what one student's whole lab session holds (3 brokers + Spark + the Python process).

Prints figures, asserts nothing (machines are noisy; run it on a quiet one). These are
the numbers docs/measurements.md ("One student: hardware") and
``deliverylab.classroom.setup.doctor`` rely on.

    .venv/bin/python bench/docker_cluster.py                 # local and docker, 1 run
    .venv/bin/python bench/docker_cluster.py --runs 3 --spark

Docker memory is the engine's own accounting (``docker stats``: the cgroup's usage less
page cache), local memory the brokers' resident set: close, not identical.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import psutil
from confluent_kafka import Producer

from deliverylab.clients import config
from deliverylab.cluster import Cluster
from deliverylab.cluster import docker as dk

MB = 2**20


def broker_memory(cluster: Cluster) -> float:
    if cluster.backend_name == "docker":
        return sum(cluster.backend.stats().values()) / MB
    return sum(psutil.Process(cluster.backend.pid(n)).memory_info().rss
               for n in cluster.nodes) / MB


def load(cluster: Cluster, records: int = 20000) -> None:
    """Some real traffic, so memory is measured warm rather than just after start."""
    topic = cluster.create_topic(f"bench-{time.monotonic_ns()}", partitions=3)
    producer = Producer(config(cluster.bootstrap_servers, acks="all", **{"linger.ms": 5}))
    for i in range(records):
        producer.produce(topic, f"value-{i:08d}".encode() * 8)
        if i % 1000 == 0:
            producer.poll(0)
    producer.flush(60)


def spark_memory(cluster: Cluster) -> float:
    """RSS of Spark's driver JVM after reading a topic through the connector."""
    from deliverylab.spark.inspector import Inspector

    topic = cluster.create_topic(f"spark-{time.monotonic_ns()}", partitions=3)
    producer = Producer(config(cluster.bootstrap_servers))
    for i in range(5000):
        producer.produce(topic, f"v{i}".encode())
    producer.flush(30)
    inspector = Inspector(cluster)
    inspector.topic(topic).count()
    jvms = [p for p in psutil.Process().children(recursive=True)
            if "SparkSubmit" in " ".join(p.cmdline())]
    rss = sum(p.memory_info().rss for p in jvms) / MB
    Inspector.stop()
    return rss


def one_run(backend: str, spark: bool) -> dict[str, float]:
    t0 = time.monotonic()
    cluster = Cluster(brokers=3, backend=backend, ready_timeout=300).start()
    row = {"ready": time.monotonic() - t0}
    try:
        time.sleep(2)
        row["idle"] = broker_memory(cluster)
        load(cluster)
        time.sleep(2)
        row["loaded"] = broker_memory(cluster)
        if spark:
            row["spark"] = spark_memory(cluster)
            row["python"] = psutil.Process().memory_info().rss / MB
    finally:
        t1 = time.monotonic()
        cluster.stop()
        row["stop"] = time.monotonic() - t1
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--backends", nargs="+", default=["local", "docker"])
    parser.add_argument("--spark", action="store_true", help="also measure Spark's driver")
    args = parser.parse_args()
    if "docker" in args.backends and not dk.usable():
        print("docker: no engine or no broker image (docker/engine.sh, "
              "docker/broker-image.sh); measuring local only")
        args.backends = [b for b in args.backends if b != "docker"]
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    cols = ["ready", "idle", "loaded", "stop"] + (["spark", "python"] if args.spark else [])
    print(f"{'backend':>8} " + " ".join(f"{c:>10}" for c in cols)
          + "   (seconds; MB for memory, 3 brokers total)")
    for backend in args.backends:
        runs = [one_run(backend, args.spark) for _ in range(args.runs)]
        med = {c: statistics.median(r[c] for r in runs) for c in cols}
        print(f"{backend:>8} " + " ".join(f"{med[c]:>10.1f}" for c in cols), flush=True)


if __name__ == "__main__":
    main()
