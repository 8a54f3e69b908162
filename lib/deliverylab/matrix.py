"""The anomaly matrix: every mode under every fault, many seeds, one table.

``python -m deliverylab.matrix --seeds 20 --values 10000`` (``make matrix``) runs the
full course claim; the test suite runs a small one. Each cell says in how many runs each
anomaly appeared, in how many the mode's promise held (``valid``: nothing outside
``mode.allowed_under(fault)``), and whether every run matched the course's claim for
that cell (:data:`deliverylab.modes.CLAIMS`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from .cluster import Cluster
from .errors import BadValue
from .faults import check_names
from .modes import MODES
from .modes import mode as get_mode
from .scenario import FAULTS, RunResult, Scenario

#: Matrix columns: short heading -> observed count name.
COLUMNS = {
    "lost": "lost",
    "dup": "duplicates",
    "unseen": "unseen",
    "abrt-rd": "aborted_reads",
    "out-miss": "pipeline_missing",
    "out-extra": "pipeline_extra",
    "abrt-vis": "aborted_visible_uncommitted",
    "fenced": "zombie_fenced",
}


def run_matrix(cluster: Cluster, modes: Iterable[str] = tuple(MODES),
               faults: Iterable[str] = FAULTS[1:], seeds: Iterable[int] = (1,),
               values: int = 200,
               progress: Callable[[RunResult, int, int], None] | None = None,
               partitions: int = 3, txn_size: int | None = None,
               commit_interval_ms: float | None = None) -> list[RunResult]:
    """Run every (mode, fault, seed) on one cluster, healed between runs."""
    cells = [(m, f, s) for m in modes for f in faults for s in seeds]
    runs = []
    for i, (m, f, s) in enumerate(cells, 1):
        run = Scenario(m, f, values=values, partitions=partitions, txn_size=txn_size,
                       commit_interval_ms=commit_interval_ms).run(s, cluster)
        run.history = None  # keep memory flat over hundreds of runs
        runs.append(run)
        if progress is not None:
            progress(run, i, len(cells))
    return runs


def table(runs: list[RunResult]) -> str:
    """One row per cell: ``k/n`` = anomaly seen in k of n runs; ``ok`` = as expected."""
    cells: dict[tuple[str, str], list[RunResult]] = {}
    for run in runs:
        cells.setdefault((run.mode, run.fault), []).append(run)
    head = f"{'mode':<14} {'fault':<16}" + "".join(f"{c:>10}" for c in COLUMNS) + \
        f"{'valid':>8}  claim"
    lines = [head, "-" * len(head)]
    for (mode, fault), group in cells.items():
        n = len(group)
        row = f"{mode:<14} {fault:<16}"
        for name in COLUMNS.values():
            k = sum(1 for r in group if r.observed().get(name, 0) > 0)
            row += f"{f'{k}/{n}':>10}"
        valid = sum(1 for r in group if r.result.valid)
        failures = [msg for r in group for msg in r.failures()]
        row += f"{f'{valid}/{n}':>8}  " + ("ok" if not failures else
                                          f"FAILED ({len(failures)})")
        lines.append(row)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--values", type=int, default=10000)
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--txn-size", type=int, default=None,
                        help="transactional modes: most values per transaction")
    parser.add_argument("--commit-interval-ms", type=float, default=None,
                        help="transactional modes: commit a transaction this old")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--faults", default=",".join(FAULTS[1:]))
    parser.add_argument("--out", default="results/matrix.json")
    args = parser.parse_args(argv)
    try:  # one clear line for an unknown mode or fault, not a traceback
        get_mode("TRANSACTIONAL").with_commits(args.txn_size, args.commit_interval_ms)
        modes = [get_mode(m).name for m in args.modes.split(",")]
        faults = check_names(args.faults.split(","), FAULTS[1:], "--faults item")
    except BadValue as exc:
        print(f"matrix: {exc}", file=sys.stderr)
        return 2
    t0 = time.monotonic()

    def progress(run: RunResult, i: int, total: int) -> None:
        mark = "ok" if not run.failures() else "UNEXPECTED"
        print(f"[{i}/{total}] {run.mode} {run.fault} seed={run.seed} "
              f"{run.seconds:.1f}s {mark}", file=sys.stderr, flush=True)

    with Cluster.start(brokers=args.brokers, proxy=True) as cluster:
        runs = run_matrix(cluster, modes, faults, range(1, args.seeds + 1), args.values,
                          progress, args.partitions, args.txn_size,
                          args.commit_interval_ms)
    print(table(runs))
    failures = [msg for r in runs for msg in r.failures()]
    for msg in failures:
        print("unexpected:", msg)
    print(f"{len(runs)} runs in {time.monotonic() - t0:.0f}s")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps([r.to_dict() for r in runs], indent=1))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
