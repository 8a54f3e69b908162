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

from ..history import Op, offsets_in
from .exercises import Exercise, Property
from .runner import Run

#: Most History lines one excerpt shows.
EXCERPT_LINES = 14


def last_words(text: str) -> str:
    """The last line of an error that says what happened: a traceback's last line, not
    the note a kept callback error carries after it ("(raised in your on_commit callback,
    which ...)", :mod:`~deliverylab.grade.callbacks`)."""
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    said = [ln for ln in lines if not ln.lstrip().startswith("(")]
    return (said or lines or [""])[-1]


@dataclass
class Cell:
    """One fault x property cell over the seeds."""

    fault: str
    prop: Property
    runs: list[Run]

    @property
    def passed(self) -> int:
        return sum(r.passed[self.prop.name] is True for r in self.runs)

    @property
    def failing(self) -> list[Run]:
        return [r for r in self.runs if r.passed[self.prop.name] is False]

    @property
    def unjudged(self) -> list[Run]:
        return [r for r in self.runs if r.passed[self.prop.name] is None]

    @property
    def ok(self) -> bool:
        """Every run judged and passed (a run not judged is never a pass)."""
        return bool(self.runs) and not self.failing and not self.unjudged

    @property
    def state(self) -> str:
        """"ok", "FAIL" (some run failed) or "not judged" (none failed, some not judged)."""
        return "FAIL" if self.failing else "not judged" if self.unjudged else "ok"

    def points(self) -> list[dict[str, Any]]:
        """Each run of the cell: its seed, crash point (``flush#2``, empty for a fault
        without one), where the kill landed in the student's words, and whether the run
        failed this cell's property (``judged`` False: neither passed nor failed). The
        instructor's view counts, per crash point, how many students' runs failed there."""
        return [{"seed": r.seed, "point": r.point, "crash": r.crash,
                 "failed": r.passed[self.prop.name] is False,
                 "judged": r.passed[self.prop.name] is not None} for r in self.runs]


