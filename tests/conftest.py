"""Shared fixtures. Real brokers only: a cluster fixture starts real Kafka JVMs."""

from __future__ import annotations

import faulthandler
import fcntl
import os
import pwd
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from tests.lanes import LANES, SOLO_LIST, write_solo_list
from tests.scheduling import ModuleScheduling, weight_of
from tests.shared_cluster import SharedCluster

from deliverylab.classroom.hub.host import install_proxy, prepare_cache
from deliverylab.classroom.hub.hub import Hub
from deliverylab.classroom.hub.settings import HubSettings
from deliverylab.cluster import Cluster
from deliverylab.cluster import docker as dk
from deliverylab.nemesis import Nemesis
from deliverylab.process.ports import free_ports

ARTIFACTS = os.path.join(os.path.dirname(__file__), "..", "test-artifacts")
DOCKER_DIR = Path(__file__).resolve().parents[1] / "docker"


# --- a worker that dies of a native crash says where ---------------------------------
# pytest-xdist reports a worker killed by a signal as one line ("worker 'gw0' crashed
# while running ..."); faulthandler's stack dump goes to the worker's stderr, interleaved
# with the other worker's output, and a CI excerpt cut it off (it happened: a SIGSEGV in
# tests/integration/chapters/kafka_bugs/test_reproductions.py with only two frames of it
# visible). So each worker dumps into a file of its own, and the crash report carries the dump.
CRASHES = Path(ARTIFACTS) / "crashes"
_CRASH_FILE = pytest.StashKey[Any]()


@pytest.hookimpl(trylast=True)  # after pytest's own faulthandler plugin, which it replaces
def pytest_configure(config: pytest.Config) -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        if config.getoption("numprocesses", None):  # a controller about to start workers:
            shutil.rmtree(CRASHES, ignore_errors=True)  # no dump of an earlier run is taken
        return  # for one of this run's crashes
    CRASHES.mkdir(parents=True, exist_ok=True)
    dump = open(CRASHES / f"{worker}-{os.getpid()}.txt", "w")  # noqa: SIM115 -- open until exit
    config.stash[_CRASH_FILE] = dump
    faulthandler.enable(file=dump, all_threads=True)


#: Where the suite's longest tests live (whole chapters, the grader's calibration: minutes
#: each), then the rest of the real-broker tests; unit tests (milliseconds) last.
_FIRST = ("tests/labs/", "tests/integration/grade/")
_UNIT = "tests/unit/"


@pytest.hookimpl(tryfirst=True)  # before tests/browser's hook, which puts the book last
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Longest first, so that no worker picks up a five-minute chapter when the others
    are almost done: ``make test`` hands xdist's workers a unit at a time in this order (a
    module, or a test of minutes: tests/scheduling.py), and the short unit tests at the
    end fill the gaps. A stable
    sort: within a group the collection order stays (every worker must compute the same
    order). And every ``solo`` test must say where the solo part runs it."""
    root = Path(str(config.rootpath))

    def group(item: pytest.Item) -> int:
        rel = Path(item.path).resolve().relative_to(root).as_posix() if Path(
            item.path).resolve().is_relative_to(root) else str(item.path)
        if rel.startswith(_FIRST):
            return 0
        return 2 if rel.startswith(_UNIT) else 1

    # Measured seconds first (tests/scheduling.py's WEIGHTS: a chapter, a calibration, a
    # module whose tests share a cluster), then the groups; unit tests always last.
    items.sort(key=lambda item: (group(item) == 2, -weight_of(item.nodeid), group(item)))
    solo: set[tuple[str, str]] = set()
    for item in items:
        if item.get_closest_marker("solo") is None:
            continue
        kinds = [m for m in ("alone", *LANES) if item.get_closest_marker(m) is not None]
        if len(kinds) != 1:  # make test's solo part would run it twice, or never
            raise pytest.UsageError(
                f"{item.nodeid} is marked solo and {kinds or 'nothing else'}: a solo test "
                f"is marked alone or with one lane of {LANES} (tests/lanes.py)")
        solo.add((kinds[0], item.nodeid.split("::", 1)[0]))
    if os.environ.get(SOLO_LIST):
        write_solo_list(Path(os.environ[SOLO_LIST]), solo)


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadscope`` hands out a module at a time (tests/scheduling.py says why);
    any other ``--dist`` is xdist's own."""
    if config.getvalue("dist") == "loadscope":
        return ModuleScheduling(config, log)
    return None


