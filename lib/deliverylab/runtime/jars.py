"""The lab's Java parts as pinned jar sets: exact files, sha256 checksums, no resolver.

Why pins: resolving a dependency tree at set-up time needs a resolver (Maven, Ivy) and
trusts whatever it finds; a student's laptop has no Maven, and the Ivy fallback once
resolved an incomplete Kafka classpath. So the maintainers resolve once, with Maven,
and commit the result (``resources/jars.lock.json``): one set of files per component,
each with its repository path, size and sha256. Set-up downloads exactly those files
over HTTPS (see :mod:`deliverylab.runtime.download`) and a cluster refuses to start on an
incomplete set, naming the missing jar.

Components (``COMPONENTS``):

* ``kafka`` -- the broker (Kafka 4.1.1, Scala 2.13) with a log4j2 backend;
* ``spark-kafka`` -- Spark's Kafka connector for the installed pyspark, minus the jars
  pyspark already ships;
* ``tools`` -- Kafka's command-line tools (on top of ``kafka``);
* ``connect`` -- a Kafka Connect worker with the file connector (on top of ``kafka``
  and ``tools``, which already carry most of Connect's runtime);
* ``jdbc`` -- JDBC drivers for SQLite and PostgreSQL.

Maintainers, after changing a version here: ``python -m deliverylab.runtime.jars lock``.
``KAFKA_HOME`` points the broker at an existing Kafka install instead of the cache.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..errors import LabError, bad_value, command

KAFKA_VERSION = "4.1.1"
SCALA_BINARY = "2.13"
LOG4J_VERSION = "2.24.3"
SPARK_VERSION = "4.0.0"  # pyspark's pin in pyproject.toml: the connector must match it
SQLITE_JDBC_VERSION = "3.54.1.0"
POSTGRESQL_JDBC_VERSION = "42.7.14"
CENTRAL = "https://repo.maven.apache.org/maven2"
LOCK_FILE = Path(__file__).parents[1] / "resources" / "jars.lock.json"
#: What set-up fills by default: every component, since the chapters use them all.
DEFAULT_COMPONENTS = ("kafka", "spark-kafka", "tools", "connect", "jdbc")
FIX = ("run `make setup` once with the network, or `make setup BUNDLE=<folder>` from an "
       "offline bundle (`make bundle`)")


@dataclass(frozen=True)
class Component:
    """What the lock command resolves for one component (the lock file records the rest)."""

    what: str
    dir: str  # under the cache root
    roots: tuple[str, ...]  # Maven coordinates group:artifact:version
    bases: tuple[str, ...] = ()  # components whose jars this one's classpath also uses
    minus_pyspark: bool = False  # leave out what pyspark's own jars/ already has


COMPONENTS: dict[str, Component] = {
    "kafka": Component(
        f"Kafka {KAFKA_VERSION} broker", f"kafka-{KAFKA_VERSION}/libs",
        # The broker's POM brings no logging backend: without one it logs nothing.
        (f"org.apache.kafka:kafka_{SCALA_BINARY}:{KAFKA_VERSION}",
         f"org.apache.logging.log4j:log4j-slf4j-impl:{LOG4J_VERSION}",
         f"org.apache.logging.log4j:log4j-core:{LOG4J_VERSION}")),
    "spark-kafka": Component(
        f"Spark {SPARK_VERSION} Kafka connector", f"spark-kafka-{SPARK_VERSION}",
        (f"org.apache.spark:spark-sql-kafka-0-10_{SCALA_BINARY}:{SPARK_VERSION}",),
        minus_pyspark=True),
    "tools": Component(
        f"Kafka {KAFKA_VERSION} command-line tools", f"kafka-tools-{KAFKA_VERSION}",
        (f"org.apache.kafka:kafka-tools:{KAFKA_VERSION}",), bases=("kafka",)),
    "connect": Component(
        f"Kafka Connect {KAFKA_VERSION} worker", f"connect-{KAFKA_VERSION}",
        (f"org.apache.kafka:connect-runtime:{KAFKA_VERSION}",
         f"org.apache.kafka:connect-file:{KAFKA_VERSION}"), bases=("kafka", "tools")),
    "jdbc": Component(
        "JDBC drivers", "jdbc",
        (f"org.xerial:sqlite-jdbc:{SQLITE_JDBC_VERSION}",
         f"org.postgresql:postgresql:{POSTGRESQL_JDBC_VERSION}")),
}


def cache_dir() -> Path:
    """The lab's cache root (``$DELIVERYLAB_CACHE``, default ``~/.cache/deliverylab``)."""
    root = Path(os.environ.get("DELIVERYLAB_CACHE", Path.home() / ".cache" / "deliverylab"))
    root.mkdir(parents=True, exist_ok=True)
    return root


