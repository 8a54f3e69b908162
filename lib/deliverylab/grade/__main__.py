"""``python -m deliverylab.grade EXERCISE [SOLUTION.py] [--seeds N | --seed S] ...``

Grades one exercise's solution (default: the student's file in ``labs/exercises``) and
prints the report; ``--json`` writes the result an instructor collects, ``--plots``
saves a timeline per failing cell. The exit code is 0 when every cell passed, 1
otherwise (2 for bad arguments), so a script can grade a class.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import LabError, command_failed
from . import grade
from .exercises import EXERCISES


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    names = ", ".join(f"{e.id} ({e.name})" for e in EXERCISES.values())
    p = argparse.ArgumentParser(prog="python -m deliverylab.grade",
                                description="Grade a solution under the lab's faults.")
    p.add_argument("exercise", help=f"one of {names}")
    p.add_argument("solution", nargs="?", default=None,
                   help="your .py file (default: labs/exercises/<NN>_<name>.py)")
    p.add_argument("--seeds", type=int, default=1,
                   help="seeds 1..N per fault and crash point (default 1: the crash points "
                   "are searched, the seed varies only what depends on timing)")
    p.add_argument("--seed", type=int, action="append", default=None,
                   help="run exactly this seed (repeatable): replays one run")
    p.add_argument("--fault", action="append", default=None,
                   help="run only this fault (repeatable)")
    p.add_argument("--point", action="append", default=None,
                   help="run only this crash point, e.g. flush#2 (repeatable): replays one run")
    p.add_argument("--json", type=Path, default=None, help="write the JSON result here")
    p.add_argument("--plots", type=Path, default=None,
                   help="save a timeline PNG per failing cell in this folder")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        report = grade(args.exercise, args.solution, seeds=args.seeds, faults=args.fault,
                       seed_list=args.seed, out=args.json, points=args.point)
    except LabError as exc:
        return command_failed("error", exc, 2)
    if args.plots is not None:
        args.plots.mkdir(parents=True, exist_ok=True)
        for f in report.failures():
            if f["value"]:
                png = args.plots / f"{report.exercise.id}-{f['fault']}-{f['property']}.png"
                report.plot(f["fault"], f["property"], save=png)
                print(f"timeline: {png}")
    if args.json is not None:
        print(f"result: {args.json}")
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
