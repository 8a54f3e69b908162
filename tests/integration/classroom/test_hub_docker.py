"""Two students at once on a real JupyterHub with DockerSpawner (``make classroom
SPAWNER=docker``): a container of the lab image each, on a real engine.

As in ``test_hub.py``, every step goes through the hub's port as a browser's would: log
in, start the server, run chapter 00's cells in a kernel of that server; each claim
holds (brokers on local JVMs inside the student's container: it has no engine socket).
Then what containers add: the engine enforces each container's memory and CPU limit;
a student's kernel sees no process of the other (own PID namespace), none of their
files (own mounts), cannot reach their server or brokers (own network namespace, no
traffic between the class's containers); stopping a server through the hub removes its
container and every process in it; the hub's shutdown leaves no container or network.
The instructor's dashboard runs on the host beside the hub (as ``nobody``) and answers
with both students' rows, then with each one's chapter 00 claim held; a student gets 403.

In the solo part (``solo``), never in the parallel part: two JupyterLab servers, two
clusters and two Spark drivers on two cores, and the test looks at every container of its
class on the engine. It runs in the Docker lane (tests/lanes.py), one at a time with the
compose lab's tests, which judge every lab container on the engine.
"""

from __future__ import annotations

import html
import json
import pwd
import re
import socket
import subprocess
import time

import psutil
import pytest
import requests
from tests import lanes
from tests.integration.classroom.hub_helpers import CHAPTER, NOTEBOOK, claim_held, parallel
from tests.listeners import host_pids, listening

from deliverylab.classroom.course import run as course
from deliverylab.classroom.hub import dashboard
from deliverylab.classroom.hub import docker as class_docker
from deliverylab.classroom.hub.client import Kernel, Student
from deliverylab.classroom.sizing.measure import tree
from deliverylab.cluster.ready import wait_until

# 2400 s: the first test of a session to ask for the lab image builds it (a cold CI run:
# the Debian base and the image, ~9 min); the test itself takes a few minutes.
pytestmark = [pytest.mark.docker, pytest.mark.cluster, pytest.mark.spark, pytest.mark.solo,
              lanes.DOCKER, pytest.mark.timeout(2400)]

MEM_LIMIT_GB = 3.0  # one student peaks near 1.25 GiB in chapter 00 (test_hub.py)
CPU_LIMIT = 1.5

#: Run in a student's kernel: whose servers it can see among its processes (by the
#: JUPYTERHUB_USER each was started with), and whether a TCP connection gets through.
PROBE = """
def _users_seen():
    import os
    seen = set()
    for pid in filter(str.isdigit, os.listdir('/proc')):
        try:
            env = open(f'/proc/{pid}/environ', 'rb').read().split(b'\\0')
        except OSError:
            continue
        seen |= {e[16:].decode() for e in env if e.startswith(b'JUPYTERHUB_USER=')}
    return sorted(seen)

def _connects(host, port):
    import socket
    try:
        socket.create_connection((host, port), timeout=3).close()
        return True
    except OSError:
        return False
"""


def connects(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=3).close()
        return True
    except OSError:
        return False


