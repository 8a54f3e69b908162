"""Where the lab's Java parts come from: the Kafka broker and Spark's Kafka connector.

Both are resolved from Maven Central with their runtime dependencies into a cache
(``$DELIVERYLAB_CACHE``, default ``~/.cache/deliverylab``), once. Two resolvers are
tried in order: the machine's Maven (so its configured repositories and mirrors are
honoured) and the Apache Ivy jar that ships inside pyspark (so a student without Maven
still gets the broker). ``KAFKA_HOME`` points at an existing Kafka install instead.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .errors import JarsUnavailable
from .java import find_java

KAFKA_VERSION = "4.1.1"
SCALA_BINARY = "2.13"
LOG4J_VERSION = "2.24.3"


def cache_dir() -> Path:
    """The lab's cache root; created on demand."""
    root = Path(os.environ.get("DELIVERYLAB_CACHE", Path.home() / ".cache" / "deliverylab"))
    root.mkdir(parents=True, exist_ok=True)
    return root


@dataclass(frozen=True)
class Coord:
    """A Maven coordinate ``group:artifact:version``."""

    group: str
    artifact: str
    version: str

    def __str__(self) -> str:
        return f"{self.group}:{self.artifact}:{self.version}"


def kafka_coords(version: str = KAFKA_VERSION) -> list[Coord]:
    # The broker's POM brings no logging backend: without one it logs nothing.
    return [
        Coord("org.apache.kafka", f"kafka_{SCALA_BINARY}", version),
        Coord("org.apache.logging.log4j", "log4j-slf4j-impl", LOG4J_VERSION),
        Coord("org.apache.logging.log4j", "log4j-core", LOG4J_VERSION),
    ]


def _pom(coords: list[Coord]) -> str:
    deps = "".join(
        f"<dependency><groupId>{c.group}</groupId><artifactId>{c.artifact}</artifactId>"
        f"<version>{c.version}</version></dependency>"
        for c in coords
    )
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
        "<groupId>deliverylab</groupId><artifactId>fetch</artifactId><version>1</version>"
        f"<dependencies>{deps}</dependencies></project>"
    )


def _run(cmd: list[str], cwd: Path, timeout: int) -> str | None:
    """Run one resolver; return None on success, else a short reason."""
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{cmd[0]}: {exc}"
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
        return f"{Path(cmd[0]).name} exited {proc.returncode}: " + " | ".join(tail)
    return None


def _with_maven(coords: list[Coord], dest: Path, work: Path) -> str | None:
    mvn = shutil.which("mvn")
    if not mvn:
        return "mvn: not installed"
    (work / "pom.xml").write_text(_pom(coords))
    return _run(
        [mvn, "-q", "-B", "dependency:copy-dependencies", "-DincludeScope=runtime",
         f"-DoutputDirectory={dest}"],
        work, timeout=900,
    )


def _ivy_jar() -> Path | None:
    try:
        import pyspark
    except ImportError:
        return None
    jars = sorted(Path(pyspark.__file__).parent.joinpath("jars").glob("ivy-*.jar"))
    return jars[0] if jars else None


def _with_ivy(coords: list[Coord], dest: Path, work: Path) -> str | None:
    ivy = _ivy_jar()
    if ivy is None:
        return "ivy: no ivy jar (pyspark not installed)"
    deps = "".join(
        f'<dependency org="{c.group}" name="{c.artifact}" rev="{c.version}" conf="default"/>'
        for c in coords
    )
    (work / "ivy.xml").write_text(
        '<ivy-module version="2.0"><info organisation="deliverylab" module="fetch"/>'
        f"<dependencies>{deps}</dependencies></ivy-module>"
    )
    return _run(
        [find_java(), "-jar", str(ivy), "-ivy", "ivy.xml", "-confs", "default",
         "-cache", str(cache_dir() / "ivy"),
         "-retrieve", f"{dest}/[artifact]-[revision](-[classifier]).[ext]", "-types", "jar",
         "-sync"],
        work, timeout=900,
    )