def log4j_config() -> Path:
    return Path(__file__).parents[1] / "resources" / "log4j2.properties"


# --- the pins ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Jar:
    """One pinned file: its coordinate, its path in a Maven repository, size and sha256."""

    coord: str
    path: str
    size: int
    sha256: str

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]


@lru_cache(maxsize=4)
def _read_lock(path: Path) -> dict:
    return json.loads(path.read_text())


def load_lock(path: Path | None = None) -> dict:
    """The committed lock file as a dict (cached; the file ships with the package)."""
    return _read_lock(path or LOCK_FILE)


def pinned(component: str, lock: dict | None = None) -> list[Jar]:
    """The pinned jars of one component (its own files, not its bases')."""
    comps = (lock or load_lock())["components"]
    if component not in comps:
        raise bad_value("component", component, f"one of {', '.join(sorted(comps))}")
    return [Jar(**j) for j in comps[component]["jars"]]


def locked_components() -> list[str]:
    """Every component the lock pins (a bundle carries them all)."""
    return list(load_lock()["components"])


def component_dir(component: str) -> Path:
    if component not in COMPONENTS:
        raise bad_value("component", component, f"one of {', '.join(COMPONENTS)}")
    return cache_dir() / COMPONENTS[component].dir


def with_bases(component: str) -> list[str]:
    """``component`` after the components its classpath builds on (each once)."""
    out: list[str] = []
    for base in COMPONENTS[component].bases:
        out += [c for c in with_bases(base) if c not in out]
    return [*out, component]


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def problems(component: str, deep: bool = False) -> list[str]:
    """What is wrong with a component's cached files: ``"<name> (missing)"`` etc.

    The cheap check (``deep=False``) compares sizes, so a cluster start pays a few
    ``stat`` calls; ``deep=True`` (set-up, doctor) also compares sha256 checksums.
    """
    folder = component_dir(component)
    out = []
    for jar in pinned(component):
        path = folder / jar.name
        if not path.is_file():
            out.append(f"{jar.name} (missing)")
        elif path.stat().st_size != jar.size or (deep and sha256_of(path) != jar.sha256):
            out.append(f"{jar.name} (corrupt: checksum differs from the pin)")
    return out


def _pom(roots: tuple[str, ...]) -> str:
    deps = "".join(
        f"<dependency><groupId>{g}</groupId><artifactId>{a}</artifactId>"
        f"<version>{v}</version></dependency>"
        for g, a, v in (r.split(":") for r in roots))
    return ('<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0'
            "</modelVersion><groupId>deliverylab</groupId><artifactId>lock</artifactId>"
            f"<version>1</version><dependencies>{deps}</dependencies></project>")


def _maven_resolve(roots: tuple[str, ...]) -> list[tuple[str, Path]]:
    """(coordinate, file in the local Maven repository) of the runtime closure of roots."""
    mvn = shutil.which("mvn")
    if not mvn:
        raise LabError("`python -m deliverylab.runtime.jars lock` needs Maven (mvn) on PATH; "
                       "students never run it")
    with tempfile.TemporaryDirectory(prefix="deliverylab-lock-") as work:
        (Path(work) / "pom.xml").write_text(_pom(roots))
        listing = Path(work) / "list.txt"
        proc = subprocess.run(
            [mvn, "-q", "-B", "dependency:list", "-DincludeScope=runtime",
             "-DoutputAbsoluteArtifactFilename=true", f"-DoutputFile={listing}"],
            cwd=work, capture_output=True, text=True, timeout=1800)
        if proc.returncode != 0:
            tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
            raise LabError(f"mvn dependency:list failed for {', '.join(roots)}: "
                           + " | ".join(tail))
        out = []
        for line in listing.read_text().splitlines():
            fields = line.strip().split(" ")[0].split(":")
            if len(fields) not in (6, 7) or fields[2] != "jar":
                continue
            group, artifact = fields[0], fields[1]
            classifier = fields[3] if len(fields) == 7 else ""
            version, path = fields[-3], Path(fields[-1])
            coord = f"{group}:{artifact}:{version}" + (f":{classifier}" if classifier else "")
            out.append((coord, path))
    return sorted(out)


