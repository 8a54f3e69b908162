"""``python -m deliverylab.classroom.setup.install``: fill the cache so later runs work offline.

Called by ``make setup`` (and so by ``make lab`` and ``make test``). Needs no Maven:
the pinned jars (:mod:`deliverylab.runtime.jars`) are downloaded and checked against their
sha256 (:mod:`deliverylab.runtime.download`). Idempotent: a second run checks the checksums
and downloads nothing.

    python -m deliverylab.classroom.setup.install                      # every component
    python -m deliverylab.classroom.setup.install --components kafka spark-kafka
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time

from ...cluster import tools
from ...errors import command
from ...runtime import jars
from ...runtime.download import fill
from ...runtime.java import find_java


def build_class_archives(tools_too: bool = True, spark_too: bool = True) -> None:
    """Record the class-data-sharing archives, once: the broker's (``class_archive``),
    with ``tools_too`` Kafka's tools' (``tools.class_archive``) and with ``spark_too``
    the Spark driver's (``spark.session.class_archive``, recorded in a child process).

    A one-node cluster is started -- for the broker's, with ``-XX:ArchiveClassesAtExit``
    -- a tool is recorded against it, and the broker is stopped with a SIGTERM
    (``keep_data``) so the JVM exits normally and writes its archive. Each is written
    beside its final name and renamed, so a half-written archive is never used.
    """
    from ...cluster import Cluster
    from ...cluster.local import class_archive
    from ...spark import session as spark_session

    final = class_archive()
    wanted = {"broker": final, **({"tools": tools.class_archive()} if tools_too else {}),
              **({"spark": spark_session.class_archive()} if spark_too else {})}
    for what, path in wanted.items():
        if path.exists():
            print(f"{what} class archive: {path}")
    if all(path.exists() for path in wanted.values()):
        return
    t0 = time.monotonic()
    missing = [what for what, path in wanted.items() if not path.exists()]
    print(f"{' and '.join(missing)} class archive: recording (starts one broker once)...",
          flush=True)
    partial = final.with_suffix(".partial.jsa")
    partial.unlink(missing_ok=True)
    record_broker = not final.exists()
    cluster = Cluster(brokers=1, keep_data=True, jvm_opts=(
        [f"-XX:ArchiveClassesAtExit={partial}"] if record_broker else []))
    try:
        cluster.start()
        if "tools" in missing:
            got = tools.record_class_archive(cluster.bootstrap_servers)
            print(f"tools class archive: {got}" if got else
                  "tools class archive: the JVM wrote none; tools will start without it")
        if "spark" in missing:
            got = spark_session.record_class_archive(cluster.bootstrap_servers)
            print(f"spark class archive: {got}" if got else "spark class archive: the JVM "
                  "wrote none; Spark sessions will start without it")
        if record_broker:
            # The JVM writes the archive (tens of MB) while it exits: give it time,
            # since stop() would SIGKILL a node that takes longer than a normal shutdown.
            cluster.backend.signal(1, "term")
            cluster.backend.wait_exit(1, 180)
    finally:
        cluster.stop()
        shutil.rmtree(cluster.workdir, ignore_errors=True)
    if not record_broker:
        return
    if partial.exists():
        partial.rename(final)
        print(f"broker class archive: {final} ({time.monotonic() - t0:.1f}s)")
    else:  # not fatal: brokers just start slower
        print("broker class archive: the JVM wrote none; brokers will start without it")


@command("setup failed")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deliverylab.classroom.setup.install")
    parser.add_argument("--components", nargs="+", default=list(jars.DEFAULT_COMPONENTS),
                        choices=list(jars.COMPONENTS), help="jar sets to fill (default: all)")
    parser.add_argument("--no-archive", action="store_true",
                        help="do not record the class archives (starts a broker)")
    args = parser.parse_args(argv)
    print(f"java: {find_java()}")
    t0 = time.monotonic()
    got = fill(args.components)
    for comp in args.components:
        print(f"{jars.COMPONENTS[comp].what}: ready in {jars.component_dir(comp)}")
    print(f"jars: {len(got)} downloaded, all checksums match the pins "
          f"({time.monotonic() - t0:.1f}s)")
    if "kafka" in args.components and not args.no_archive:
        build_class_archives(tools_too="tools" in args.components,
                             spark_too="spark-kafka" in args.components)
    return 0


if __name__ == "__main__":
    sys.exit(main())
