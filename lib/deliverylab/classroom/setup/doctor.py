"""``make doctor``: is this machine ready for the lab? A pass/fail list with fixes.

Why a doctor: in a classroom the first ten minutes decide the day. Every failure the
lab can meet before a chapter runs (no Java 17, too little memory, caches not filled
before the Wi-Fi dies, a port blocked, no Docker engine when the class uses Docker)
is checked here in seconds, each with the one line that fixes it, so an instructor can
ask thirty students to run one command and raise a hand on red.

    python -m deliverylab.classroom.setup.doctor           # or: make doctor
    python -m deliverylab.classroom.setup.doctor --docker  # the Docker path too (make: DOCKER=1)

Exit status 0 when nothing failed (warnings allowed), 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ...errors import LabError
from ...runtime import classpaths, jars

GIB = 1024**3
NEED_DISK = 1.0 * GIB  # logs and topic data of a chapter are small; the jars ~0.5 GB
JUPYTER_PORT = 8888


@dataclass
class Check:
    """One line of the report: ``PASS``/``WARN``/``FAIL``, what was seen, and the fix."""

    name: str
    status: str
    detail: str
    fix: str = ""

    def line(self) -> str:
        text = f"[{self.status}] {self.name:<18} {self.detail}"
        return text + (f"\n       fix: {self.fix}" if self.fix and self.status != "PASS" else "")


def _gib(n: float) -> str:
    return f"{n / GIB:.1f} GB"


def check_python() -> Check:
    v = sys.version_info
    ok = v >= (3, 11)
    return Check("python", "PASS" if ok else "FAIL", f"{platform.python_version()} "
                 f"({sys.executable})", "install Python 3.11 or newer and re-run `make setup`")


def check_java() -> Check:
    from ...runtime.java import MIN_JAVA, _version_of, find_java

    try:
        java = find_java()
    except LabError as exc:
        return Check("java", "FAIL", str(exc).split(":")[0],
                     f"install a JDK {MIN_JAVA} (apt install openjdk-17-jdk-headless, "
                     "brew install openjdk@17, conda install -c conda-forge openjdk=17) "
                     "or set JAVA_HOME")
    return Check("java", "PASS", f"{java} (version {_version_of(java)})")


def memory_needed(students: int = 1) -> tuple[float, float]:
    """Bytes needed and comfortable, from the plan's record (``classroom/sizing/sizing.json``,
    the figures ``make classroom-plan`` and the guides give), so every reader says one
    figure. One student (a laptop, default profile): the heaviest chapter's measured
    peak RSS (chapter 07), up to 0.5 GB; comfortable, the cap the plan would give it.
    A class (a hub, light profile): the host reserve plus the plan's memory per seat
    each; comfortable, the reserve plus every student at the plan's cap at once."""
    from ..sizing.plan import _round_up, host_memory_gb, limit_gb, read_record, recorded

    if students == 1:
        peak = read_record()["one_student"]["peak_rss"]
        return _round_up(peak / GIB, 0.5) * GIB, limit_gb(peak) * GIB
    need, want = host_memory_gb(students, recorded("light"))
    return need * GIB, want * GIB


def check_memory(students: int = 1) -> Check:
    import psutil

    mem = psutil.virtual_memory()
    need, want = memory_needed(students)
    detail = (f"{_gib(mem.available)} available of {_gib(mem.total)}; the lab needs "
              f"{_gib(need)}" + (f" for {students} students" if students > 1 else ""))
    fix = ("close other programs (browsers with many tabs, IDEs), or give Docker Desktop "
           "more memory; a 1-broker cluster (`Cluster.start(brokers=1)`) needs a third")
    if students > 1:
        fix = ("a host with more memory, or fewer students: `make classroom-plan "
               "PLAN_MEASURE=0 CORES=... MEMORY=...` says how many fit")
    if mem.available < need:
        return Check("memory", "FAIL", detail, fix)
    if mem.available < want:
        return Check("memory", "WARN", detail + f" ({_gib(want)} is comfortable)", fix)
    return Check("memory", "PASS", detail)


