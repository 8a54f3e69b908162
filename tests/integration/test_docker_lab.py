"""The compose path on a real engine: the JupyterLab container of ``docker/compose.yml``
runs a chapter whose brokers are sibling containers, started through the mounted
engine socket (without the socket the same image falls back to local processes: the
classroom's Docker path checks that, tests/integration/classroom/test_hub_docker.py).

The lab image is built by ``docker/lab-image.sh``: from ``python:3.11-slim-bookworm``
and PyPI where a registry answers, else (this project's CI) from a debootstrapped
Debian base and an offline bundle of this machine's wheels and jars. Its label records
its inputs, so only a change to the course rebuilds it.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest
import yaml
from tests import lanes
from tests.listeners import host_pids, listening

from deliverylab.cluster import docker as dk
from deliverylab.cluster.cluster import free_ports
from deliverylab.waiting import wait_until

# solo: a chapter's clean-up is judged by every lab container on the engine (the chapter
# inside the lab names its own cluster), which another test running beside it would add to;
# in the solo part every test on the engine shares its lane, one at a time (tests/lanes.py).
pytestmark = [pytest.mark.docker, pytest.mark.cluster, pytest.mark.spark,
              pytest.mark.timeout(2400), pytest.mark.solo, lanes.DOCKER]
ROOT = Path(__file__).resolve().parents[2]
DOCKER_DIR = ROOT / "docker"


def _compose() -> list[str]:
    if subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    if subprocess.run(["docker-compose", "version"], capture_output=True).returncode == 0:
        return ["docker-compose"]
    pytest.fail("neither `docker compose` nor `docker-compose` is installed "
                "(docker/engine.sh installs docker-compose)")


def test_compose_file_has_no_idle_brokers_and_mounts_the_socket(engine: str):
    """What the compose path promises, read from the file compose runs: no broker
    service idles beside the lab; the lab has the engine socket and the host network."""
    proc = subprocess.run([*_compose(), "-f", str(DOCKER_DIR / "compose.yml"), "config"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    services = yaml.safe_load(proc.stdout)["services"]
    assert sorted(services) == ["broker-image", "lab"]
    assert services["broker-image"]["entrypoint"] == ["java", "-version"]
    lab = services["lab"]
    assert lab["network_mode"] == "host"
    # compose v1 prints "src:dst:rw", v2 the long form: accept either
    mounts = [(v.split(":")[0], v.split(":")[1]) if isinstance(v, str)
              else (v["source"], v["target"]) for v in lab["volumes"]]
    assert ("/var/run/docker.sock", "/var/run/docker.sock") in mounts
    assert "ports" not in lab  # host network: nothing to publish
    assert "--ip=127.0.0.1" in lab["command"]


def test_a_chapter_in_the_compose_lab_runs_its_brokers_as_sibling_containers(
        lab_image: str, broker_image: str, tmp_path: Path):
    """``docker compose run lab``: chapter 00 headless with its default ``backend="auto"``
    picks containers by itself, holds its claim, and leaves nothing on the engine."""
    out = tmp_path / "out"
    out.mkdir()
    out.chmod(0o777)  # the lab runs as uid 1000
    before = set(dk.leftovers())
    project = f"deliverylab-labtest-{uuid.uuid4().hex[:6]}"
    env = {**os.environ, "DELIVERYLAB_LAB_IMAGE": lab_image, dk.IMAGE_ENV: broker_image}
    cmd = [*_compose(), "-f", str(DOCKER_DIR / "compose.yml"), "-p", project, "run", "--rm",
           "--no-deps", "-v", f"{out}:/home/lab/out", "-e", "DELIVERYLAB_PROGRESS=text",
           "lab", "python", "-m", "deliverylab.classroom.course", "--small", "--no-html",
           "--out", "/home/lab/out", "00_tour"]
    try:
        results, executed = _run_chapter_00(cmd, out, env)
    finally:
        subprocess.run([*_compose(), "-f", str(DOCKER_DIR / "compose.yml"), "-p", project,
                        "down", "--remove-orphans"], env=env, capture_output=True, timeout=120)
    assert results["observed"]["backend"] == "docker", results["observed"]
    assert "image " in executed and "present → containers" in executed, \
        "the chapter did not say it picked containers"
    left = set(dk.leftovers()) - before
    assert left == set(), f"the chapter left containers or networks behind: {left}"
    ours = subprocess.run(["docker", "ps", "-aq", "--filter", f"name={project}"],
                          capture_output=True, text=True).stdout.split()
    assert ours == [], "compose left the lab container behind"


def _run_chapter_00(cmd: list[str], out: Path, env: dict[str, str] | None = None
                    ) -> tuple[dict, str]:
    """Run ``cmd`` (which runs chapter 00 headless into ``out``); its results and log."""
    t0 = time.monotonic()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1500)
    print(f"chapter 00 in the lab container: {time.monotonic() - t0:.0f} s wall")
    log = (proc.stdout + proc.stderr)[-3000:]
    results_file = out / "00_tour.json"
    assert results_file.is_file(), f"no results file; exit {proc.returncode}: {log}"
    results = json.loads(results_file.read_text())
    assert results["pass"] is True, results["checks"]
    assert results["observed"]["lost"] == 0
    assert proc.returncode == 0, log
    return results, (out / "00_tour.ipynb").read_text()


# The same image without the engine socket (``auto`` falls back to JVM brokers inside the
# container, and says why) is what every student's server runs on the classroom's Docker
# path: tests/integration/classroom/test_hub_docker.py checks it there, claim included.


def test_compose_up_serves_jupyterlab_on_loopback_and_down_removes_the_brokers(
        lab_image: str, broker_image: str):
    """``docker compose up``: JupyterLab answers on the host's 127.0.0.1 at the chosen
    port (the lab shares the host's network). ``down`` while a process in the lab still
    holds a cluster removes the lab *and* that cluster's sibling containers: the lab's
    first process waits for the watchdogs before the container dies."""
    port = free_ports(1)[0]
    project = f"deliverylab-labtest-{uuid.uuid4().hex[:6]}"
    env = {**os.environ, "DELIVERYLAB_LAB_IMAGE": lab_image, dk.IMAGE_ENV: broker_image,
           "DELIVERYLAB_LAB_PORT": str(port)}
    base = [*_compose(), "-f", str(DOCKER_DIR / "compose.yml"), "-p", project]
    try:
        up = subprocess.run([*base, "up", "-d"], env=env, capture_output=True, text=True,
                            timeout=300)
        assert up.returncode == 0, up.stderr[-2000:]

        def answers() -> int | None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api", timeout=5) as r:
                    return r.status
            except (OSError, urllib.error.URLError):
                return None

        def logs() -> str:
            return "; its logs: " + subprocess.run(
                [*base, "logs", "--no-color"], env=env, capture_output=True,
                text=True).stdout[-2000:]

        wait_until(f"JupyterLab to answer on 127.0.0.1:{port}", lambda: answers() == 200, 120,
                   interval=1, explain=logs)
        # the lab container's own sockets (it shares the host's network), not whatever
        # the other solo lane holds under the same number on another address
        lab = subprocess.run([*base, "ps", "-q", "lab"], env=env, capture_output=True,
                             text=True, timeout=60, check=True).stdout.strip()
        local = listening(port, host_pids(lab).keys())
        assert local == [f"127.0.0.1:{port}"], f"JupyterLab listens on {local}"

        owner = ("import time\nfrom deliverylab.cluster import Cluster\n"
                 "c = Cluster(brokers=1, backend='auto', ready_timeout=240).start()\n"
                 "open('/tmp/project', 'w').write(c.backend.project)\ntime.sleep(900)\n")
        started = subprocess.run([*base, "exec", "-d", "lab", "python", "-c", owner], env=env,
                                 capture_output=True, text=True, timeout=60)
        assert started.returncode == 0, started.stderr

        def cluster_project() -> str:
            return subprocess.run([*base, "exec", "-T", "lab", "cat", "/tmp/project"], env=env,
                                  capture_output=True, text=True, timeout=60).stdout.strip()

        name = wait_until("the cluster in the lab container to start", cluster_project, 240,
                          interval=2)
        assert len(dk.leftovers(name)) == 3  # one broker container, two networks
    finally:
        subprocess.run([*base, "down", "--remove-orphans"], env=env, capture_output=True,
                       timeout=180)
    ours = subprocess.run(["docker", "ps", "-aq", "--filter", f"name={project}"],
                          capture_output=True, text=True).stdout.split()
    assert ours == [], "compose left containers behind"
    assert dk.leftovers(name) == [], "the cluster started in the lab outlived it"


def test_stopping_the_lab_spares_a_watchdog_s_removal_in_progress(lab_image: str,
                                                                   tmp_path: Path):
    """``docker stop`` of the lab while a watchdog already runs its clean-up (its owner
    died earlier): the first process's sweep stops every other process but not the
    watchdog's child, so the clean-up ends (here a slow stand-in for ``docker rm``
    that leaves a mark on the host) and the container waits for it."""
    out = tmp_path / "out"
    out.mkdir()
    out.chmod(0o777)
    name = f"deliverylab-labtest-{uuid.uuid4().hex[:6]}"
    # The owner hands its watchdog a slow command, then exits: the watchdog runs it now.
    owner = ("import json\nfrom deliverylab.process.children import start_reaper\n"
             "r = start_reaper()\n"
             "r.stdin.write('exec ' + json.dumps(['sh', '-c', "
             "'sleep 15; touch /home/lab/out/cleaned']) + '\\n')\nr.stdin.flush()\n")
    try:
        run = subprocess.run(["docker", "run", "-d", "--name", name, "-v",
                              f"{out}:/home/lab/out", lab_image, "sleep", "600"],
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        started = subprocess.run(["docker", "exec", "-u", "lab", name, "python", "-c", owner],
                                 capture_output=True, text=True, timeout=60)
        assert started.returncode == 0, started.stderr
        wait_until("the watchdog to start its clean-up", lambda: subprocess.run(
            ["docker", "exec", name, "pgrep", "-f", "sleep 15"],
            capture_output=True, text=True, timeout=60).stdout.strip(), 30, interval=0.5)
        stop = subprocess.run(["docker", "stop", "-t", "60", name], capture_output=True,
                              text=True, timeout=120)
        assert stop.returncode == 0, stop.stderr
        assert (out / "cleaned").exists(), "the stop cut the watchdog's clean-up short"
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, timeout=60)
