"""What an idle cluster costs: CPU-seconds its JVMs use per minute while nothing runs.

Why it matters: ``make test`` keeps a 3-broker cluster alive in every pytest worker for
the whole parallel part, mostly idle, on a 2-core machine; a classroom host keeps one per
student between exercises. Each variant is a set of broker properties (``KEY=VALUE``);
the lab's own settings are the variant ``lab``. Variants are taken alternately, round
after round, so a drift in the machine's load falls on all of them alike; each row prints
the median of its rounds and every round's figure.

Prints figures, asserts nothing. Run it alone, under the ``heavy`` queue:
``.venv/bin/python bench/idle_cluster.py`` (the lab against Kafka's default no-op
records, KIP-835), or ``--variant hb1s:broker.heartbeat.interval.ms=1000``.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import time
from collections import Counter

import psutil

from deliverylab.classroom.sizing.measure import tree_cpu
from deliverylab.cluster import Cluster

#: Kafka's own default for the interval of the controller's no-op records (KIP-835),
#: which the lab turns off (``cluster.properties.IDLE_NO_OPS``).
KAFKA_NO_OPS = {"metadata.max.idle.interval.ms": "500"}


def thread_cpu(pids: list[int]) -> Counter[str]:
    """CPU-seconds so far of the nodes' threads, summed by thread name with its numbers
    taken out (``kafka-scheduler-3`` -> ``kafka-scheduler-#``): which of Kafka's periodic
    tasks an idle minute goes to. The JVM names its threads, Linux keeps 15 characters."""
    total: Counter[str] = Counter()
    for pid in pids:
        for task in psutil.Process(pid).threads():
            try:
                with open(f"/proc/{pid}/task/{task.id}/comm") as f:
                    name = re.sub(r"\d+", "#", f.read().strip())
            except OSError:  # the thread ended meanwhile: its time is in no total
                continue
            total[name] += task.user_time + task.system_time
    return total


def idle_minute(brokers: int, overrides: dict[str, str], settle: float,
                idle: float) -> tuple[list[float], Counter[str]]:
    """Start a cluster, let it settle, then each node's CPU-seconds per idle minute, and
    the nodes' threads' CPU-seconds per idle minute by thread name."""
    with Cluster.start(brokers=brokers, overrides=overrides) as cluster:
        pids = [cluster.backend.pid(n) for n in cluster.processes]
        time.sleep(settle)
        before = [tree_cpu(p) for p in pids]
        threads_before = thread_cpu(pids)
        t0 = time.monotonic()
        time.sleep(idle)
        after = [tree_cpu(p) for p in pids]
        threads = thread_cpu(pids)
        elapsed = time.monotonic() - t0
        lost = [p for p in pids if not psutil.pid_exists(p)]
    if lost:  # tree_cpu counts a gone process as 0: no figure from a dead node
        raise RuntimeError(f"node process(es) {lost} died while idle")
    threads.subtract(threads_before)
    per_minute = Counter({name: cpu * 60 / elapsed for name, cpu in threads.items()})
    return [(a - b) * 60 / elapsed for b, a in zip(before, after, strict=True)], per_minute


def parse_variant(text: str) -> tuple[str, dict[str, str]]:
    """``name:KEY=VALUE,KEY=VALUE`` -> (name, properties); one line naming the bad part."""
    name, _, props = text.partition(":")
    pairs = [p for p in props.split(",") if p]
    if not name or not pairs or any("=" not in p for p in pairs):
        raise SystemExit(f"--variant {text!r}: expected NAME:KEY=VALUE[,KEY=VALUE...]")
    return name, dict(p.split("=", 1) for p in pairs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--idle", type=float, default=60.0, help="seconds measured idle")
    parser.add_argument("--settle", type=float, default=5.0,
                        help="seconds after readiness before measuring")
    parser.add_argument("--variant", action="append", default=[],
                        metavar="NAME:KEY=VALUE[,...]",
                        help="broker properties to compare with the lab's (repeatable); "
                             "default: Kafka's no-op records every 500 ms")
    parser.add_argument("--threads", type=int, default=0, metavar="N",
                        help="also print each variant's N costliest threads (by name, "
                             "summed over nodes and rounds)")
    args = parser.parse_args()
    variants = {"lab": {}}
    variants.update(parse_variant(v) for v in args.variant)
    if not args.variant:
        variants["kafka-no-ops"] = KAFKA_NO_OPS
    print(f"{args.brokers} broker(s), {args.rounds} round(s) of {args.idle:.0f} s idle; "
          f"load average at start {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    results: dict[str, list[float]] = {name: [] for name in variants}
    threads: dict[str, Counter[str]] = {name: Counter() for name in variants}
    for rnd in range(1, args.rounds + 1):
        for name, overrides in variants.items():
            nodes, by_thread = idle_minute(args.brokers, overrides, args.settle, args.idle)
            threads[name].update(by_thread)
            results[name].append(sum(nodes))
            print(f"  round {rnd} {name:<16} {sum(nodes):5.1f} CPU-s per idle minute "
                  f"(nodes {', '.join(f'{x:.1f}' for x in nodes)}; load "
                  f"{os.getloadavg()[0]:.1f})", flush=True)
    for name, values in results.items():
        print(f"{name:<16} median {statistics.median(values):5.1f} CPU-s per idle minute "
              f"= {statistics.median(values) / 60:.0%} of a core "
              f"({', '.join(f'{v:.1f}' for v in values)}) {variants[name] or '(lab settings)'}")
        for thread, cpu in threads[name].most_common(args.threads):
            print(f"    {thread:<24} {cpu / args.rounds:5.2f} CPU-s per idle minute")


if __name__ == "__main__":
    main()