def fetch_jars(coords: list[Coord], dest: Path, what: str) -> Path:
    """Resolve ``coords`` with runtime dependencies into ``dest`` (idempotent).

    A ``.complete`` marker is written last, so an interrupted download is redone rather
    than half-used. Raises ``JarsUnavailable`` naming every resolver tried and why it
    failed.
    """
    marker = dest / ".complete"
    if marker.exists():
        return dest
    tried = []
    for name, resolver in (("maven", _with_maven), ("ivy", _with_ivy)):
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        with tempfile.TemporaryDirectory(prefix="deliverylab-fetch-") as work:
            why = resolver(coords, dest, Path(work))
        if why is None and any(dest.glob("*.jar")):
            marker.write_text("\n".join(str(c) for c in coords) + f"\nresolved by {name}\n")
            return dest
        tried.append(f"{name}: {why or 'resolved no jars'}")
    shutil.rmtree(dest, ignore_errors=True)
    raise JarsUnavailable(
        f"could not fetch the {what} jars ({', '.join(map(str, coords))}). Tried: "
        + "; ".join(tried)
        + ". Check the network (Maven Central is needed the first time) or set KAFKA_HOME "
        "to an existing Kafka install."
    )


def kafka_libs(version: str = KAFKA_VERSION, fetch: bool = True) -> Path:
    """Directory of jars that runs ``kafka.Kafka``.

    ``KAFKA_HOME`` (an unpacked Apache Kafka download) wins; otherwise the cache.
    """
    home = os.environ.get("KAFKA_HOME")
    if home:
        libs = Path(home) / "libs"
        if not any(libs.glob("kafka_*.jar")):
            raise JarsUnavailable(f"KAFKA_HOME={home!r} has no libs/kafka_*.jar; unset it "
                                  "to let the lab fetch Kafka itself")
        return libs
    dest = cache_dir() / f"kafka-{version}" / "libs"
    if not (dest / ".complete").exists() and not fetch:
        raise JarsUnavailable(f"Kafka {version} jars are not in the cache ({dest}); "
                              "run `make setup` (or `python -m deliverylab.setup`)")
    return fetch_jars(kafka_coords(version), dest, f"Kafka {version} broker")


def spark_connector_coords() -> list[Coord]:
    """Spark's own Kafka connector, matching the installed pyspark exactly."""
    import pyspark

    return [Coord("org.apache.spark", f"spark-sql-kafka-0-10_{SCALA_BINARY}",
                  pyspark.__version__)]


def spark_connector_jars(fetch: bool = True) -> list[Path]:
    """Jar files to put on Spark's classpath for ``format("kafka")``.

    Jars pyspark already ships (same artifact, any version) are left out so the
    connector never shadows Spark's own copies of shared libraries.
    """
    import pyspark

    (coord,) = spark_connector_coords()
    dest = cache_dir() / f"spark-kafka-{coord.version}"
    if not (dest / ".complete").exists() and not fetch:
        raise JarsUnavailable(
            f"Spark's Kafka connector ({coord}) is not in the cache ({dest}): "
            "run `make setup` (or `python -m deliverylab.setup`) while online")
    fetch_jars([coord], dest, "Spark Kafka connector")
    spark_jars = Path(pyspark.__file__).parent / "jars"
    shipped = {_artifact(j.name) for j in spark_jars.glob("*.jar")}
    return sorted(j for j in dest.glob("*.jar") if _artifact(j.name) not in shipped)


def _artifact(jar_name: str) -> str:
    """``kafka-clients-3.9.0.jar`` -> ``kafka-clients`` (name up to the version)."""
    parts = jar_name[:-4].split("-")
    for i, part in enumerate(parts):
        if part[:1].isdigit():
            return "-".join(parts[:i])
    return "-".join(parts)


def log4j_config() -> Path:
    return Path(__file__).parent / "resources" / "log4j2.properties"
