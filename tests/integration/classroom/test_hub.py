"""Three students at once on a real JupyterHub (``make classroom``'s local path).

Every step goes through the hub's port as a student's browser would: log in (a token
against the password), start the server, open the chapter's notebook, run its cells in a
kernel of that server. Then: each student's claim held (their own results file); no
student can read another's files or signal another's processes, or connect to any port
of another's (a network namespace each: their loopback and their address), and each
student's topics live on their own brokers, under their own uid; a SIGKILLed kernel leaves none of
its brokers, reaper or JVMs; the idle culler stops a server and nothing of that student
is left running.

Meanwhile the instructor watches the class in Chromium: the dashboard service
(``/services/instructor/``, hub OAuth) lists the three students with nothing run yet
and their memory against the cap, a student who opens it gets 403, and the page, reloading
itself while the students work, changes while they run and shows each student's chapter
row once their run wrote it; left open, it does not keep the idle servers from the culler.

In the solo part (``solo``), never in the parallel part: three clusters of three brokers
and three Spark drivers on two cores. Its lane (tests/lanes.py, ``HOST``) keeps it apart
from the ``/tmp`` comparison, and from the Docker tests when a student could be given
the containers' uid.
"""

from __future__ import annotations

import os
import pwd
import re
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest
from tests import lanes
from tests.browser.conftest import CHROMIUM_ARGS, chromium_executable  # noqa: F401
from tests.integration.classroom.hub_helpers import (
    CHAPTER,
    NOTEBOOK,
    RESULTS,
    claim_held,
    parallel,
)

from deliverylab.classroom.course import run as course
from deliverylab.classroom.hub import dashboard
from deliverylab.classroom.hub.client import Kernel, Student
from deliverylab.classroom.hub.limits import Limits
from deliverylab.classroom.hub.network import ClassNetwork
from deliverylab.classroom.hub.users import processes_of
from deliverylab.errors import LabError
from deliverylab.process.ports import free_ports
from deliverylab.waiting import wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.spark, pytest.mark.solo,
              lanes.HOST, pytest.mark.browser, pytest.mark.timeout(900)]

CULL_TIMEOUT = 60  # seconds idle; every busy kernel below reports activity every 10 s
CULL_EVERY = 5  # the culler looks every 5 s: an idle server goes 60-65 s after its last use
MEM_LIMIT_GB = 3.0  # each student's cgroup (one student peaks near 1.5 GB RSS)


#: Run in a student's kernel: try to list another's home, read the chapter's results in
#: it, signal a process of theirs and read its environment (where the server's token
#: is); each answer is 'denied' or 'allowed'.
PROBE = f"""
def _try(f):
    try:
        f()
        return 'allowed'
    except PermissionError:
        return 'denied'

def _probe(home, pid):
    import os
    return {{'home': _try(lambda: os.listdir(home)),
             'results': _try(lambda: open(home + '/{RESULTS}').read()),
             'signal': _try(lambda: os.kill(pid, 0)),
             'environ': _try(lambda: open(f'/proc/{{pid}}/environ').read())}}

def _listening():
    import psutil
    any_ip = {{'0.0.0.0': '127.0.0.1', '::': '::1'}}
    return sorted({{(any_ip.get(c.laddr.ip, c.laddr.ip), c.laddr.port)
                    for c in psutil.net_connections('tcp')
                    if c.status == psutil.CONN_LISTEN}})

def _connect(targets):
    import socket
    out = {{}}
    for host, port in targets:
        try:
            socket.create_connection((host, port), timeout=0.5).close()
            out[f'{{host}}:{{port}}'] = 'connected'
        except OSError as exc:
            out[f'{{host}}:{{port}}'] = type(exc).__name__
    return out
"""


BOARD = f"/services/{dashboard.NAME}/"
#: Each student row of the dashboard: student, chapter, claim, memory (see dashboard.page).
ROWS_JS = ("trs => trs.map(t => [t.dataset.student, t.dataset.chapter, "
           "t.cells[4].innerText, t.cells[9].innerText])")


