"""From login to a running chapter cluster, through a real JupyterHub, for 1 and for N
students starting at once (issue 31).

Each student: log in (a token against the password, REST), start the server, open
chapter 00's notebook (a kernel of that server), and run the chapter's first cells in it:
``import deliverylab``, ``Cluster.start(brokers=3, proxy=True, backend="local")`` -- the
cell a student runs first. The figure is login -> that cell done, split into its phases
(server ready, kernel up, cluster up). Students get Unix users of their own, removed at
the end (as in the tests). Prints figures, asserts nothing. Run as root, alone:

    ../shared/tools/heavy .venv/bin/python bench/hub_start.py --students 1 3
"""

from __future__ import annotations

import argparse
import secrets
import shutil
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from deliverylab.classroom.hub.client import Student
from deliverylab.classroom.hub.host import install_proxy, prepare_cache
from deliverylab.classroom.hub.hub import Hub
from deliverylab.classroom.hub.settings import HubSettings
from deliverylab.process.ports import free_ports

ROOT = Path(__file__).resolve().parents[1]
START = ("import deliverylab as dl\n"
         "cluster = dl.Cluster.start(brokers=3, proxy=True, backend='local')")


def one_student(url: str, name: str, password: str) -> dict[str, float]:
    t0 = time.monotonic()
    student = Student(url, name, password).login()
    student.start_server()
    student.wait_ready()
    t_server = time.monotonic()
    kernel = student.kernel("labs/00_tour.ipynb")
    kernel.execute("1")
    t_kernel = time.monotonic()
    kernel.execute(START, timeout=300)
    t_cluster = time.monotonic()
    kernel.execute("cluster.stop()")
    kernel.shutdown()
    return {"server": t_server - t0, "kernel": t_kernel - t_server,
            "cluster": t_cluster - t_kernel, "total": t_cluster - t0}


def wave(count: int, cache: Path, chp: Path) -> list[dict[str, float]]:
    prefix = f"dlb{secrets.token_hex(2)}-"
    port, hub_port, api_port, board_port = free_ports(4)
    names = [f"s{i}" for i in range(count)]
    settings = HubSettings(students=names, password=secrets.token_urlsafe(12),
                                  state=str(ROOT / "build" / f"bench-hub-{prefix[:-1]}"),
                                  port=port, hub_port=hub_port, proxy_api_port=api_port,
                                  dashboard_port=board_port,
                                  prefix=prefix, cache=str(cache), chp=str(chp))
    hub = Hub(settings, ephemeral=True)
    try:
        hub.start()
        with ThreadPoolExecutor(count) as pool:
            return list(pool.map(lambda n: one_student(settings.url, n, settings.password),
                                 names))
    finally:
        hub.stop(remove_users=True)
        shutil.rmtree(settings.state, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, nargs="+", default=[1, 3])
    parser.add_argument("--runs", type=int, default=1, help="waves of each size")
    args = parser.parse_args()
    cache, chp = prepare_cache(), install_proxy()
    print(f"{'students':>8} {'run':>3} {'login->cluster s (each)':>32} "
          f"{'slowest':>8}  server / kernel / cluster s (slowest student)")
    for count in args.students:
        slowest = []
        for run in range(args.runs):
            rows = wave(count, cache, chp)
            worst = max(rows, key=lambda r: r["total"])
            slowest.append(worst["total"])
            each = " ".join(f"{r['total']:.1f}" for r in rows)
            print(f"{count:>8} {run:>3} {each:>32} {worst['total']:>8.1f}  "
                  f"{worst['server']:.1f} / {worst['kernel']:.1f} / {worst['cluster']:.1f}",
                  flush=True)
        if args.runs > 1:
            print(f"{count:>8} median of the slowest: {statistics.median(slowest):.1f} s")


if __name__ == "__main__":
    main()
