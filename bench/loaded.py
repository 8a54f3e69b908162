"""Claims on a loaded machine: the project's own tests, run with CPU hogs beside them.

Run through the heavy queue (it starts clusters, and the hogs take both cores)::

    /work/shared/tools/heavy .venv/bin/python bench/loaded.py --hogs 2 --repeat 50
    /work/shared/tools/heavy .venv/bin/python bench/loaded.py --hogs 2 \
        "tests/labs/test_chapters.py::test_chapter_demonstrates_its_claim[02b_consumer_groups]"

Why a bench and not more of ``make test``: the every-time tests (chapter 01's recipes,
02's lost ack, 09's reproductions) show each outcome 3-5 times per ``make test`` on a
machine the suite itself loads; whether an outcome holds 50 times in a row with two
CPU-bound hogs beside it is a question for a run that takes an hour, not for CI. The
selection runs with ``DELIVERYLAB_REPEAT=N`` (the every-time tests read it), the hogs
are ``stress-ng --cpu HOGS`` (bench/cpu_load.py), and the 1-minute load average is
sampled throughout and printed beside pytest's own summary. A chapter run records the
timing margins its claims rest on (its results' ``observed["margins"]``, e.g. 02b's
eviction against its time-boxed stall); each chapter run of the selection has them
printed here, so a margin a loaded machine eats into is seen before it turns into a
failure. Exit status: pytest's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from cpu_load import loaded

ROOT = Path(__file__).resolve().parents[1]
#: The tests whose claim is "every time": what a loaded machine must not break.
EVERY_TIME = ["tests/integration/chapters/at_most_once/test_recipes.py",
              "tests/integration/chapters/at_least_once/test_lost_ack.py",
              "tests/integration/chapters/kafka_bugs/test_reproductions.py"]


def print_margins(since: float) -> None:
    """The margins of every chapter result written by this run (test-artifacts/labs)."""
    for path in sorted((ROOT / "test-artifacts" / "labs").glob("*.json")):
        if path.stat().st_mtime < since:
            continue
        margins = json.loads(path.read_text()).get("observed", {}).get("margins")
        if margins:
            print(f"margins of {path.stem}:")
            for what, seconds in margins.items():
                print(f"  {what:<52} {seconds}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tests", nargs="*", default=EVERY_TIME,
                    help="pytest selection (default: the every-time tests)")
    ap.add_argument("--hogs", type=int, default=2, help="stress-ng CPU hogs (issue 41: 2)")
    ap.add_argument("--repeat", type=int, default=50,
                    help="DELIVERYLAB_REPEAT: how often each every-time test shows its outcome")
    args, extra = ap.parse_known_args()  # the rest is pytest's (-s, -k ...)
    if args.hogs < 0 or args.repeat < 1:
        raise SystemExit(f"bad --hogs {args.hogs} or --repeat {args.repeat}: hogs >= 0, "
                         "repeat >= 1")
    env = {**os.environ, "DELIVERYLAB_REPEAT": str(args.repeat),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "lib"),
                                                       os.environ.get("PYTHONPATH")]))}
    print(f"{os.cpu_count()} cores, load average at start {os.getloadavg()[0]:.2f}; "
          f"{args.hogs} CPU hog(s); every-time tests x{args.repeat}", flush=True)
    t0, started = time.monotonic(), time.time()
    with loaded(args.hogs) as samples:
        code = subprocess.call([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                                "-q", "-rfE", "--timeout", str(600 + 60 * args.repeat),
                                *extra, *args.tests], cwd=ROOT, env=env)
    took = time.monotonic() - t0
    print_margins(started)
    if samples:
        print(f"load average during the run: median {statistics.median(samples):.2f}, "
              f"min {min(samples):.2f}, max {max(samples):.2f} ({len(samples)} samples)")
    print(f"{'PASSED' if code == 0 else f'FAILED (pytest exit {code})'} in {took:.0f} s "
          f"with {args.hogs} hog(s), repeat {args.repeat}")
    return code


if __name__ == "__main__":
    sys.exit(main())
