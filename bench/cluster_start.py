"""How long a cluster takes to become ready, how much memory it holds, how fast it stops.

Prints figures, asserts nothing (machines are noisy). Jars and the class archive are
assumed cached (``make setup``). Run: ``.venv/bin/python bench/cluster_start.py``.
Goal from the issue: 3 brokers ready in < 10 s on 2 cores, < 1.5 GB resident in total.
"""

from __future__ import annotations

import argparse
import statistics
import time

import psutil

from deliverylab.cluster import Cluster


def rss_mb(cluster: Cluster) -> float:
    """Resident memory of every node's process, controller-only nodes included."""
    total = 0
    for node in getattr(cluster, "processes", cluster.nodes):
        pid = cluster.backend.pid(node)
        if pid:
            total += psutil.Process(pid).memory_info().rss
    return total / 2**20


def one_run(brokers: int) -> tuple[float, float, float]:
    t0 = time.monotonic()
    cluster = Cluster(brokers=brokers).start()
    ready = time.monotonic() - t0
    time.sleep(2)  # let start-up garbage settle before reading memory
    memory = rss_mb(cluster)
    t1 = time.monotonic()
    cluster.stop()
    return ready, memory, time.monotonic() - t1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3, help="runs per cluster size")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 3],
                        help="cluster sizes to measure (the ratio needs 1 and 3)")
    args = parser.parse_args()
    print(f"{'brokers':>7} {'ready s (median, min-max)':>28} {'RSS MB total':>13} "
          f"{'RSS MB/broker':>14} {'stop s':>7}")
    rows = {}
    for brokers in args.sizes:
        runs = [one_run(brokers) for _ in range(args.runs)]
        ready = [r[0] for r in runs]
        memory = statistics.median(r[1] for r in runs)
        stop = statistics.median(r[2] for r in runs)
        rows[brokers] = statistics.median(ready)
        print(f"{brokers:>7} {statistics.median(ready):>12.1f} ({min(ready):.1f}-{max(ready):.1f})"
              f"{'':>8} {memory:>13.0f} {memory / brokers:>14.0f} {stop:>7.2f}")
    if 1 in rows and 3 in rows:
        print(f"ratio ready(3)/ready(1): {rows[3] / rows[1]:.2f}")


if __name__ == "__main__":
    main()