def check_disk() -> list[Check]:
    out = []
    import tempfile

    for what, path in (("disk (cache)", jars.cache_dir()), ("disk (temp)",
                                                            Path(tempfile.gettempdir()))):
        free = shutil.disk_usage(path).free
        status = "PASS" if free >= NEED_DISK else "FAIL"
        out.append(Check(what, status, f"{_gib(free)} free in {path}",
                         f"free at least {_gib(NEED_DISK)} there (or set DELIVERYLAB_CACHE "
                         "/ TMPDIR to a roomier disk)"))
    return out


def check_caches() -> list[Check]:
    """The pinned jars a chapter needs, present and intact *now* (sha256 checked), so
    the lab works offline later; a missing or corrupt jar is named."""
    out = []
    fix = "run `make setup` while online (or `make setup BUNDLE=<folder>` from a bundle)"
    if os.environ.get("KAFKA_HOME"):
        try:
            out.append(Check("kafka jars", "PASS", f"{classpaths.kafka_libs(fetch=False)} "
                             "(KAFKA_HOME)"))
        except LabError as exc:
            out.append(Check("kafka jars", "FAIL", str(exc), "unset KAFKA_HOME"))
    for comp in jars.DEFAULT_COMPONENTS:
        if comp == "kafka" and os.environ.get("KAFKA_HOME"):
            continue
        name = f"{comp} jars"
        folder = jars.component_dir(comp)
        bad = jars.problems(comp, deep=True)
        count = len(jars.pinned(comp))
        if not bad:
            out.append(Check(name, "PASS", f"{count} pinned jar(s), checksums match, in "
                             f"{folder}"))
            continue
        shown = ", ".join(bad[:4]) + (f" and {len(bad) - 4} more" if len(bad) > 4 else "")
        # The broker and Spark's connector are needed by every chapter; the rest by some.
        status = "FAIL" if comp in ("kafka", "spark-kafka") else "WARN"
        out.append(Check(name, status, f"{len(bad)} of {count} missing or corrupt in {folder}: "
                         f"{shown}", fix))
    from ...cluster.local import class_archive

    archive = class_archive()
    out.append(Check("class archive", "PASS" if archive.exists() else "WARN",
                     str(archive) if archive.exists() else "none: brokers start ~1/3 slower",
                     "run `make setup` (it records one)"))
    from ...cluster.tools import class_archive as tools_archive

    archive = tools_archive()
    out.append(Check("tools class archive", "PASS" if archive.exists() else "WARN",
                     str(archive) if archive.exists()
                     else "none: each Kafka tool starts ~0.4 s slower",
                     "run `make setup` (it records one)"))
    from ...spark.session import class_archive as spark_archive

    archive = spark_archive()
    out.append(Check("spark class archive", "PASS" if archive.exists() else "WARN",
                     str(archive) if archive.exists()
                     else "none: the Spark session starts ~2 s slower",
                     "run `make setup` (it records one)"))
    return out


def check_packages() -> Check:
    missing = []
    for mod in ("confluent_kafka", "pyspark", "pandas", "ipywidgets", "jupyterlab", "psutil"):
        try:
            __import__(mod)
        except ImportError:
            missing.append(mod)
    if missing:
        return Check("python packages", "FAIL", "missing: " + ", ".join(missing),
                     "run `make setup` (it installs the package with its dependencies)")
    import confluent_kafka
    import pyspark

    return Check("python packages", "PASS", f"confluent-kafka {confluent_kafka.__version__}, "
                 f"pyspark {pyspark.__version__}")


def check_ports(count: int = 16) -> list[Check]:
    """Clusters take free ports on 127.0.0.1; JupyterLab wants 8888 (or the next one)."""
    out = []
    socks: list[socket.socket] = []
    try:
        for _ in range(count):
            s = socket.socket()
            socks.append(s)
            s.bind(("127.0.0.1", 0))
            s.listen(1)
        probe = socket.create_connection(socks[0].getsockname(), timeout=3)
        probe.close()
        out.append(Check("ports", "PASS", f"{count} free ports open and accept on 127.0.0.1"))
    except OSError as exc:
        out.append(Check("ports", "FAIL", f"cannot listen on or connect to 127.0.0.1: {exc}",
                         "allow local connections in the firewall / security software "
                         "(the lab never listens on other interfaces)"))
    finally:
        for s in socks:
            s.close()
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", JUPYTER_PORT))
            out.append(Check("jupyter port", "PASS", f"{JUPYTER_PORT} is free"))
        except OSError:
            out.append(Check("jupyter port", "WARN", f"{JUPYTER_PORT} is taken (another "
                             "JupyterLab?); JupyterLab will pick the next free port",
                             "nothing to do, or stop the other server"))
    return out