def pytest_unconfigure(config: pytest.Config) -> None:
    """A worker that ends alive leaves no empty dump behind."""
    dump = config.stash.get(_CRASH_FILE, None)
    if dump is None:
        return
    faulthandler.disable()
    dump.close()
    path = Path(dump.name)
    if path.exists() and not path.stat().st_size:
        path.unlink()


def crash_dump(worker: str) -> str:
    """The newest non-empty faulthandler dump of ``worker`` (e.g. ``gw0``) in this run,
    or '' (a worker killed by SIGKILL, e.g. by the OOM killer, writes none)."""
    dumps = [p for p in CRASHES.glob(f"{worker}-*.txt") if p.stat().st_size]
    if not dumps:
        return ""
    return max(dumps, key=lambda p: p.stat().st_mtime).read_text(errors="replace")


#: Frames of the test runner itself: the same in every dump, so left out of the report.
_RUNNER_FRAMES = ("/_pytest/", "/pluggy/", "/xdist/", "/execnet/", 'File "<string>"')


def crash_report(dump: str) -> str:
    """A faulthandler dump as a report leads with what matters: the fatal error and the
    thread that crashed (faulthandler writes it last, and marks it "Current thread" only
    when it is a Python thread), then the others; the runner's own frames and the list of
    extension modules dropped."""
    head, _, _ = dump.partition("\nExtension modules:")
    blocks = head.strip().split("\n\n")
    first = [b for b in blocks if b.startswith(("Fatal Python error", "Current thread"))]
    ordered = first + [b for b in blocks if b not in first]
    kept = ["\n".join(line for line in b.splitlines()
                      if not any(f in line for f in _RUNNER_FRAMES)) for b in ordered]
    return "\n\n".join(kept)


def pytest_handlecrashitem(crashitem: str, report: pytest.TestReport, sched: object) -> None:
    """Attach the crashed worker's stack dump to its test's failure report."""
    dump = crash_dump(report.node.gateway.id)  # xdist sets the crashed worker as .node
    if dump:
        report.longrepr = (f"{report.longrepr}\nfaulthandler's dump of the worker:\n"
                           f"{crash_report(dump)[:6000]}")


def heal(cluster: Cluster) -> None:
    """Bring every node back so the next test starts from a whole cluster: the
    Nemesis' one heal (network partitions, proxies, paused and dead brokers)."""
    Nemesis(cluster).heal()


SHARED = SharedCluster()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    yield
    SHARED.stop_before(item, nextitem)


def pytest_sessionfinish(session: pytest.Session) -> None:
    SHARED.stop()


@pytest.fixture(scope="module")
def cluster3() -> Cluster:
    """The worker's shared 3-node cluster (:class:`SharedCluster`)."""
    return SHARED.get()


@pytest.fixture
def cluster(cluster3: Cluster) -> Iterator[Cluster]:
    """The shared cluster, healed after each test whatever the test broke."""
    yield cluster3
    heal(cluster3)


@pytest.fixture
def topic_name() -> str:
    return f"t-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="session")
def artifacts() -> str:
    os.makedirs(ARTIFACTS, exist_ok=True)
    return ARTIFACTS


# --- Docker: an engine and the broker image, made to exist once per session ----------


