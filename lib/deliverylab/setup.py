"""``python -m deliverylab.setup``: fill the cache so later runs work offline.

Called by ``make setup`` (and so by ``make lab`` and ``make test``). Needs no Maven:
the pinned jars (:mod:`deliverylab.jars`) are downloaded and checked against their
sha256 (:mod:`deliverylab.download`). Idempotent: a second run checks the checksums
and downloads nothing.

    python -m deliverylab.setup                      # every component
    python -m deliverylab.setup --components kafka spark-kafka
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time

from . import jars
from .download import fill
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deliverylab.setup")
    parser.add_argument("--components", nargs="+", default=list(jars.DEFAULT_COMPONENTS),
                        choices=list(jars.COMPONENTS), help="jar sets to fill (default: all)")
    parser.add_argument("--no-archive", action="store_true",
                        help="do not record the broker class archive (starts a broker)")
    args = parser.parse_args(argv)
    try:
        print(f"java: {find_java()}")
        t0 = time.monotonic()
        got = fill(args.components)
        for comp in args.components:
            print(f"{jars.COMPONENTS[comp].what}: ready in {jars.component_dir(comp)}")
        print(f"jars: {len(got)} downloaded, all checksums match the pins "
              f"({time.monotonic() - t0:.1f}s)")
        if "kafka" in args.components and not args.no_archive:
            build_class_archive()
    except LabError as exc:
        print(f"setup failed: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