@pytest.fixture
def browser(chromium_executable: str):  # noqa: F811 -- the fixture imported above
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=chromium_executable, headless=True,
                                      args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


def log_in_to_board(browser, url: str, user: str, password: str):
    """A fresh browser opens the dashboard: the hub's login page, then hub OAuth back to
    the service. Returns the page and the last response's status."""
    page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
    page.set_default_timeout(60_000)
    page.goto(url + BOARD)
    page.fill("#username_input", user)
    page.fill("#password_input", password)
    page.click("#login_submit")
    page.wait_for_url(lambda u: "/hub/login" not in u)  # the hub took the password
    rsp = page.goto(url + BOARD)  # logged in now: the answer the hub and service give
    return page, rsp.status


def wait_for_rows(page, what: str, done: Callable[[list], bool], timeout: float,
                  failed: Callable[[], None] = lambda: None) -> list:
    """Read the dashboard's student rows as the page reloads itself until ``done``;
    raises after ``timeout`` naming the rows last seen (or at once if ``failed`` does)."""
    from playwright.sync_api import Error as PlaywrightError

    last: dict[str, list | None] = {}  # the rows of the last look (none yet: no pause)

    def rows_done() -> tuple[list] | None:
        if last:  # between two looks, Playwright's pause: it serves the page's events
            page.wait_for_timeout(500)  # meanwhile, which a time.sleep would not
        try:
            last["rows"] = page.eval_on_selector_all("#students tr[data-student]", ROWS_JS)
        except PlaywrightError:  # between two reloads
            last["rows"] = None
        rows = last["rows"]
        if rows is not None and done(rows):
            return (rows,)  # in a 1-tuple: rows that are done may be falsy
        failed()
        return None

    [rows] = wait_until(f"the dashboard to show {what}", rows_done, timeout, interval=0,
                        explain=lambda: f"; last rows seen: {last['rows']}")
    return rows


def server_pid(uid: int) -> int:
    [pid] = [p for p in processes_of(uid)
             if "jupyterhub.singleuser" in " ".join(psutil.Process(p).cmdline())]
    return pid


