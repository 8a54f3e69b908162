"""``python -m deliverylab.setup``: fill the cache so later runs work offline.

Called by ``make setup`` (and so by ``make lab`` and ``make test``). Idempotent: a
second run finds the markers and downloads nothing.
"""

from __future__ import annotations

import shutil
import sys
import time

from . import dist
from .errors import LabError
from .java import find_java


def build_class_archive() -> None:
    """Record the classes a broker loads into a CDS archive, once (see ``class_archive``).

    A one-node cluster is started with ``-XX:ArchiveClassesAtExit`` and stopped with a
    SIGTERM (``keep_data``), so the JVM exits normally and writes the archive. Written
    beside its final name and renamed, so a half-written archive is never used.
    """
    from .cluster import Cluster
    from .cluster.local import class_archive

    final = class_archive()
    if final.exists():
        print(f"broker class archive: {final}")
        return
    t0 = time.monotonic()
    print("broker class archive: recording (starts one broker once)...", flush=True)
    partial = final.with_suffix(".partial.jsa")
    partial.unlink(missing_ok=True)
    cluster = Cluster(brokers=1, keep_data=True,
                      jvm_opts=[f"-XX:ArchiveClassesAtExit={partial}"])
    try:
        cluster.start()
        # The JVM writes the archive (tens of MB) while it exits: give it time, since
        # stop() would SIGKILL a node that takes longer than a normal shutdown.
        cluster.backend.signal(1, "term")
        cluster.backend.wait_exit(1, 180)
    finally:
        cluster.stop()
        shutil.rmtree(cluster.workdir, ignore_errors=True)
    if partial.exists():
        partial.rename(final)
        print(f"broker class archive: {final} ({time.monotonic() - t0:.1f}s)")
    else:  # not fatal: brokers just start slower
        print("broker class archive: the JVM wrote none; brokers will start without it")


def main() -> int:
    try:
        print(f"java: {find_java()}")
        for what, get in (("Kafka broker", dist.kafka_libs),
                          ("Spark Kafka connector", dist.spark_connector_jars)):
            t0 = time.monotonic()
            print(f"{what}: resolving...", flush=True)
            result = get()
            where = result if not isinstance(result, list) else (
                result[0].parent if result else "pyspark's own jars")
            print(f"{what}: ready in {where} ({time.monotonic() - t0:.1f}s)")
        build_class_archive()
    except LabError as exc:
        print(f"setup failed: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
