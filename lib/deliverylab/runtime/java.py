"""Finding a Java runtime that can run Kafka 4.x brokers (Java 17 or newer).

Kept apart from the cluster so ``make doctor``, the Spark Inspector and the brokers all
ask the same question the same way and give the same one-line answer.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

from ..errors import JavaNotFound

MIN_JAVA = 17


def _candidates() -> list[str]:
    found = []
    home = os.environ.get("JAVA_HOME")
    if home:
        found.append(str(Path(home) / "bin" / "java"))
    on_path = shutil.which("java")
    if on_path:
        found.append(on_path)
    return found


def _version_of(java: str) -> int | None:
    try:
        out = subprocess.run(
            # -XX:-UsePerfData: otherwise the probe leaves /tmp/hsperfdata_<user> behind
            # (the JVM's perf-data folder ignores TMPDIR), on every start of a lab.
            [java, "-XX:-UsePerfData", "-version"], capture_output=True, text=True,
            timeout=30
        ).stderr
    except (OSError, subprocess.SubprocessError):
        return None
    # `openjdk version "17.0.15"`, `java version "1.8.0_392"`, `openjdk version "21" ...`
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    if not m:
        return None
    major = int(m.group(1))
    return int(m.group(2) or 0) if major == 1 else major


@lru_cache(maxsize=1)
def find_java() -> str:
    """Return the path of a Java >= 17, or raise ``JavaNotFound`` saying what was seen.

    ``JAVA_HOME`` wins over ``PATH`` (as for Spark), so a student can point the lab at a
    second JDK without changing their shell.
    """
    seen = []
    for java in _candidates():
        version = _version_of(java)
        if version is not None and version >= MIN_JAVA:
            return java
        seen.append(f"{java} (version {version if version is not None else 'unknown'})")
    if not seen:
        raise JavaNotFound(
            f"Java not found: Kafka brokers and Spark need Java {MIN_JAVA} or newer. "
            "Install a JDK 17 (e.g. `apt install openjdk-17-jdk-headless`, "
            "`conda install -c conda-forge openjdk=17`) or set JAVA_HOME."
        )
    raise JavaNotFound(
        f"Java {MIN_JAVA} or newer is needed, but only found: {', '.join(seen)}. "
        "Install a JDK 17 or point JAVA_HOME at one."
    )


def temp_opts(folder: Path | str | None = None) -> list[str]:
    """The JVM options that keep a JVM's temporary files out of the shared ``/tmp``: in
    ``folder`` (made 0700 if missing; a folder removed with its owner, e.g. a cluster's
    workdir), else in this process's temporary folder (``$TMPDIR``: a student's own).

    Why each: HotSpot writes its perf data to ``/tmp/hsperfdata_<user>/<pid>`` whatever
    ``java.io.tmpdir`` says (other users can list a student's JVMs there, and the
    folder outlives them), so it is off (``-XX:-UsePerfData``: ``jps``/``jstat`` then
    see nothing; the lab uses neither). lz4-java and zstd-jni copy their native library
    into ``java.io.tmpdir`` (a SIGKILLed JVM leaves it there); snappy-java into
    ``org.xerial.snappy.tempdir``; Spark's ``spark-*`` and ``blockmgr-*`` folders follow
    ``spark.local.dir`` (set by the session, :mod:`..spark.session`)."""
    if folder is None:
        folder = tempfile.gettempdir()
    else:
        Path(folder).mkdir(mode=0o700, parents=True, exist_ok=True)  # the owner's only
    return ["-XX:-UsePerfData", f"-Djava.io.tmpdir={folder}",
            f"-Dorg.xerial.snappy.tempdir={folder}"]


def java_home() -> str:
    """JAVA_HOME for child processes (Spark's launcher wants it)."""
    return str(Path(os.path.realpath(find_java())).parent.parent)


def record_archive(final: Path, command: Callable[[Path], list[str]], timeout: float,
                   env: dict[str, str] | None = None) -> Path | None:
    """Run ``command(partial)`` -- a process whose JVM records a class-data-sharing
    archive into ``partial`` as it exits (``-XX:ArchiveClassesAtExit``) -- and move the
    archive to ``final``.

    Written beside its final name and renamed, so a half-written archive is never
    mapped. None when no archive came (the process failed, timed out or wrote none): not
    fatal, the JVMs that would map it just start slower.
    """
    partial = final.with_suffix(".partial.jsa")
    partial.unlink(missing_ok=True)
    try:
        done = subprocess.run(command(partial), capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL, env=env)
    except subprocess.TimeoutExpired:
        done = None
    if done is None or done.returncode != 0 or not partial.exists():
        partial.unlink(missing_ok=True)
        return None
    partial.rename(final)
    return final