def check_docker() -> list[Check]:
    from ...cluster import docker as dk

    if shutil.which("docker") is None:
        return [Check("docker", "FAIL", "the docker command is not installed",
                      "install Docker Desktop (macOS/Windows), colima, or "
                      "`apt-get install docker.io` (Linux); or use the local backend")]
    if not dk.engine_answers():
        return [Check("docker", "FAIL", "no Docker engine answers",
                      "start Docker Desktop / colima; on Linux run docker/engine.sh")]
    proc = dk._docker("info", "-f", "{{.MemTotal}} {{.ServerVersion}}", check=False)
    mem, _, version = proc.stdout.decode().strip().partition(" ")
    engine_mem = int(mem) if mem.isdigit() else 0
    out = [Check("docker", "PASS", f"engine {version} answers, {_gib(engine_mem)} memory")]
    need = memory_needed(1)[0]
    if engine_mem and engine_mem < need:
        out[0] = Check("docker", "FAIL", f"the engine has only {_gib(engine_mem)} memory",
                       f"give Docker Desktop / colima at least {_gib(need)} "
                       "(Settings > Resources, or `colima start --memory 4`)")
    image = dk.resolve_image()
    if dk.image_present(image):
        out.append(Check("broker image", "PASS", image))
    else:
        out.append(Check("broker image", "FAIL", f"{image} is not on this engine",
                         f"`docker pull {image}` while online, or with no registry "
                         f"`docker/broker-image.sh` and set {dk.IMAGE_ENV}"))
    left = dk.leftovers()
    if left:
        out.append(Check("leftovers", "WARN", f"{len(left)} lab container(s)/network(s) "
                         "exist (other notebooks running, or a crash)",
                         "if no notebook runs: docker rm -f $(docker ps -aq --filter "
                         f"label={dk.LABEL}); docker network prune"))
    return out


def check_arch() -> Check:
    machine = platform.machine().lower()
    if machine in ("arm64", "aarch64"):
        return Check("cpu", "PASS", f"{machine}: Java, Kafka jars and apache/kafka run "
                     "natively (no emulation needed)")
    return Check("cpu", "PASS", f"{machine}, {os.cpu_count()} core(s)")


def run(docker: bool = False, students: int = 1) -> list[Check]:
    checks: list[Callable[[], Check | list[Check]]] = [
        check_python, check_arch, check_java, lambda: check_memory(students), check_disk,
        check_packages, check_caches, check_ports]
    if docker:
        checks.append(check_docker)
    results: list[Check] = []
    for check in checks:
        try:
            got = check()
        except Exception as exc:  # noqa: BLE001 - a broken check must not hide the others
            got = Check(getattr(check, "__name__", "check"), "FAIL", f"the check crashed: {exc}")
        results.extend(got if isinstance(got, list) else [got])
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deliverylab.classroom.setup.doctor",
                                     description="Is this machine ready for the lab?")
    parser.add_argument("--docker", action="store_true",
                        default=os.environ.get("DOCKER", "") not in ("", "0"),
                        help="also check the Docker path (engine, broker image)")
    parser.add_argument("--students", type=int, default=1,
                        help="memory for this many students on this host (JupyterHub)")
    args = parser.parse_args(argv)
    results = run(docker=args.docker, students=args.students)
    for result in results:
        print(result.line())
    failed = [r for r in results if r.status == "FAIL"]
    warned = [r for r in results if r.status == "WARN"]
    print(f"\ndoctor: {len(results) - len(failed) - len(warned)} ok, {len(warned)} "
          f"warning(s), {len(failed)} to fix" + ("" if failed else " - ready for the lab"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
