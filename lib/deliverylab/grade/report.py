"""The grade report: what a student learns from, and the JSON an instructor collects.

For each cell of fault x property: how many seeds passed. For each failing cell: the
first failing seed, the one command that replays exactly that run, the shortest
excerpt of its History that shows the anomaly (the ops of one value, the commits that
covered it, the faults), a timeline of the run with that value ringed, and a one-line
hint naming the concept (never the answer). A closing line ``N passed, N failed``
counts cells: a cell passes when every seed does.
"""

from __future__ import annotations

import getpass
import hashlib
import json
import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..history import Op
from .exercises import Exercise, Property
from .runner import Run

#: Most History lines one excerpt shows.
EXCERPT_LINES = 14


@dataclass
class Cell:
    """One fault x property cell over the seeds."""

    fault: str
    prop: Property
    runs: list[Run]

    @property
    def passed(self) -> int:
        return sum(r.passed[self.prop.name] for r in self.runs)

    @property
    def failing(self) -> list[Run]:
        return [r for r in self.runs if not r.passed[self.prop.name]]

    @property
    def ok(self) -> bool:
        return not self.failing


def replay_command(exercise: Exercise, solution: Path, fault: str, seed: int) -> str:
    """The one command that replays exactly one run."""
    return ("python -m deliverylab.grade " + exercise.id + " " + shlex.quote(str(solution))
            + f" --fault {fault} --seed {seed}")


def _where(op: Op) -> str:
    if op.partition is None:
        return op.topic or ""
    at = f"@{op.offset}" if op.offset is not None else ""
    return f"{op.topic}/{op.partition}{at}"


def _line(op: Op, topics: tuple[str, str]) -> str:
    text = f"{op.time:7.3f}s  {op.process:<10} {op.kind:<6} {op.outcome:<4}"
    if op.values:
        text += " " + ",".join(op.values)
    where = _where(op)
    if where and op.kind != "commit":
        text += f" at {where}"
    if op.detail:
        text += f"  {op.detail}"
    if op.error:
        text += f"  [{op.error}]"
    # The run's topics by their role: the excerpt is read, not matched.
    return text.replace(topics[0] + "/", "input/").replace(topics[1] + "/", "output/")


def _covers(op: Op, topic: str, partition: int, offset: int) -> bool:
    """Does this commit op's detail (``topic/p@o,...``, maybe after a label such as
    ``commits/3``) move ``partition`` past ``offset``?"""
    for part in (op.detail or "").replace(" ", ",").split(","):
        name, _, rest = part.rpartition("/")
        p, _, o = rest.partition("@")
        if name == topic and p.isdigit() and o.lstrip("-").isdigit():
            if int(p) == partition and int(o) > offset:
                return True
    return False


def anomaly_value(run: Run, prop: Property) -> str | None:
    """The first value that shows ``prop``'s anomaly in ``run`` (None if none does)."""
    if not prop.anomaly:
        return None
    found = run.examples.get(prop.anomaly) or (
        run.result.examples.get(prop.anomaly) if run.result is not None else None) or []
    return found[0]["value"] if found else None


def excerpt(run: Run, prop: Property) -> list[str]:
    """The shortest History excerpt that shows why ``prop`` failed in ``run``.

    For a value's anomaly: every op that carries the value, the first commit of each
    process that read it which moved past its offset, and the faults, in time order.
    For a stage that did not finish: its error output.
    """
    if run.errors and not anomaly_value(run, prop):
        return run.errors[0].splitlines()[-EXCERPT_LINES:]
    value = anomaly_value(run, prop)
    if value is None or run.history is None:
        lines = [f"{k}={v}" for k, v in sorted(run.counts.items()) if v]
        return lines or ["(no anomaly recorded)"]
    ops = list(run.history)
    chosen: list[Op] = [op for op in ops if value in op.values
                        or (op.kind == "fault" and op.fault != "heal")]
    for read in [op for op in ops if op.kind == "poll" and value in op.values]:
        for op in ops:
            if (op.kind == "commit" and op.process == read.process and op.time >= read.time
                    and _covers(op, read.topic or "", read.partition or 0, read.offset or 0)):
                chosen.append(op)
                break
    chosen = sorted(set(chosen), key=lambda op: op.time)
    head = f"value {value} ({prop.anomaly}):"
    lines = [head, *(_line(op, run.topics) for op in chosen[:EXCERPT_LINES])]
    where = run.positions.get(value)
    if where is not None or prop.anomaly in ("pipeline_missing", "pipeline_extra"):
        lines.append(f"  read back afterwards: {', '.join(where or []) or 'nowhere'}")
    return lines


