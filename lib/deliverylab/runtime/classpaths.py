"""The jars a JVM needs, present: fetched on first use (``fetch=True``) from the pins of
:mod:`~deliverylab.runtime.jars` through :mod:`~deliverylab.runtime.download`, or refused
with the fix. Apart from the pins so the pins and their download form no circle.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ..errors import JarsUnavailable, bad_value, command
from .jars import (
    COMPONENTS,
    FIX,
    KAFKA_VERSION,
    SPARK_VERSION,
    component_dir,
    pinned,
    problems,
    with_bases,
)


def require(component: str, fetch: bool = True) -> Path:
    """The component's cache folder, complete (downloaded now if ``fetch`` and needed).

    Raises ``JarsUnavailable`` naming the missing files and the two ways out.
    """
    for comp in with_bases(component):
        missing = problems(comp)
        if missing and fetch:
            # lazy: the download (urllib, http.client, xml) runs once per machine, and
            # every broker tool, Spark driver and child that finds its jars needs none of it
            from .download import fill

            fill([comp], deep=False)
        elif missing:
            shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more"
                                              if len(missing) > 3 else "")
            raise JarsUnavailable(f"the {COMPONENTS[comp].what} jars in "
                                  f"{component_dir(comp)} are incomplete: {shown}; {FIX}")
    return component_dir(component)


def classpath(component: str, fetch: bool = True) -> list[Path]:
    """Every jar a JVM for ``component`` needs (its bases' first), all present."""
    require(component, fetch)
    return [component_dir(c) / j.name for c in with_bases(component) for j in pinned(c)]


def kafka_libs(version: str = KAFKA_VERSION, fetch: bool = True) -> Path:
    """Folder of jars that runs ``kafka.Kafka`` (classpath ``<folder>/*``), complete.

    ``KAFKA_HOME`` (an unpacked Apache Kafka download) wins; otherwise the pinned cache.
    """
    home = os.environ.get("KAFKA_HOME")
    if home:
        libs = Path(home) / "libs"
        if not any(libs.glob("kafka_*.jar")):
            raise JarsUnavailable(f"KAFKA_HOME={home!r} has no libs/kafka_*.jar; unset it "
                                  "to let the lab fetch Kafka itself")
        return libs
    if version != KAFKA_VERSION:
        raise bad_value("kafka_version", version,
                        f"{KAFKA_VERSION} (the pinned one), or KAFKA_HOME set to a Kafka "
                        "install; maintainers change the pin with `python -m "
                        "deliverylab.runtime.jars lock`")
    return require("kafka", fetch)


def spark_connector_jars(fetch: bool = True) -> list[Path]:
    """Jar files to put on Spark's classpath for ``format("kafka")``.

    Pinned without the jars pyspark already ships, so the connector never shadows
    Spark's own copies of shared libraries; only valid for the pinned pyspark version.
    """
    import pyspark

    if pyspark.__version__ != SPARK_VERSION:
        raise JarsUnavailable(f"pyspark {pyspark.__version__} is installed but the Kafka "
                              f"connector is pinned for {SPARK_VERSION}: run `make setup` "
                              "(it installs the pinned pyspark)")
    return classpath("spark-kafka", fetch)


# --- the maintainer command: regenerate the pins with Maven -----------------------------


@command("classpaths")
def main(argv: list[str] | None = None) -> int:
    """``python -m deliverylab.runtime.classpaths NAME``: print a component's classpath."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0] not in COMPONENTS:
        print(f"usage: python -m deliverylab.runtime.classpaths {{{','.join(COMPONENTS)}}}",
              file=sys.stderr)
        return 2
    print(os.pathsep.join(str(p) for p in classpath(args[0])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