def replay_command(exercise: Exercise, solution: Path, fault: str, seed: int,
                   point: str = "") -> str:
    """The one command that replays exactly one run."""
    return ("python -m deliverylab.grade " + exercise.id + " " + shlex.quote(str(solution))
            + f" --fault {fault} --seed {seed}"
            + (f" --point {shlex.quote(point)}" if point else ""))


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
    return offsets_in(op.detail).get((topic, partition), offset) > offset


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
    if run.state != "judged" or (run.errors and not anomaly_value(run, prop)):
        text = run.reason or (run.errors[0] if run.errors else run.state)
        return text.splitlines()[-EXCERPT_LINES:]
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
                 seconds: float = 0.0, broken: str | None = None) -> None:
        self.exercise, self.solution, self.runs, self.seconds = exercise, solution, runs, seconds
        #: The one line naming why the file could not run at all (no run was made).
        self.broken = broken

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
        return sum(c.state == "FAIL" for c in self.cells()) + (self.broken is not None)

    @property
    def not_judged(self) -> int:
        return sum(c.state == "not judged" for c in self.cells())

    @property
    def ok(self) -> bool:
        """Every cell judged and passed: the grade a student is after."""
        return self.broken is None and self.failed == 0 and self.not_judged == 0 and bool(
            self.runs)

    def raised(self) -> Run | None:
        """The first run whose student code raised: its traceback tops the report."""
        return next((r for r in self.runs if r.state == "raised"), None)

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
                mark = {"ok": "ok", "FAIL": "FAIL", "not judged": "not judged"}[c.state]
                line += f"{c.passed}/{len(c.runs)} {mark}".ljust(w)
            rows.append(line)
        return "\n".join(rows)

    def failures(self) -> list[dict[str, Any]]:
        """Each failing cell: its first failing seed, replay, excerpt, hint."""
        out = []
        for c in self.cells():
            if c.state != "FAIL":
                continue
            # The shortest story first: a crash that landed earliest in the run.
            run = min(c.failing, key=lambda r: (len(r.history or []), r.seed))
            # A raise is named by its traceback above; a fault whose failed call the
            # loop must answer itself (04's abortable error) also says what it was.
            hint = c.prop.hint_for(c.fault) if run.state == "judged" else (
                c.prop.fault_hints.get(c.fault)
                or "Your code did not run to its end: read its error above.")
            out.append({"fault": c.fault, "property": c.prop.name, "says": c.prop.says,
                        "seed": run.seed, "point": run.point, "crash": run.crash,
                        "failing_seeds": [r.seed for r in c.failing],
                        "failing_runs": [r.label for r in c.failing],
                        "replay": replay_command(self.exercise, self.solution, c.fault,
                                                 run.seed, run.point),
                        "excerpt": excerpt(run, c.prop), "hint": hint,
                        "value": anomaly_value(run, c.prop)})
        return out

    def unjudged(self) -> list[dict[str, Any]]:
        """Each cell not judged (and not failed): why, per run."""
        return [{"fault": c.fault, "property": c.prop.name,
                 "runs": [f"{r.label}: {last_words(r.reason or r.state)}"
                          for r in c.unjudged]}
                for c in self.cells() if c.state == "not judged"]

    def closing(self) -> str:
        text = f"{self.passed} passed, {self.failed} failed"
        return text + (f", {self.not_judged} not judged" if self.not_judged else "")

    def __str__(self) -> str:
        if self.broken is not None:
            return self.broken
        seeds = sorted({r.seed for r in self.runs})
        parts = [f"Exercise {self.exercise.id} ({self.exercise.name}): {self.solution}",
                 f"{len(self.runs)} runs ({len(self.faults)} faults x crash points x seeds "
                 f"{', '.join(map(str, seeds))}) in {self.seconds:.0f} s"]
        raised = self.raised()
        if raised is not None:
            parts += ["", f"YOUR CODE RAISED ({raised.fault}, {raised.label}); the "
                      "delivery properties of such a run are not judged:",
                      *("  " + line for line in raised.reason.splitlines()[-EXCERPT_LINES:])]
        parts += ["", self.table()]
        for f in self.failures():
            parts += ["", f"FAILED {f['fault']} x {f['property']}: {f['says']}",
                      f"  runs failing: {'; '.join(f['failing_runs'])}"]
            if f["crash"]:
                parts.append(f"  killed {f['crash']} (seed {f['seed']})")
            parts += [f"  replay: {f['replay']}", "  history excerpt (seed "
                      f"{f['seed']}):", *("    " + line for line in f["excerpt"]),
                      f"  hint: {f['hint']}"]
        for u in self.unjudged():
            parts += ["", f"NOT JUDGED {u['fault']} x {u['property']}:",
                      *(f"  {line}" for line in u["runs"])]
        parts += ["", self.closing()]
        return "\n".join(parts)

    def plot(self, fault: str, prop: str, save: str | Path | None = None) -> Any:
        """The timeline of the first failing run of a cell, its anomalous value ringed."""
        from ..notebook.plots import timeline  # lazy: matplotlib only when a plot is asked for

        cell = self.cell(fault, prop)
        if not cell.failing:
            raise ValueError(f"cell {fault} x {prop} failed no run: nothing to plot")
        run = min(cell.failing, key=lambda r: (len(r.history or []), r.seed))
        value = anomaly_value(run, cell.prop)
        twice = cell.prop.anomaly in ("pipeline_extra", "duplicate_rows", "duplicate_effects")
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
            "broken": self.broken,
            "cells": [{"fault": c.fault, "property": c.prop.name, "passed": c.passed,
                       "runs": len(c.runs), "state": c.state,
                       "failing_seeds": [r.seed for r in c.failing],
                       "failing_runs": [r.label for r in c.failing],
                       "points": c.points()}
                      for c in self.cells()],
            "failures": [{k: v for k, v in f.items() if k != "says"}
                         for f in self.failures()],
            "not_judged": self.unjudged(),
            "runs": [r.to_dict() for r in self.runs],
            "passed": self.passed, "failed": self.failed,
            "not_judged_cells": self.not_judged, "seconds": round(self.seconds, 1),
        }

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict(), indent=1))
        return path