@contextmanager
def one_worker_at_a_time(name: str) -> Iterator[None]:
    """Hold the machine-wide lock ``name`` (a file in the temp folder): what two pytest
    workers must not do at once on a host. Released when the file closes."""
    with open(Path(tempfile.gettempdir()) / f"deliverylab-tests-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _script(name: str, timeout: float, **env: str) -> subprocess.CompletedProcess:
    """Run a docker/ script, one test process at a time: under ``pytest -n`` two workers
    would otherwise both start a dockerd, or build the same image side by side."""
    with one_worker_at_a_time("docker"):
        return subprocess.run(["bash", str(DOCKER_DIR / name)], capture_output=True,
                              text=True, timeout=timeout,
                              env={**os.environ, "PYTHON": sys.executable, **env})


@pytest.fixture(scope="session")
def docker_script():
    """:func:`_script` for tests that build an image of their own (under the same lock)."""
    return _script


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "(no output)"


@pytest.fixture(scope="session")
def engine() -> str:
    """A Docker engine that answers, started here if need be. Skip only if it cannot, and
    never in CI (``CI`` set): there a skip would hide the container path's cold start."""
    proc = _script("engine.sh", timeout=600)
    if proc.returncode != 0:
        if os.environ.get("CI"):
            pytest.fail(f"CI needs a Docker engine: {_last_line(proc.stderr or proc.stdout)}")
        pytest.skip(_last_line(proc.stderr or proc.stdout))
    return _last_line(proc.stdout)


@pytest.fixture(scope="session")
def broker_image(engine: str) -> Iterator[str]:
    """The broker image: ``$DELIVERYLAB_KAFKA_IMAGE`` or apache/kafka if there, else the
    lab's own from ``docker/broker-image.sh``, run every session: a no-op when its inputs
    (the jars' contents and modes, the scripts) are unchanged, a rebuild when they
    changed. The root filesystem is cached, so only a machine's first run takes minutes."""
    image = os.environ.get(dk.IMAGE_ENV) or dk.default_image()
    if not dk.image_present(image):
        proc = _script("broker-image.sh", timeout=1800)
        assert proc.returncode == 0, f"building the broker image failed: {proc.stderr[-2000:]}"
        image = _last_line(proc.stdout)
    old = os.environ.get(dk.IMAGE_ENV)
    os.environ[dk.IMAGE_ENV] = image
    yield image
    if old is None:
        os.environ.pop(dk.IMAGE_ENV, None)
    else:
        os.environ[dk.IMAGE_ENV] = old


@pytest.fixture(scope="session")
def lab_image(engine: str) -> str:
    """The JupyterLab image, built (or found up to date) by ``docker/lab-image.sh``: the
    compose tests and the hub's Docker test share one build per session."""
    t0 = time.monotonic()
    proc = _script("lab-image.sh", timeout=2400)
    assert proc.returncode == 0, f"building the lab image failed: {proc.stderr[-2000:]}"
    image = _last_line(proc.stdout)
    print(f"lab image {image}: {time.monotonic() - t0:.0f} s ({proc.stderr.strip()})")
    return image


# --- the classroom's JupyterHub (issue 31): tests/integration/classroom, tests/browser ---
# Each hub gets a fresh Unix user prefix (``dlt<hex>-``), its own ports and state folder;
# at teardown, pass or fail, the hub, the proxy and every server stop, every process of
# its students is swept and their users and homes are deleted.

@pytest.fixture(scope="session")
def class_cache() -> Path:
    """The class's read-only jars cache (made once; later runs only check it)."""
    return prepare_cache()


@pytest.fixture(scope="session")
def proxy() -> Path:
    """configurable-http-proxy from npm (once; `make classroom` installs the same), one
    worker at a time: the solo part's two lanes may each start a hub at once, and two npm
    installs into one folder would race."""
    with one_worker_at_a_time("hub-setup"):
        return install_proxy()


@pytest.fixture
def start_hub(proxy: Path) -> Iterator[Callable[..., Hub]]:
    if os.geteuid() != 0:
        pytest.fail("the classroom tests create Unix users: run them as root (CI does)")
    started: list[Hub] = []

    def start(students: list[str], **settings) -> Hub:
        prefix = f"dlt{secrets.token_hex(2)}-"
        port, hub_port, api_port, board_port = free_ports(4)
        settings.setdefault("dashboard_port", board_port)  # not 8002: another hub's
        state = Path(__file__).resolve().parents[1] / "build" / f"test-hub-{prefix.rstrip('-')}"
        s = HubSettings(students=students, password=secrets.token_urlsafe(12),
                               state=str(state), port=port, hub_port=hub_port,
                               proxy_api_port=api_port, prefix=prefix, chp=str(proxy),
                               **settings)
        hub = Hub(s, ephemeral=True)
        started.append(hub)
        # one hub start at a time on the host: the first makes the class runtime in
        # /opt (hub.host.prepare_runtime), which two starts at once would both make
        with one_worker_at_a_time("hub-setup"):
            return hub.start()

    try:
        yield start
    finally:
        for hub in started:
            s = hub.settings
            hub.stop(remove_users=True)
            left = [u.pw_name for u in pwd.getpwall() if u.pw_name.startswith(s.prefix)]
            assert not left, f"the test's Unix users were not removed: {left}"
            assert not any(Path(s.home(n)).exists() for n in s.students)
            shutil.rmtree(s.state, ignore_errors=True)
