"""What each delivery guarantee costs: throughput and latency, ratios to at-least-once.

Run: ``PYTHONPATH=lib .venv/bin/python bench/guarantees.py`` (through the heavy queue;
about 5 minutes with the defaults on 2 cores). The same measuring function as chapter
08 (:func:`deliverylab.chapters.cost_of_guarantees.costs.measure`): one 3-broker cluster, every
variant -- acks=0,
acks=1, acks=all (at-least-once), idempotent, transactional at 10 ms / 100 ms / 1 s
commit intervals -- at 100 B / 1 KB / 10 KB records, alternating round-robin so a noisy
neighbour hurts all alike; medians over the repetitions. Prints every figure beside its
ratio to at-least-once, then the shapes chapter 08 asserts. Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))

from deliverylab.chapters.cost_of_guarantees.costs import measure  # noqa: E402
from deliverylab.cluster import Cluster  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--sizes", default="100,1024,10240", help="record sizes, bytes")
    parser.add_argument("--commit-intervals", default="10,100,1000", help="ms")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=1.5, help="per throughput phase")
    parser.add_argument("--latency-seconds", type=float, default=2.5)
    parser.add_argument("--rate", type=float, default=400, help="records/s, latency phase")
    parser.add_argument("--linger-ms", type=float, default=5)
    parser.add_argument("--batch-size", type=int, default=1_000_000)
    parser.add_argument("--ctp-values", type=int, default=2000)
    parser.add_argument("--out", default="", help="also write the rows as JSON here")
    args = parser.parse_args()

    t0 = time.monotonic()
    with Cluster.start(brokers=args.brokers, proxy=False) as cluster:
        started = time.monotonic() - t0
        costs = measure(cluster, sizes=[int(s) for s in args.sizes.split(",")],
                        commit_intervals=[float(s) for s in args.commit_intervals.split(",")],
                        reps=args.reps, seconds=args.seconds,
                        latency_seconds=args.latency_seconds, rate=args.rate,
                        linger_ms=args.linger_ms, batch_size=args.batch_size,
                        ctp_values=args.ctp_values, show_progress=False)
    print(f"\n{args.brokers} brokers on one machine; medians of {args.reps} round-robin "
          f"repetitions; throughput phases {args.seconds:g} s, latency phases "
          f"{args.latency_seconds:g} s at {args.rate:g} records/s; linger.ms="
          f"{args.linger_ms:g}\n")
    print(costs.table())
    print("\nshapes (chapter 08 asserts these):")
    for name, ok in costs.shapes().items():
        print(f"  {name}: {'yes' if ok else 'NO'}")
    print(f"\ncluster start {started:.0f} s, measuring {costs.seconds:.0f} s, "
          f"total {time.monotonic() - t0:.0f} s")
    if args.out:
        Path(args.out).write_text(json.dumps(costs.to_dict(), indent=1))


if __name__ == "__main__":
    main()
