"""How long two Kafka Connect workers take to answer ``/health``, and how much memory
they hold, beside a 3-broker cluster; and how long a dead worker's task takes to move.

Prints figures, asserts nothing (machines are noisy). Jars assumed cached (``make
setup``). Run under the heavy queue: ``.venv/bin/python bench/connect_start.py``.
"""

from __future__ import annotations

import argparse
import statistics
import time

from deliverylab.cluster import Cluster
from deliverylab.connect.connect import Connect, file_source


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    starts, rss, takeovers = [], [], []
    with Cluster.start(brokers=3) as cluster:
        cluster.create_topic("bench-lines", partitions=1)
        source = cluster.workdir / "bench.txt"
        source.write_text("")
        for run in range(args.runs):
            for exactly_once in (False, True):
                connect = Connect(cluster, workers=2, exactly_once=exactly_once).start()
                starts.append(connect.start_seconds)
                connect.create(f"b{run}", file_source(source, "bench-lines"))
                owner = connect.wait_task(f"b{run}")
                rss.extend(connect.rss_mb().values())
                t0 = time.monotonic()
                connect.kill(owner)
                connect.wait_task(f"b{run}", exclude=(owner,), timeout=90)
                takeovers.append(time.monotonic() - t0)
                connect.stop()
    print(f"2 workers ready (GET /health) in: median {statistics.median(starts):.1f} s, "
          f"max {max(starts):.1f} s over {len(starts)} starts")
    print(f"resident memory per worker with one running task: median "
          f"{statistics.median(rss):.0f} MB, max {max(rss):.0f} MB (heap cap -Xmx256m)")
    print(f"task moved to the other worker after SIGKILL in: median "
          f"{statistics.median(takeovers):.1f} s (session.timeout.ms 6000)")


if __name__ == "__main__":
    main()
