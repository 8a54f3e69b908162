"""Chapters after chapters for N students at once, through a real JupyterHub (issue 31):
does each chapter's claim hold for each student, how long does it take, how much memory
does each student's cgroup reach.

Each student (a Unix user of their own, removed at the end) logs in (a token against
the password, REST), starts their server, and runs the chapters in sequence, each in a
new kernel of that server, as the three-student test runs chapter 00
(``hub.client.Kernel.run_notebook``: the chapter test's parameters, local JVMs, a graded
chapter's reference solution); the students run at once. Per student per chapter: the
verdict from the results file the chapter wrote (read through the contents API), the
wall time, the cgroup's peak (reset before each chapter) and the peak PSS/RSS of every
process of the student's uid (sampled each second). Then the instructor's view over the
class's homes, a summary, and a check that nothing of any student is left. Prints
figures, asserts nothing. Run as root, alone:

    ../shared/tools/heavy .venv/bin/python bench/hub_course.py --students 3 --chapters 00 02

``--save results/classroom-plan`` keeps each chapter's peaks for ``make classroom-plan``
(its memory limit and seats then cover the heaviest chapter measured).
"""

from __future__ import annotations

import argparse
import os
import pwd
import secrets
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil

from deliverylab.classroom.course import run as course
from deliverylab.classroom.hub import course as hc
from deliverylab.classroom.hub.client import Student
from deliverylab.classroom.hub.host import install_proxy, prepare_cache
from deliverylab.classroom.hub.hub import Hub
from deliverylab.classroom.hub.limits import Limits, student_dirs
from deliverylab.classroom.hub.network import NETNS_DIR
from deliverylab.classroom.hub.settings import HubSettings
from deliverylab.classroom.hub.users import processes_of
from deliverylab.classroom.instructor import view as instructor
from deliverylab.classroom.sizing.measure import Memory, Sampler, total_memory
from deliverylab.errors import LabError, bad_value
from deliverylab.process.ports import free_ports
from deliverylab.runtime.profile import PROFILES
from deliverylab.waiting import verdict_within

ROOT = Path(__file__).resolve().parents[1]
NAMES = ("ann", "ben", "cat", "dan", "eve", "fay", "gus", "hal", "ivy", "jon")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=3,
                        help=f"how many at once (1-{len(NAMES)}; default 3)")
    parser.add_argument("--chapters", nargs="+", default=["00", "02"],
                        help="chapter numbers (or names), run in this order by each "
                        "student (default: 00 02)")
    parser.add_argument("--mem-limit-gb", type=float, default=3.0,
                        help="each student's cgroup cap (default 3, as the hub test)")
    parser.add_argument("--profile", choices=list(PROFILES), default="light",
                        help="the student profile every server runs with (default light, "
                        "as `make classroom`)")
    parser.add_argument("--save", type=Path, default=None, metavar="FOLDER",
                        help="merge each chapter's largest per-student peaks into "
                        "FOLDER/chapters-<profile>.json, which `make classroom-plan` "
                        "reads (e.g. results/classroom-plan; default: save nothing)")
    args = parser.parse_args(argv)
    if not 1 <= args.students <= len(NAMES):
        raise bad_value("--students", args.students, f"1 to {len(NAMES)}")
    args.chapters = hc.select_chapters(args.chapters)
    return args


def uid_memory(uid: int) -> tuple[Memory, int]:
    """The summed memory of every live process of ``uid`` and how many were read: a
    student's server, kernels, brokers, JVMs, reapers, whatever session they sit in."""
    return total_memory(processes_of(uid))


def server_pids(uid: int) -> set[int]:
    out = set()
    for pid in processes_of(uid):
        try:
            if "jupyterhub.singleuser" in " ".join(psutil.Process(pid).cmdline()):
                out.add(pid)
        except psutil.Error:
            continue
    return out


