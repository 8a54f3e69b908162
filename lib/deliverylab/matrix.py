"""The anomaly matrix: every mode under every fault, many seeds, one table.

``python -m deliverylab.matrix --seeds 20 --values 10000`` (``make matrix``) runs the
full course claim; the test suite runs a small one. Each cell says in how many runs each
anomaly appeared, in how many the mode's promise held (``valid``: nothing outside
``mode.allowed_under(fault)``), and whether every run matched the course's claim for
that cell (:data:`deliverylab.modes.CLAIMS`).

Two processing stages fill it (``--stages python,spark``): the Python loop, one row per
delivery mode under the registry's scenario faults; and chapter 05's Spark query, one
row per sink (``spark/kafka``, ``spark/files``...) under the registry's Spark crashes,
held to :data:`deliverylab.scenario.SPARK_CLAIMS` (Kafka sink: the replay is exactly
the batch ``offsets/N`` predicted; exactly-once sinks: nothing twice).

For chapter 09: :func:`load` reads the results file back, :func:`failures` names the
cells that did not hold, and :func:`~deliverylab.notebook.plots.heatmap` draws k/n runs
per anomaly per cell, with Jepsen's anomaly names (:data:`JEPSEN`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import checker as C
from .cluster import Cluster
from .errors import BadValue, bad_value, command_failed
from .faults import check_names
from .modes import MODES
from .modes import mode as get_mode
from .scenario import FAULTS, SPARK_FAULTS, STAGES, RunResult, Scenario, spark_row
from .spark.query import MAX_OFFSETS, SINKS
from .spark.session import stop as stop_spark

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

#: The Checker's anomalies under the names Jepsen's Kafka analyses give them (lost-write,
#: duplicate, G1a aborted read, nonmonotonic-send, unseen); "(pipeline)" marks the
#: consume-transform-produce check between input and output topic.
JEPSEN: dict[str, str] = {
    C.LOST: "lost write",
    C.DUPLICATES: "duplicate",
    C.ABORTED_READS: "aborted read (G1a)",
    C.REORDERED: "nonmonotonic send",
    C.UNEXPECTED: "unexpected (never sent)",
    C.PIPELINE_MISSING: "lost write (pipeline)",
    C.PIPELINE_EXTRA: "duplicate (pipeline)",
    C.UNSEEN: "unseen (indefinite)",
}

#: Facts a heatmap shows beside the anomalies: not anomalies (nothing broke a promise),
#: but what the transactional rows teach. Shaded in another color.
FACTS: dict[str, str] = {
    "aborted_visible_uncommitted": "aborted, seen by read_uncommitted",
    "zombie_fenced": "zombie fenced",
}

#: What each Spark row claims, in one phrase for the table.
SPARK_CLAIM_TEXT: dict[str, str] = {
    "kafka": "at-least-once: extra records == predicted batch",
    "files": "exactly-once for Spark readers: 0 extra",
    "database": "exactly-once: 0 extra",
    "kafka_txn": "exactly-once for read_committed: 0 extra, aborted attempt visible "
                 "to read_uncommitted",
}

#: Defaults of the Spark stage: few values, 10 offsets a batch (a Spark run costs ~10 s
#: of micro-batches whatever the values, and a crash needs only a few batches).
SPARK_VALUES = 40


# --- what to run ------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """The cells a matrix run fills: (stage, mode or sink, fault) for every choice."""

    stages: tuple[str, ...]
    modes: tuple[str, ...]
    sinks: tuple[str, ...]
    faults: tuple[str, ...]  # the Python stage's
    spark_faults: tuple[str, ...]

    def cells(self) -> list[tuple[str, str, str]]:
        out = []
        if "python" in self.stages:
            out += [("python", m, f) for m in self.modes for f in self.faults]
        if "spark" in self.stages:
            out += [("spark", s, f) for s in self.sinks for f in self.spark_faults]
        return out

    def rows(self) -> list[str]:
        """The matrix rows, as :class:`RunResult.mode` names them."""
        return list(dict.fromkeys(m if stage == "python" else spark_row(m)
                                  for stage, m, _ in self.cells()))


def _items(text: str | Iterable[str]) -> list[str]:
    items = text.split(",") if isinstance(text, str) else list(text)
    return [i.strip() for i in items if i.strip()]


def plan(stages: str | Iterable[str] = STAGES, modes: str | Iterable[str] = tuple(MODES),
         sinks: str | Iterable[str] = tuple(SINKS),
         faults: str | Iterable[str] | None = None) -> Plan:
    """Check the choices (comma-separated strings or lists) and say what will run.

    ``faults`` (default: each stage's own) are registry names; each stage runs those it
    accepts -- the Python stage the scenario faults, the Spark stage its two crashes --
    and a chosen stage left with none is refused, as is any name neither stage runs.
    """
    chosen = _items(stages)
    for s in chosen:
        if s not in STAGES:
            raise bad_value("--stages item", s, "one of " + ", ".join(STAGES))
    if not chosen:
        raise bad_value("--stages", stages, "one or more of " + ", ".join(STAGES))
    mode_names = tuple(get_mode(m).name for m in _items(modes))
    for s in _items(sinks):
        if s not in SINKS:
            raise bad_value("--sinks item", s, "one of " + ", ".join(SINKS))
    python_ok = FAULTS[1:] if "python" in chosen else ()
    spark_ok = SPARK_FAULTS[1:] if "spark" in chosen else ()
    if faults is None:
        py_faults, sp_faults = list(python_ok), list(spark_ok)
    else:
        names = check_names(_items(faults), [*python_ok, *spark_ok], "--faults item")
        py_faults = [f for f in names if f in python_ok]
        sp_faults = [f for f in names if f in spark_ok]
    for stage, got, accepted in (("python", py_faults, FAULTS[1:]),
                                 ("spark", sp_faults, SPARK_FAULTS[1:])):
        if stage in chosen and not got:
            raise bad_value("--faults", ",".join(_items(faults or [])),
                            f"at least one fault of the {stage} stage too "
                            f"({', '.join(accepted)})")
    if "python" in chosen and not mode_names:
        raise bad_value("--modes", modes, "one or more of " + ", ".join(MODES))
    if "spark" in chosen and not _items(sinks):
        raise bad_value("--sinks", sinks, "one or more of " + ", ".join(SINKS))
    return Plan(tuple(chosen), mode_names, tuple(_items(sinks)), tuple(py_faults),
                tuple(sp_faults))


def run_matrix(cluster: Any, modes: Iterable[str] = tuple(MODES),
               faults: Iterable[str] = FAULTS[1:], seeds: Iterable[int] = (1,),
               values: int = 200,
               progress: Callable[[RunResult, int, int], None] | None = None,
               partitions: int = 3, txn_size: int | None = None,
               commit_interval_ms: float | None = None, *,
               stages: Iterable[str] = ("python",), sinks: Iterable[str] = tuple(SINKS),
               spark_faults: Iterable[str] = SPARK_FAULTS[1:],
               spark_values: int = SPARK_VALUES, max_offsets: int = MAX_OFFSETS,
               master: str | None = None) -> list[RunResult]:
    """Run every (row, fault, seed) on one cluster, healed between runs.

    ``stages`` picks the rows: ``"python"`` -- every mode under ``faults``; ``"spark"``
    -- every sink of the Spark query under ``spark_faults``, ``spark_values`` values
    written at-least-once, ``max_offsets`` offsets per batch, crashed after a seeded
    batch (Spark runs share the kernel's one Spark session).
    """
    seeds = list(seeds)
    stages = tuple(stages)
    # The same checks as the command line: a misspelt stage or name is one clear error,
    # never a matrix that silently runs nothing.
    chosen = plan(stages, modes, sinks,
                  [*(faults if "python" in stages else ()),
                   *(spark_faults if "spark" in stages else ())])
    cells = [(stage, m, f, s) for stage, m, f in chosen.cells() for s in seeds]
    runs = []
    for i, (stage, m, f, s) in enumerate(cells, 1):
        if stage == "python":
            scenario = Scenario(m, f, values=values, partitions=partitions,
                                txn_size=txn_size, commit_interval_ms=commit_interval_ms)
        else:
            scenario = Scenario("AT_LEAST_ONCE", f, values=spark_values,
                                partitions=partitions, stage="spark", sink=m,
                                max_offsets=max_offsets, master=master)
        run = scenario.run(s, cluster)
        run.history = None  # keep memory flat over hundreds of runs
        runs.append(run)
        if progress is not None:
            progress(run, i, len(cells))
    return runs


# --- the table ------------------------------------------------------------------------


def _cells(runs: Iterable[RunResult]) -> dict[tuple[str, str], list[RunResult]]:
    cells: dict[tuple[str, str], list[RunResult]] = {}
    for run in runs:
        cells.setdefault((run.mode, run.fault), []).append(run)
    return cells


def table(runs: list[RunResult]) -> str:
    """One row per cell: ``k/n`` = anomaly seen in k of n runs; ``ok`` = as expected.

    Spark rows get a second section: per seed, the records the replay wrote beyond one
    per value beside the size the checkpoint predicted, and the row's claim.
    """
    head = f"{'mode':<16} {'fault':<16}" + "".join(f"{c:>10}" for c in COLUMNS) + \
        f"{'valid':>8}  claim"
    lines = [head, "-" * len(head)]
    for (mode, fault), group in _cells(runs).items():
        n = len(group)
        row = f"{mode:<16} {fault:<16}"
        for name in COLUMNS.values():
            k = sum(1 for r in group if r.observed().get(name, 0) > 0)
            row += f"{f'{k}/{n}':>10}"
        valid = sum(1 for r in group if r.result.valid)
        row += f"{f'{valid}/{n}':>8}  " + _verdict(group)
        lines.append(row)
    spark = spark_table(runs)
    return "\n".join(lines) + ("\n\n" + spark if spark else "")


def _verdict(group: list[RunResult]) -> str:
    failures = [msg for r in group for msg in r.failures()]
    return "ok" if not failures else f"FAILED ({len(failures)})"


def spark_table(runs: list[RunResult]) -> str:
    """The Spark rows, one line per cell: replayed vs predicted records, per seed."""
    cells = {k: g for k, g in _cells(runs).items() if g[0].stage == "spark"}
    if not cells:
        return ""
    head = (f"{'spark row':<16} {'fault':<12} {'seeds':<10} {'crash batch':<12} "
            f"{'extra':<12} {'predicted':<12} claim")
    lines = [head, "-" * len(head)]

    def per_seed(group: list[RunResult], name: str) -> str:
        return ",".join(str(r.facts.get(name, "-")) for r in group)

    for (row, fault), group in cells.items():
        sink = row.split("/", 1)[1]
        lines.append(
            f"{row:<16} {fault:<12} {','.join(str(r.seed) for r in group):<10} "
            f"{per_seed(group, 'crashed_batch'):<12} {per_seed(group, 'extra_records'):<12} "
            f"{per_seed(group, 'predicted'):<12} {SPARK_CLAIM_TEXT.get(sink, '?')}: "
            f"{_verdict(group)}")
    return "\n".join(lines)


# --- results file -----------------------------------------------------------------------


def save(runs: Iterable[RunResult], path: str | Path) -> Path:
    """Write the runs as ``make matrix`` does (a JSON list of :meth:`RunResult.to_dict`)."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps([r.to_dict() for r in runs], indent=1))
    return out


def load(path: str | Path = "results/matrix.json") -> list[RunResult]:
    """The runs of a results file written by ``make matrix`` (or :func:`save`), without
    their Histories: enough for :func:`table` and the heatmap."""
    where = Path(path)
    if not where.is_file():
        raise bad_value("path", str(path), "a results file written by `make matrix` "
                        "(python -m deliverylab.matrix --out PATH)")
    try:
        data = json.loads(where.read_text())
        if not isinstance(data, list):
            raise TypeError("not a list")
        return [RunResult.from_dict(item) for item in data]
    except (ValueError, TypeError, KeyError) as exc:
        raise bad_value("path", str(path), f"a JSON list of matrix runs ({exc})") from None


# --- the cells ---------------------------------------------------------------------------


def counts(runs: Iterable[RunResult]) -> dict[tuple[str, str], dict[str, Any]]:
    """Per (row, fault) cell: ``n`` runs, ``k[anomaly]`` runs that showed it, ``broken``
    anomalies some run was not allowed, ``held`` runs matching the cell's claim."""
    out = {}
    for cell, group in _cells(runs).items():
        out[cell] = {
            "n": len(group),
            "k": {a: sum(1 for r in group if r.observed().get(a, 0) > 0)
                  for a in (*C.ANOMALIES, *FACTS)},
            "broken": {a for r in group for a in r.result.violations()},
            "held": sum(1 for r in group if not r.failures()),
        }
    return out


def failures(cells: dict[tuple[str, str], dict[str, Any]],
             ) -> tuple[dict[str, str], dict[str, list[str]]]:
    """The cells of :func:`counts` that a chapter must name: ``not_held`` (``"row / fault"``
    -> ``"held/n"``, some run did not match the cell's claim) and ``broken`` (``"row /
    fault"`` -> the anomalies the row's promise does not allow that some run showed).
    Both empty: every cell held its claim in every run."""
    not_held = {f"{row} / {fault}": f"{c['held']}/{c['n']}"
                for (row, fault), c in cells.items() if c["held"] < c["n"]}
    broken = {f"{row} / {fault}": sorted(c["broken"])
              for (row, fault), c in cells.items() if c["broken"]}
    return not_held, broken


# --- command line -------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--values", type=int, default=10000,
                        help="values per Python-stage run")
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--txn-size", type=int, default=None,
                        help="transactional modes: most values per transaction")
    parser.add_argument("--commit-interval-ms", type=float, default=None,
                        help="transactional modes: commit a transaction this old")
    parser.add_argument("--stages", default=",".join(STAGES),
                        help="processing stages: python (one row per mode), spark (one "
                             "row per sink)")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--sinks", default=",".join(SINKS), help="Spark stage's sinks")
    parser.add_argument("--faults", default=None,
                        help="registry names (default: every fault of each stage: "
                             f"{','.join(FAULTS[1:])} / {','.join(SPARK_FAULTS[1:])})")
    parser.add_argument("--spark-values", type=int, default=SPARK_VALUES,
                        help="values per Spark-stage run")
    parser.add_argument("--max-offsets", type=int, default=MAX_OFFSETS,
                        help="Spark stage: offsets per micro-batch")
    parser.add_argument("--out", default="results/matrix.json")
    args = parser.parse_args(argv)
    try:  # one clear line for an unknown mode, sink, stage or fault, not a traceback
        get_mode("TRANSACTIONAL").with_commits(args.txn_size, args.commit_interval_ms)
        chosen = plan(args.stages, args.modes, args.sinks, args.faults)
        if "spark" in chosen.stages:  # the Spark stage's own checks, before any cluster
            Scenario("AT_LEAST_ONCE", "none", values=args.spark_values, stage="spark",
                     max_offsets=args.max_offsets)
    except BadValue as exc:
        return command_failed("matrix", exc, 2)
    t0 = time.monotonic()

    def progress(run: RunResult, i: int, total: int) -> None:
        mark = "ok" if not run.failures() else "UNEXPECTED"
        print(f"[{i}/{total}] {run.mode} {run.fault} seed={run.seed} "
              f"{run.seconds:.1f}s {mark}", file=sys.stderr, flush=True)


    try:
        with Cluster.start(brokers=args.brokers, proxy=True) as cluster:
            runs = run_matrix(cluster, chosen.modes, chosen.faults,
                              range(1, args.seeds + 1), args.values, progress,
                              args.partitions, args.txn_size, args.commit_interval_ms,
                              stages=chosen.stages, sinks=chosen.sinks,
                              spark_faults=chosen.spark_faults,
                              spark_values=args.spark_values, max_offsets=args.max_offsets)
    finally:
        if "spark" in chosen.stages:
            stop_spark()
    print(table(runs))
    failures = [msg for r in runs for msg in r.failures()]
    for msg in failures:
        print("unexpected:", msg)
    print(f"{len(runs)} runs in {time.monotonic() - t0:.0f}s")
    save(runs, args.out)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