def test_three_students_at_once(start_hub, class_cache: Path, browser, artifacts: str):
    hub = start_hub(["ann", "ben", "cat"], cache=str(class_cache), cull_timeout=CULL_TIMEOUT,
                    cull_every=CULL_EVERY, activity_interval=10, mem_limit_gb=MEM_LIMIT_GB,
                    instructors=["ida"], dashboard_port=free_ports(1)[0],
                    dashboard_refresh=2)
    s = hub.settings
    students = {n: Student(s.url, n, s.password) for n in s.students}
    with pytest.raises(LabError, match="HTTP 403"):
        Student(s.url, "ann", "not-the-password").login()
    with pytest.raises(LabError, match="HTTP 403"):  # not on the class list
        Student(s.url, "mallory", s.password).login()

    t0 = time.monotonic()
    parallel(Student.login, students.values())
    parallel(lambda st: (st.start_server(), st.wait_ready()), students.values())
    print(f"3 servers ready {time.monotonic() - t0:.1f} s after the logins began")
    t_ready = time.monotonic()
    uids = {n: pwd.getpwnam(s.unix_name(n)).pw_uid for n in students}
    assert len(set(uids.values())) == 3 and 0 not in uids.values()

    for name, uid in uids.items():  # each server in its student's memory cgroup
        cgroups = Path(f"/proc/{server_pid(uid)}/cgroup").read_text()
        assert f"/deliverylab/{s.unix_name(name)}" in cgroups or not Limits.available(), \
            f"{name}'s server is not in its cgroup: {cgroups}"

    # --- the instructor's dashboard, before anyone ran a chapter ---------------------
    board_procs = [p for p in psutil.process_iter(["cmdline", "uids"])
                   if "deliverylab.classroom.hub.dashboard" in (p.info["cmdline"] or [])
                   and s.prefix in (p.info["cmdline"] or [])]
    assert [p.info["uids"].real for p in board_procs] == [pwd.getpwnam("nobody").pw_uid], \
        f"the dashboard service is not one process running as nobody: {board_procs}"
    board, status = log_in_to_board(browser, s.url, "ida", s.password)
    assert status == 200, f"the instructor's dashboard answered {status}"
    memory = (rf"\d+ MiB of {int(MEM_LIMIT_GB * 1024)} MiB" if Limits.available()
              else "not measured")
    rows = wait_for_rows(board, "three students, nothing run, memory against the cap",
                         lambda rows: sorted(r[0] for r in rows) == ["ann", "ben", "cat"]
                         and all(r[1] == "" and re.search(memory, r[3]) for r in rows), 60)
    print("dashboard before the chapters:", rows)
    _, status = log_in_to_board(browser, s.url, "ann", s.password)
    assert status == 403, f"a student opened the instructor's dashboard: {status}"

    # --- the chapter, headless, in a kernel of each student's server -----------------
    kernels: dict[str, Kernel] = dict(zip(students, parallel(
        lambda st: st.kernel(NOTEBOOK), students.values()), strict=True))
    # the servers idle meanwhile: this must stay well under CULL_TIMEOUT
    print(f"kernels started {time.monotonic() - t_ready:.0f} s after the servers were ready")
    params = {**course.HEADLESS.get(CHAPTER, {}), **course.PREDICTIONS.get(CHAPTER, {}),
              **course.SMALL[CHAPTER], "backend": "local"}
    finished, lock, running = threading.Event(), threading.Lock(), [len(students)]

    def run(name: str) -> float:
        t = time.monotonic()
        try:
            kernels[name].run_notebook(NOTEBOOK, params, timeout=600)
        finally:
            with lock:
                running[0] -= 1
                if running[0] == 0:
                    finished.set()
        took = time.monotonic() - t
        while not finished.wait(10):  # stay active: the culler waits for the idle
            kernels[name].execute("pass")
        return took

    # the students run the chapter while the instructor's page reloads itself
    outcome: dict[str, object] = {}

    def class_runs() -> None:
        try:
            outcome["took"] = parallel(run, list(students))
        except BaseException as exc:  # raised below, in the test's thread
            outcome["error"] = exc

    runner = threading.Thread(target=class_runs, name="class-runs")
    runner.start()

    def runs_failed() -> None:
        if "error" in outcome:
            raise outcome["error"]  # type: ignore[misc]

    live: set[str] = set()  # what the page showed while a student's run was going

    def all_held(rows: list) -> bool:
        if running[0] > 0:
            live.add(repr(rows))
        return sorted((r[0], r[1], r[2]) for r in rows) == [
            (n, CHAPTER, "held") for n in ("ann", "ben", "cat")]

    try:
        rows = wait_for_rows(board, "each student's chapter 00 row, its claim held",
                             all_held, 900, runs_failed)
        print(f"dashboard showed the three results with {running[0]} run(s) still going:",
              rows, f"({len(live)} different pages while the runs went)")
        assert len(live) >= 2, f"the dashboard did not change while the class ran: {live}"
    finally:
        board.screenshot(path=str(Path(artifacts) / "hub-instructor-dashboard.png"),
                         full_page=True)
        runner.join()
    runs_failed()
    took = outcome["took"]
    print("chapter 00 per student (s):", [round(t) for t in took])
    peaks = {n: Limits(s.unix_name(n), 1 << 30, None).peak_bytes() for n in students}
    print("peak memory per student's cgroup (MiB):",
          {n: p and p // 2**20 for n, p in peaks.items()})

    for name, st in students.items():
        claim_held(name, st, Path(s.home(name)))

    # --- isolation: files, processes, brokers ------------------------------------------
    t_isolation = time.monotonic()
    parallel(lambda k: k.execute(
        "import deliverylab as dl, os\n"
        "mine = dl.Cluster.start(brokers=1, backend='local')\n"
        "mine.create_topic('mine-' + os.environ['USER'], partitions=1)"), kernels.values())
    kernel_pids = {n: k.pid() for n, k in kernels.items()}
    listening: dict[str, set[int]] = {}
    for name, k in kernels.items():
        topics = set(k.value("sorted(mine.admin().list_topics(timeout=10).topics)"))
        others = {f"mine-{s.unix_name(o)}" for o in students if o != name}
        assert f"mine-{s.unix_name(name)}" in topics and not topics & others, (name, topics)
        bootstrap = k.value("mine.bootstrap_servers")
        ports = {int(a.rsplit(":", 1)[1]) for a in bootstrap.split(",")}
        k.execute(PROBE)
        # every port listening in the student's own network namespace (the brokers, their
        # proxy, the kernel's, the server's): seen from their kernel, as the host sees
        # only its own namespace's sockets
        listening[name] = {(ip, port) for ip, port in k.value("_listening()")}
        assert ports <= {p for _, p in listening[name]}, \
            f"{name}'s brokers {ports} not in {listening[name]}"
        for other in students:
            if other == name:
                continue
            seen = k.value(f"_probe({str(s.home(other))!r}, {kernel_pids[other]})")
            assert seen == {"home": "denied", "results": "denied", "signal": "denied",
                            "environ": "denied"}, f"{name} reached {other}'s: {seen}"
    # no student connects to any port of another's, on their loopback or their address.
    # Each kernel tries at once: an attempt at another's address waits out its 0.5 s
    # (dropped, not refused), so one kernel after another took tens of seconds, with the
    # other servers idle meanwhile (time the culler counts).
    net = ClassNetwork(s.prefix, s.students)

    def reaches(name: str) -> None:
        k = kernels[name]
        for other in students:
            if other == name:
                continue
            mine = {p for _, p in listening[name]}
            theirs = sorted({p for _, p in listening[other]})
            targets = [["127.0.0.1", p] for p in theirs if p not in mine] + \
                [[net.student(other).address, p] for p in theirs]
            got = k.value(f"_connect({targets!r})", timeout=300)
            assert len(got) == len(targets) and "connected" not in got.values(), \
                f"{name} connected to {other}'s ports: {got}"
        own = k.value(f"_connect({sorted(map(list, listening[name]))!r})", timeout=300)
        assert set(own.values()) == {"connected"}, f"{name}'s own ports: {own}"

    t_connect = time.monotonic()
    parallel(reaches, list(kernels))
    print(f"isolation checked in {time.monotonic() - t_isolation:.0f} s (the connection "
          f"attempts {time.monotonic() - t_connect:.0f} s)")

    # --- ann's and cat's servers left idle (their brokers still up): the culler's timer
    # runs from here, while ben's kernel is killed and checked below ------------------
    for name in ("ann", "cat"):
        kernels[name].close()
    t_idle = time.monotonic()

    # --- a kernel SIGKILLed leaves nothing behind ---------------------------------------
    ben = uids["ben"]
    workdir = Path(kernels["ben"].value("str(mine.workdir)"))
    before = set(processes_of(ben)) - {server_pid(ben)}
    javas = {p for p in before if psutil.Process(p).name() == "java"}
    assert javas, "ben's broker JVM is not running under ben's uid"
    kernels["ben"].close()
    os.kill(kernel_pids["ben"], signal.SIGKILL)
    wait_until("every process of ben's killed kernel to end",
               lambda: not before & set(processes_of(ben)), 60, interval=0.5)
    wait_until(f"the reaper to remove {workdir}", lambda: not workdir.exists(), 30,
               interval=0.5)
    assert not [p for p in processes_of(ben) if psutil.Process(p).name() == "java"]

    print(f"ben's killed kernel checked {time.monotonic() - t_idle:.0f} s into the idle")

    # --- the idle culler stops ann's and cat's servers ----------------------------------
    for name in ("ann", "cat"):
        students[name].wait_stopped(timeout=CULL_TIMEOUT + 120)
        assert processes_of(uids[name]) == [], f"{name} has processes left after the cull"
    print(f"culled {time.monotonic() - t_idle:.0f} s after the kernels went idle")
    log = (Path(s.state) / "jupyterhub.log").read_text().splitlines()
    for name in ("ann", "cat"):  # the culler stopped them, not the test
        assert any(f"DELETE /hub/api/users/{name}/server" in line and "idle-culler" in line
                   for line in log), f"no DELETE of {name}'s server by the idle-culler"