class Report:
    """Every run of one grade, and what to tell the student."""

    def __init__(self, exercise: Exercise, solution: Path, runs: list[Run],
                 seconds: float = 0.0) -> None:
        self.exercise, self.solution, self.runs, self.seconds = exercise, solution, runs, seconds

    @property
    def faults(self) -> list[str]:
        return [f for f in self.exercise.faults if any(r.fault == f for r in self.runs)]

    def cells(self) -> list[Cell]:
        return [Cell(f, p, [r for r in self.runs if r.fault == f])
                for f in self.faults for p in self.exercise.properties]

    def cell(self, fault: str, prop: str) -> Cell:
        for c in self.cells():
            if c.fault == fault and c.prop.name == prop:
                return c
        raise KeyError(f"no cell {fault} x {prop} in this grade")

    @property
    def passed(self) -> int:
        return sum(c.ok for c in self.cells())

    @property
    def failed(self) -> int:
        return sum(not c.ok for c in self.cells())

    def table(self) -> str:
        props = [p.name for p in self.exercise.properties]
        width = max(len(f) for f in [*self.faults, "fault"]) + 2
        cols = [max(len(p), 7) + 2 for p in props]
        head = "".join(p.ljust(w) for p, w in zip(props, cols, strict=True))
        rows = ["fault".ljust(width) + head]
        for f in self.faults:
            line = f.ljust(width)
            for p, w in zip(props, cols, strict=True):
                c = self.cell(f, p)
                mark = "ok" if c.ok else "FAIL"
                line += f"{c.passed}/{len(c.runs)} {mark}".ljust(w)
            rows.append(line)
        return "\n".join(rows)

    def failures(self) -> list[dict[str, Any]]:
        """Each failing cell: its first failing seed, replay, excerpt, hint."""
        out = []
        for c in self.cells():
            if c.ok:
                continue
            run = c.failing[0]
            out.append({"fault": c.fault, "property": c.prop.name, "says": c.prop.says,
                        "seed": run.seed, "failing_seeds": [r.seed for r in c.failing],
                        "replay": replay_command(self.exercise, self.solution, c.fault,
                                                 run.seed),
                        "excerpt": excerpt(run, c.prop), "hint": c.prop.hint_for(c.fault),
                        "value": anomaly_value(run, c.prop)})
        return out

    def closing(self) -> str:
        return f"{self.passed} passed, {self.failed} failed"

    def __str__(self) -> str:
        seeds = sorted({r.seed for r in self.runs})
        parts = [f"Exercise {self.exercise.id} ({self.exercise.name}): {self.solution}",
                 f"{len(self.runs)} runs ({len(self.faults)} faults x seeds "
                 f"{', '.join(map(str, seeds))}) in {self.seconds:.0f} s", "",
                 self.table()]
        for f in self.failures():
            parts += ["", f"FAILED {f['fault']} x {f['property']}: {f['says']}",
                      f"  seeds failing: {', '.join(map(str, f['failing_seeds']))}",
                      f"  replay: {f['replay']}", "  history excerpt (seed "
                      f"{f['seed']}):", *("    " + line for line in f["excerpt"]),
                      f"  hint: {f['hint']}"]
        parts += ["", self.closing()]
        return "\n".join(parts)

    def plot(self, fault: str, prop: str, save: str | Path | None = None) -> Any:
        """The timeline of the first failing run of a cell, its anomalous value ringed."""
        from ..notebook.plots import timeline  # lazy: matplotlib only when a plot is asked for

        cell = self.cell(fault, prop)
        if cell.ok:
            raise ValueError(f"cell {fault} x {prop} passed every seed: nothing to plot")
        run = cell.failing[0]
        value = anomaly_value(run, cell.prop)
        twice = cell.prop.anomaly in ("pipeline_extra", "duplicate_rows")
        kw = ({"duplicates": [value]} if twice else {"lost": [value]}) if value else {}
        return timeline(run.history or [], title=f"{fault} x {prop}, seed {run.seed}: "
                        f"value {value or '-'}", save=save, **kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON result an instructor collects."""
        text = self.solution.read_bytes() if self.solution.exists() else b""
        return {
            "exercise": self.exercise.id, "name": self.exercise.name,
            "student": os.environ.get("JUPYTERHUB_USER") or getpass.getuser(),
            "solution": str(self.solution),
            "solution_sha256": hashlib.sha256(text).hexdigest(),
            "seeds": sorted({r.seed for r in self.runs}),
            "cells": [{"fault": c.fault, "property": c.prop.name, "passed": c.passed,
                       "runs": len(c.runs), "failing_seeds": [r.seed for r in c.failing]}
                      for c in self.cells()],
            "failures": [{k: v for k, v in f.items() if k != "says"}
                         for f in self.failures()],
            "runs": [r.to_dict() for r in self.runs],
            "passed": self.passed, "failed": self.failed, "seconds": round(self.seconds, 1),
        }

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict(), indent=1))
        return path