def _repo_path(coord: str, file: Path) -> str:
    group, artifact, version = coord.split(":")[:3]
    return f"{group.replace('.', '/')}/{artifact}/{version}/{file.name}"


def _artifact(jar_name: str) -> str:
    """``kafka-clients-3.9.0.jar`` -> ``kafka-clients`` (name up to the version)."""
    parts = jar_name[:-4].split("-")
    for i, part in enumerate(parts):
        if part[:1].isdigit():
            return "-".join(parts[:i])
    return "-".join(parts)


def lock(names: list[str] | None = None, path: Path | None = None) -> dict:
    """Resolve components with Maven and write their pins (others kept as they were).

    A component with bases is resolved together with its bases' roots, so Maven picks
    one version per library for the whole classpath; it then keeps only files its
    bases do not already pin. A library the bases pin in another version is refused:
    two versions of one library on a classpath is a bug waiting to happen.
    """
    path = path or LOCK_FILE
    data = json.loads(path.read_text()) if path.exists() else {"components": {}}
    data["repository"] = CENTRAL
    for name in names or list(COMPONENTS):
        comp = COMPONENTS[name]
        roots = tuple(r for c in with_bases(name) for r in COMPONENTS[c].roots)
        resolved = _maven_resolve(roots)
        base_jars = {j.name: j for b in with_bases(name)[:-1] for j in pinned(b, data)}
        base_artifacts = {_artifact(n): n for n in base_jars}
        shipped: set[str] = set()
        if comp.minus_pyspark:
            import pyspark

            if pyspark.__version__ != SPARK_VERSION:
                raise LabError(f"pyspark {pyspark.__version__} is installed; the lock is "
                               f"for {SPARK_VERSION}: install it first")
            jars_dir = Path(pyspark.__file__).parent / "jars"
            shipped = {_artifact(j.name) for j in jars_dir.glob("*.jar")}
        jars = []
        for coord, file in resolved:
            if file.name in base_jars or _artifact(file.name) in shipped:
                continue
            if _artifact(file.name) in base_artifacts:
                raise LabError(f"{name}: {file.name} conflicts with "
                               f"{base_artifacts[_artifact(file.name)]} of its bases")
            jars.append({"coord": coord, "path": _repo_path(coord, file),
                         "size": file.stat().st_size, "sha256": sha256_of(file)})
        data["components"][name] = {"what": comp.what, "dir": comp.dir,
                                    "roots": list(comp.roots), "bases": list(comp.bases),
                                    "jars": jars}
        size = sum(j["size"] for j in jars) / 1024**2
        print(f"{name}: {len(jars)} jar(s), {size:.1f} MB", flush=True)
    data["components"] = {k: data["components"][k] for k in COMPONENTS
                          if k in data["components"]}
    path.write_text(json.dumps(data, indent=1) + "\n")
    _read_lock.cache_clear()
    return data


@command("jars")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m deliverylab.runtime.jars",
        description="The lab's pinned jar sets (a component's classpath: "
                    "python -m deliverylab.runtime.classpaths NAME).")
    sub = parser.add_subparsers(dest="cmd", required=True)
    lk = sub.add_parser("lock", help="maintainers: re-resolve the pins with Maven")
    lk.add_argument("components", nargs="*", help="default: all")
    sub.add_parser("sizes", help="download size of each component")
    args = parser.parse_args(argv)
    if args.cmd == "lock":
        lock(args.components or None)
    else:
        for name in COMPONENTS:
            jars = pinned(name)
            print(f"{name:<12} {len(jars):>3} jar(s) "
                  f"{sum(j.size for j in jars) / 1024**2:7.1f} MB  {COMPONENTS[name].what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