def board(url: str, token: str) -> tuple[int, list[list[str]]]:
    """The instructor's dashboard as one request with a hub token sees it (the browser's
    hub OAuth login is test_hub.py's): its status and its student rows, each the cells
    student, server, in chapter, chapter, claim, ..., memory (dashboard.page)."""
    rsp = requests.get(f"{url}/services/{dashboard.NAME}/", timeout=60,
                       headers={"Authorization": f"token {token}"}, allow_redirects=False)
    rows = re.findall(r"<tr data-student='[^']*' data-chapter='[^']*'>(.*?)</tr>", rsp.text)
    return rsp.status_code, [[html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", r)]
                             for r in rows]


def test_two_students_in_containers(start_hub, lab_image: str):
    t_hub = time.monotonic()
    hub = start_hub(["ann", "ben"], spawner="docker", image=lab_image,
                    mem_limit_gb=MEM_LIMIT_GB, cpu_limit=CPU_LIMIT, instructors=["ida"],
                    activity_interval=10)
    s = hub.settings
    print(f"hub up in {time.monotonic() - t_hub:.1f} s")
    # nothing of the hub's listens beyond 127.0.0.1 and the class network's gateway (its
    # own processes: the other lane's JVMs may hold the same numbers elsewhere)
    ours = tree(hub.proc.pid)
    assert listening(s.port, ours) == [f"127.0.0.1:{s.port}"]
    assert listening(s.proxy_api_port, ours) == [f"127.0.0.1:{s.proxy_api_port}"]
    assert listening(s.hub_port, ours) == [f"{s.hub_ip}:{s.hub_port}"] and s.hub_ip != "127.0.0.1"

    students = {n: Student(s.url, n, s.password) for n in s.students}
    t0 = time.monotonic()
    parallel(Student.login, students.values())
    parallel(lambda st: (st.start_server(), st.wait_ready()), students.values())
    print(f"2 containers' servers ready {time.monotonic() - t0:.1f} s after the logins began")

    # --- each container as the engine runs it ---------------------------------------
    info = {n: class_docker.inspect(s.unix_name(n)) for n in students}
    assert sorted(class_docker.containers(s)) == sorted(s.unix_name(n) for n in students)
    for name, got in info.items():
        host = got["HostConfig"]
        assert host["Memory"] == host["MemorySwap"] == int(MEM_LIMIT_GB * 2**30), name
        assert (host["CpuQuota"], host["CpuPeriod"]) == (int(CPU_LIMIT * 100_000), 100_000)
        assert host["PidMode"] == "" and host["NetworkMode"] == s.network, name
        assert got["Config"]["Image"] == lab_image
        mounts = [(m["Source"], m["Destination"]) for m in got["Mounts"]]
        assert mounts == [(str(s.home(name) / "labs"), class_docker.COURSE_IN_IMAGE)], mounts
        assert "docker.sock" not in json.dumps(got), f"{name}'s container has the socket"
    ip = {n: got["NetworkSettings"]["Networks"][s.network]["IPAddress"]
          for n, got in info.items()}
    [net] = json.loads(subprocess.run(["docker", "network", "inspect", s.network],
                                      capture_output=True, text=True, timeout=30).stdout)
    assert net["Internal"] is True, "the class network has a route out"
    assert net["Options"].get("com.docker.network.bridge.enable_icc") == "false"

    # --- the instructor's dashboard: on the host, as nobody, both students listed ------
    board_procs = [p for p in psutil.process_iter(["cmdline", "uids"])
                   if "deliverylab.classroom.hub.dashboard" in (p.info["cmdline"] or [])
                   and s.prefix in (p.info["cmdline"] or [])]
    assert [p.info["uids"].real for p in board_procs] == [pwd.getpwnam("nobody").pw_uid], \
        f"the dashboard service is not one process running as nobody: {board_procs}"
    ida = Student(s.url, "ida", s.password).login()
    status, rows = board(s.url, ida.token)
    print("dashboard before the chapters:", rows)
    assert status == 200, f"the instructor's dashboard answered {status}"
    assert sorted((r[0], r[1], r[3]) for r in rows) == [("ann", "running", ""),
                                                        ("ben", "running", "")], rows
    assert all(r[-1].startswith("not measured") for r in rows), rows  # no engine socket
    assert board(s.url, students["ann"].token)[0] == 403, "a student opened the dashboard"

    # --- chapter 00, headless, in a kernel of each student's server ------------------
    kernels: dict[str, Kernel] = dict(zip(students, parallel(
        lambda st: st.kernel(NOTEBOOK), students.values()), strict=True))
    params = {**course.HEADLESS.get(CHAPTER, {}), **course.PREDICTIONS.get(CHAPTER, {}),
              **course.SMALL[CHAPTER]}  # backend auto
    t1 = time.monotonic()
    ran = dict(zip(students, parallel(lambda k: k.run_notebook(NOTEBOOK, params, timeout=600),
                                      kernels.values()), strict=True))
    print(f"chapter 00 in both containers at once: {time.monotonic() - t1:.0f} s")
    for name, st in students.items():
        claim_held(name, st, s.home(name))
        said = json.dumps([cell.outputs for cell in ran[name]], ensure_ascii=False)
        assert "no Docker engine answers → local JVM processes" in said, \
            f"{name}'s chapter did not say why it runs local brokers"
    seen: list = [None]

    def board_held() -> bool:  # re-read after the servers report the runs' activity
        seen[0] = board(s.url, ida.token)[1]
        return sorted((r[0], r[3], r[4]) for r in seen[0]) == [
            ("ann", CHAPTER, "held"), ("ben", CHAPTER, "held")]

    t_board = time.monotonic()
    wait_until("the dashboard to show each student's chapter 00 claim held", board_held,
               120, interval=2, explain=lambda: f"; its rows: {seen[0]}")
    print(f"dashboard showed both claims held {time.monotonic() - t_board:.0f} s after "
          f"the runs: {seen[0]}")
    peaks = {n: class_docker.peak_memory(got["Id"]) for n, got in info.items()}
    print("peak memory per container (MiB):", {n: p and p // 2**20 for n, p in peaks.items()})

    # --- isolation: processes, files, network -----------------------------------------
    kernels["ben"].execute("import deliverylab as dl\n"
                           "mine = dl.Cluster.start(brokers=1, backend='local')")
    ben_port = int(kernels["ben"].value("mine.bootstrap_servers").rsplit(":", 1)[1])
    for name, k in kernels.items():
        other = next(o for o in students if o != name)
        k.execute(PROBE)
        assert k.value("__import__('os').getuid()") == class_docker.LAB_UID
        assert k.value("_users_seen()") == [name], f"{name} sees another's processes"
        assert k.value(f"__import__('os').path.exists({str(s.home(other))!r})") is False
        assert s.unix_name(other) not in k.value("open('/proc/self/mountinfo').read()")
        assert k.value("__import__('os').path.exists('/var/run/docker.sock')") is False
        assert k.value(f"_connects({s.hub_ip!r}, {s.hub_port})") is True  # the hub: yes
        assert connects(ip[other], 8888), "the host cannot reach the server (control)"
        assert k.value(f"_connects({ip[other]!r}, 8888)") is False, \
            f"{name} reaches {other}'s server"
    assert kernels["ben"].value(f"_connects('127.0.0.1', {ben_port})") is True
    assert kernels["ann"].value(f"_connects('127.0.0.1', {ben_port})") is False, \
        "ann reaches ben's broker on her loopback"
    ben_procs = host_pids(s.unix_name("ben"))
    assert "java" in ben_procs.values(), f"ben's broker is not in his container: {ben_procs}"

    # --- stopping ben's server removes his container and all in it --------------------
    for k in kernels.values():
        k.close()
    t2 = time.monotonic()
    students["ben"].stop_server()
    print(f"ben's server stopped and its container gone in {time.monotonic() - t2:.1f} s")
    assert class_docker.containers(s) == [s.unix_name("ann")]
    wait_until("every process of ben's container to end",
               lambda: not any(psutil.pid_exists(p) and psutil.Process(p).name() == c
                               for p, c in ben_procs.items()), 30)
    assert (s.home("ben") / "labs" / "results" / f"{CHAPTER}.json").exists()  # his work stays
    assert students["ann"].model()["servers"][""]["ready"]

    # --- the hub's shutdown stops ann's server; nothing of the class is left -----------
    hub.stop()
    assert hub.swept == [s.network], f"the hub's shutdown left {hub.swept}"
    assert class_docker.containers(s) == [] and class_docker.networks(s) == []
    everything = subprocess.run(["docker", "ps", "-a", "--format", "{{.Names}}"],
                                capture_output=True, text=True, timeout=30).stdout.split()
    assert not [c for c in everything if c.startswith(s.prefix)], everything
    nets = subprocess.run(["docker", "network", "ls", "--format", "{{.Name}}"],
                          capture_output=True, text=True, timeout=30).stdout.split()
    assert not [n for n in nets if n.startswith(s.prefix)], nets
