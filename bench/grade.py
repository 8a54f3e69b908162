"""The grader's figures: a student's quick grade, and the stability of the calibration.

Run (through the heavy queue: it starts a cluster)::

    /work/shared/tools/heavy .venv/bin/python bench/grade.py --quick 02
    /work/shared/tools/heavy .venv/bin/python bench/grade.py --seeds 20 02 04 06
    /work/shared/tools/heavy .venv/bin/python bench/grade.py --seeds 20 04 --only wrong_off_by_one

``--quick``: what a student's ``python -m deliverylab.grade NN`` costs (its own
one-broker cluster, each fault x its searched crash points, 1 seed): wall time, cluster
start included, and time per run. Otherwise, on one cluster: each correct solution over
every fault x N seeds and each known-wrong solution over the fault of the cell it names
(until a run fails that cell, per seed); prints how many seeds each passed or was caught
on, the time per run, and the table for the README. The issue's goals: a quick grade within
2 minutes; the reference passes N/N on every cell, each wrong solution fails its cell
on at least 19 of 20 seeds. Asserts nothing: it prints figures.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path


def quick(exercise: str) -> None:
    from deliverylab.grade import exercise as get

    ex = get(exercise)
    t0 = time.monotonic()
    report = __import__("deliverylab").grade(ex.id, ex.reference, seeds=1, show=False)
    wall = time.monotonic() - t0
    per = [r.seconds for r in report.runs]
    print(f"quick grade of {ex.id} ({len(report.runs)} runs: {len(report.faults)} faults x "
          f"the searched crash points, 1 seed): {wall:.0f} s wall, cluster start included; "
          f"per run "
          f"{statistics.mean(per):.1f} s mean, {max(per):.1f} s max; "
          f"{report.closing()}")
    for f in report.faults:
        runs = [r.seconds for r in report.runs if r.fault == f]
        print(f"  {f:<15} {statistics.mean(runs):5.1f} s per run ("
              + ", ".join(f"{s:.1f}" for s in runs) + ")")


def stability(exercises: list[str], seeds: int, first: int = 1,
              only: list[str] | None = None) -> None:
    """Each correct solution over every fault x point x seed, each wrong one over its
    cell's fault until a run fails the cell (the calibration's question: is it caught
    on this seed?); then the table for the README, a row per solution. ``only`` (names
    as the table prints them: ``reference``, ``wrong_no_dedup``) grades those alone, so
    that a table of hours can be taken in parts, a row complete in each."""
    import deliverylab as dl
    from deliverylab.cluster import Cluster
    from deliverylab.grade import exercise as get
    from deliverylab.grade.exercises import JUDGED, declared_failure

    seed_list = list(range(first, first + seeds))
    rows: list[tuple[str, str, str, str, str]] = []
    from deliverylab.grade.spark_server import DriverServer

    # One cluster and one Spark driver server (05: started only if a run asks) for all.
    cluster, drivers = Cluster.start(brokers=1, proxy=True, backend="local"), DriverServer()
    try:
        for name in exercises:
            ex = get(name)
            print(f"exercise {ex.id} ({ex.name}), seeds {seed_list[0]}..{seed_list[-1]}:",
                  flush=True)
            correct = {w: p for w, p in ex.correct().items() if only is None or w in only}
            wrong = {w: p for w, p in ex.wrong().items()
                     if only is None or f"wrong_{w}" in only}
            for what, path in correct.items():
                rep = dl.grade(ex.id, path, seed_list=seed_list, cluster=cluster,
                               drivers=drivers, show=False)
                # A seed passes when every run of it (each fault, each point) was judged
                # and passed: a run not judged is no pass.
                good = [s for s in seed_list if all(r.ok and r.state == JUDGED
                                                    for r in rep.runs if r.seed == s)]
                per = statistics.mean(r.seconds for r in rep.runs)
                print(f"  {what:<32} passed {len(good)}/{len(seed_list)} seeds; "
                      f"{rep.closing()} ({len(rep.runs)} runs, {per:.1f} s per run)",
                      flush=True)
                for c in rep.cells():
                    if not c.ok:
                        print(f"    {c.fault:<15} x {c.prop.name:<18} {c.state}")
                rows.append((ex.id, what, "every cell", f"{len(good)}/{len(seed_list)} "
                             "seeds passed", f"{len(rep.runs)} runs, {per:.1f} s each"))
            for what, path in wrong.items():
                declared = declared_failure(path)  # every point searched, not only its own
                fault, prop = declared.fault, declared.prop
                rep = dl.grade(ex.id, path, faults=[fault], seed_list=seed_list,
                               cluster=cluster, drivers=drivers, show=False,
                               until_fails=prop)
                cell = rep.cell(fault, prop)
                per = statistics.mean(r.seconds for r in rep.runs)
                caught = len({r.seed for r in cell.failing})
                at = sorted({r.point for r in cell.failing if r.point})
                print(f"  wrong_{what:<26} {fault} x {prop}: caught on {caught}/"
                      f"{len(seed_list)} seeds ({len(cell.failing)}/{len(cell.runs)} runs, "
                      f"{per:.1f} s per run){' at ' if at else ''}{', '.join(at)} "
                      f"(it declares {declared.point or 'no point'})", flush=True)
                rows.append((ex.id, f"wrong_{what}", f"{fault} x {prop}",
                             f"caught on {caught}/{len(seed_list)} seeds",
                             f"{len(rep.runs)} runs, {per:.1f} s each"))
    finally:
        drivers.close()
        cluster.stop()
    print(f"\n| exercise | solution | cell | result over seeds {seed_list[0]}..{seed_list[-1]}"
          " | runs |\n|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("exercises", nargs="+")
    p.add_argument("--seeds", type=int, default=20)
    p.add_argument("--first", type=int, default=1,
                   help="first seed (a long run in parts: --first 11 --seeds 10)")
    p.add_argument("--only", default="",
                   help="comma-separated solutions as the table names them "
                        "(reference,wrong_no_dedup): a table in parts, a row at a time")
    p.add_argument("--quick", action="store_true")
    args = p.parse_args(argv)
    only = [w for w in args.only.split(",") if w] or None
    if only and not args.quick:
        from deliverylab.grade import exercise as get
        known = {w for e in args.exercises for w in
                 [*get(e).correct(), *(f"wrong_{n}" for n in get(e).wrong())]}
        unknown = sorted(set(only) - known)
        if unknown:
            p.error(f"--only {','.join(unknown)}: not a solution of exercise "
                    f"{' '.join(args.exercises)}; one of {', '.join(sorted(known))}")
    if args.quick:
        for name in args.exercises:
            quick(name)
    else:
        stability(args.exercises, args.seeds, args.first, only)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))
    sys.exit(main())