def left_after(uid: int, keep: set[int], timeout: float = 60.0) -> list[str]:
    """The student's processes besides the server still there ``timeout`` s after the
    kernel's shutdown, as ``pid name`` (the next chapter must start from a clean slate)."""
    pids: list[int] = []  # the last look's: what is left when the time is up

    def none_left() -> bool:
        pids[:] = [p for p in processes_of(uid) if p not in keep]
        return not pids

    # running out of time is the answer here: the report lists what was left
    verdict_within(f"uid {uid}'s processes besides the server to end", none_left, timeout,
                   interval=0.5)
    out = []
    for pid in pids:
        try:
            out.append(f"{pid} {psutil.Process(pid).name()}")
        except psutil.Error:
            continue
    return out


def one_student(name: str, student: Student, uid: int, limits: Limits, chapters: list[str],
                sampler: Sampler, windows: dict) -> list[hc.StudentChapter]:
    student.login()
    student.start_server()
    student.wait_ready()
    server = server_pids(uid)
    rows = []
    for chapter in chapters:
        notebook, results = f"labs/{chapter}.ipynb", hc.results_file(chapter)
        student.delete(results)  # never a previous run's verdict
        baseline = limits.usage_bytes()
        limits.reset_peak()
        start = time.monotonic()
        error = kernel = None
        try:
            kernel = student.kernel(notebook)
            kernel.run_notebook(notebook, hc.chapter_parameters(chapter),
                                timeout=course.CELL_TIMEOUT)
        except Exception as exc:  # a cell's error, a dead kernel, a timeout: reported
            error = hc.first_line(exc)
        wall = time.monotonic() - start
        if kernel is not None:
            try:
                kernel.shutdown()
            except Exception as exc:
                error = error or f"kernel shutdown: {hc.first_line(exc)}"
        left = left_after(uid, server)
        end = time.monotonic()
        windows[(name, chapter)] = (start - sampler.t0, end - sampler.t0)
        text, unread = hc.read_results(student.file_text, results)
        row = hc.StudentChapter(
            name, hc.chapter_run(chapter, wall, text, error or unread),
            limits.peak_bytes(),
            hc.window_peak(sampler.samples, name, start - sampler.t0, end - sampler.t0),
            left, baseline)
        print(f"[{name}] {chapter}: {'held' if row.held else 'FAILED'} in {wall:.0f} s; "
              f"cgroup peak {hc.mib(row.cgroup_peak)} MiB"
              + (f"  << {row.note}" if row.note else ""), flush=True)
        rows.append(row)
    return rows


def instructors_view(settings: HubSettings) -> None:
    """The instructor's view over the class's homes, as ``make classroom`` lays them out."""
    from deliverylab.spark import session

    homes = [settings.home(n) for n in settings.students]
    try:
        view = instructor.tables(instructor.collect(homes, prefix=settings.prefix))
    finally:
        session.stop()
    print("\n== the instructor's view (classroom/instructor/view.py) ==")
    print(view.progress.to_string())
    if len(view.grades):
        print("\ngraded exercises:\n" + view.grades.to_string(index=False))
    if len(view.hardest_checks):
        print("\nchecks that did not hold:\n" + view.hardest_checks.to_string(index=False))
    for line in view.collected.problems:
        print(f"could not read: {line}")


def left_behind(settings: HubSettings, uids: dict[str, int]) -> list[str]:
    """What of the class outlived the hub's stop: processes of the students' uids, their
    users, homes, cgroups, network namespaces, the hub's state folder."""
    out = []
    for name, uid in uids.items():
        unix = settings.unix_name(name)
        if pids := processes_of(uid):
            out.append(f"{name}: processes of uid {uid}: {pids}")
        try:
            pwd.getpwnam(unix)
            out.append(f"{name}: Unix user {unix}")
        except KeyError:
            pass
        if settings.home(name).exists():
            out.append(f"{name}: home {settings.home(name)}")
        out += [f"{name}: cgroup {d}" for d in student_dirs(unix) if d.exists()]
        if (NETNS_DIR / unix).exists():
            out.append(f"{name}: network namespace {unix}")
    if Path(settings.state).exists():
        out.append(f"the hub's state {settings.state}")
    return out


def main(argv: list[str] | None = None) -> int:
    try:
        args = parse_args(argv)
    except LabError as exc:
        print(f"hub_course: {exc}", file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print("hub_course: run it as root (the hub creates a Unix user per student)",
              file=sys.stderr)
        return 2
    ratio = [c for c in args.chapters if c in hc.RATIO_CHAPTERS]
    if ratio and args.students > 1:
        print(f"note: {', '.join(ratio)}'s claim is a throughput ratio (CI runs it alone): "
              f"beside {args.students - 1} other students its ratios weigh the host's "
              "load, and may fail for that", flush=True)
    cache, chp = prepare_cache(), install_proxy()
    prefix = f"dlc{secrets.token_hex(2)}-"
    port, hub_port, api_port, board_port = free_ports(4)
    names = list(NAMES[: args.students])
    settings = HubSettings(students=names, password=secrets.token_urlsafe(12),
                                  state=str(ROOT / "build" / f"bench-hub-{prefix[:-1]}"),
                                  port=port, hub_port=hub_port, proxy_api_port=api_port,
                                  dashboard_port=board_port,
                                  prefix=prefix, cache=str(cache), chp=str(chp),
                                  mem_limit_gb=args.mem_limit_gb, profile=args.profile)
    print(f"{len(names)} students ({', '.join(names)}), chapters {' '.join(args.chapters)}, "
          f"profile {settings.profile}, cgroup cap {args.mem_limit_gb} GB, "
          f"{os.cpu_count()} cores", flush=True)
    hub = Hub(settings, ephemeral=True)
    uids: dict[str, int] = {}
    rows: list[hc.StudentChapter] = []
    windows: dict[tuple[str, str], tuple[float, float]] = {}
    t0 = time.monotonic()
    try:
        hub.start()
        uids = {n: pwd.getpwnam(settings.unix_name(n)).pw_uid for n in names}
        limits = {n: Limits(settings.unix_name(n), int(args.mem_limit_gb * 2**30), None)
                  for n in names}
        with Sampler(uids, interval=1.0, measure=uid_memory) as sampler, \
                ThreadPoolExecutor(len(names)) as pool:
            futures = {n: pool.submit(one_student, n, Student(settings.url, n,
                                                              settings.password),
                                      uids[n], limits[n], args.chapters, sampler, windows)
                       for n in names}
            for name, future in futures.items():
                try:
                    rows += future.result()
                except Exception as exc:  # the student stays in the table, FAILED
                    why = f"failed before its chapters ended: {hc.first_line(exc)}"
                    print(f"[{name}] {why}")
                    rows += hc.never_ran(name, args.chapters, why)
        wall = time.monotonic() - t0
        print(f"\n== per student per chapter ({wall:.0f} s from the hub's start) ==")
        print(hc.summary_table(rows))
        print("\n" + hc.chapter_summary(rows))
        for chapter in args.chapters:
            both = hc.overlap([w for (n, c), w in windows.items() if c == chapter])
            peak = both and hc.class_peak(sampler.samples, *both)
            if peak:
                print(f"{chapter}, all {len(names)} students in it at once "
                      f"({both[1] - both[0]:.0f} s): the class's peak PSS "
                      f"{peak.pss / 2**30:.2f} GB ({peak.pss / len(names) / 2**30:.2f} GB "
                      f"a student), its RSS then {peak.rss / 2**30:.2f} GB")
        if args.save is not None and rows:
            path = hc.save_peaks(args.save, settings.profile,
                                 hc.chapter_peaks(rows, len(names)))
            print(f"\nsaved each chapter's peaks for make classroom-plan: {path}")
        instructors_view(settings)
    finally:
        try:
            hub.stop(remove_users=True)
        except LabError as exc:
            print(f"stopping the hub: {exc}")
        shutil.rmtree(settings.state, ignore_errors=True)
    left = left_behind(settings, uids)
    print("\nleft behind after the hub's stop: "
          + ("nothing (no process of the students' uids "
             f"{sorted(uids.values())}, no user, home, cgroup or state folder)"
             if not left else "\n  " + "\n  ".join(left)))
    print(f"held: {sum(r.held for r in rows)}/{len(names) * len(args.chapters)} "
          f"student-chapters; {time.monotonic() - t0:.0f} s in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
