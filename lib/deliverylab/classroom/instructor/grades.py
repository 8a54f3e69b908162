"""The instructor's view of the graded code: which fault cells, and which crash points,
caught how many students.

A grade file (:meth:`deliverylab.grade.report.Report.to_dict`) holds one entry per cell
of fault x property: ``{"fault", "property", "passed", "runs", "failing_seeds",
"points"}``, where ``points`` lists each run of the cell as ``{"seed", "point",
"crash", "failed", "judged"}`` -- the crash point the grader placed (``flush#2``, empty
for a fault without one), where the kill landed in the student's words ("after your
2nd flush, before your 2nd offset commit") and whether the run failed the cell. The
class table (:func:`point_counts`) counts, per exercise, cell and crash point, how many
students' runs failed there: a crash point that fails half the class is the moment the
class should talk about.

A grade file written before its cells carried ``points`` is read from its top-level
``runs`` (each ``{"fault", "point", "crash", "passed": {property: bool | None}}``) when
those name crash points; one written before the grader named crash points shows each
cell as one row without a crash point (its failing seeds, or the runs that did not
pass, as the failed runs). Counted in Python: a few dozen rows per student.

Reads JSON only; imports nothing of :mod:`deliverylab.grade` (the grader stays its own).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

#: The class table's columns (:func:`point_counts`).
COLUMNS = ["exercise", "fault", "property", "point", "crash", "students_failed",
           "students", "runs_failed", "runs", "who"]


def _is_cell(c: Any) -> bool:
    return (isinstance(c, dict) and isinstance(c.get("fault"), str)
            and isinstance(c.get("property"), str) and isinstance(c.get("passed"), int)
            and isinstance(c.get("runs"), int))


def _is_run(p: Any) -> bool:
    return (isinstance(p, dict) and isinstance(p.get("point", ""), str)
            and isinstance(p.get("crash", ""), str) and isinstance(p.get("failed"), bool))


def _from_runs(data: dict[str, Any], fault: str, prop: str) -> list[dict[str, Any]] | None:
    """A cell's runs from the file's top-level ``runs`` (a grade file written after the
    grader named crash points, before its cells carried them); None if they do not say."""
    runs = data.get("runs")
    if not isinstance(runs, list):
        return None
    mine = [r for r in runs if isinstance(r, dict) and r.get("fault") == fault]
    if not mine or not all("point" in r and isinstance(r.get("passed"), dict)
                           and _is_run({**r, "failed": False}) for r in mine):
        return None
    return [{"point": r["point"], "crash": r.get("crash", ""),
             "failed": r["passed"].get(prop) is False} for r in mine]


def _old_failed(cell: dict[str, Any]) -> int:
    """A cell without per-run points: its failing seeds, else the runs that did not pass."""
    seeds = cell.get("failing_seeds")
    return len(seeds) if isinstance(seeds, list) else cell["runs"] - cell["passed"]


def grade_rows(student: str, data: dict[str, Any]
               ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One grade file's rows: one per cell (passed, runs, caught) and one per run of a
    cell at its crash point (``runs`` 1, ``failed`` 0 or 1; an old file's cell: one row,
    no crash point, its counts). Raises ValueError naming the shape it expected."""
    cells = data.get("cells")
    if not isinstance(data.get("exercise"), str) or not isinstance(cells, list) or not all(
            map(_is_cell, cells)):
        raise ValueError("a grade result without an 'exercise' and 'cells' of "
                         "{'fault', 'property', 'passed', 'runs'}")
    exercise = data["exercise"]
    rows = [{"student": student, "exercise": exercise, "fault": c["fault"],
             "property": c["property"], "passed": c["passed"], "runs": c["runs"],
             "caught": c["passed"] < c["runs"]} for c in cells]
    points: list[dict[str, Any]] = []
    for c in cells:
        where = {"student": student, "exercise": exercise, "fault": c["fault"],
                 "property": c["property"]}
        runs = c.get("points")
        if runs is None:
            runs = _from_runs(data, c["fault"], c["property"])
        if runs is None:
            points.append({**where, "point": "", "crash": "", "runs": c["runs"],
                           "failed": _old_failed(c)})
            continue
        if not isinstance(runs, list) or not all(map(_is_run, runs)):
            raise ValueError(f"cell {c['fault']} x {c['property']}: 'points' that are not a "
                             "list of {'point', 'crash', 'failed'}")
        points += [{**where, "point": p.get("point", ""), "crash": p.get("crash", ""),
                    "runs": 1, "failed": int(p["failed"])} for p in runs]
    return rows, points


def _point_order(point: str, kinds: dict[str, int]) -> tuple[int, int]:
    """``poll#1, flush#1, commit#1, poll#2``: by batch, then by the kinds' first-seen
    order (the grader writes a cell's runs in the order a correct loop meets them)."""
    if not point:
        return (0, 0)
    kind, _, n = point.partition("#")
    return (int(n) if n.isdigit() else 0, kinds.get(kind, 0))


def point_counts(rows: list[dict[str, Any]]) -> Any:
    """Per exercise, fault cell and crash point: how many students' runs failed there
    (``students_failed`` of ``students`` who ran it; ``runs_failed`` of ``runs``),
    ``who`` failed, and where the kill landed in the words most of the failing runs
    (else all runs) got (pandas)."""
    import pandas as pd

    order: dict[str, dict[str, int]] = {"fault": {}, "property": {}, "kind": {}}
    groups: dict[tuple[str, str, str, str], list[dict[str, Any]]] = {}
    for r in rows:
        order["fault"].setdefault(r["fault"], len(order["fault"]))
        order["property"].setdefault(r["property"], len(order["property"]))
        if r["point"]:
            order["kind"].setdefault(r["point"].partition("#")[0], len(order["kind"]))
        groups.setdefault((r["exercise"], r["fault"], r["property"], r["point"]), []).append(r)
    out = []
    for (exercise, fault, prop, point), found in groups.items():
        failing = [r for r in found if r["failed"]]
        words = Counter(r["crash"] for r in (failing or found) if r["crash"])
        who = sorted({r["student"] for r in failing})
        out.append([exercise, fault, prop, point,
                    words.most_common(1)[0][0] if words else "", len(who),
                    len({r["student"] for r in found}), sum(r["failed"] for r in found),
                    sum(r["runs"] for r in found), ", ".join(who)])
    out.sort(key=lambda r: (r[0], order["fault"][r[1]], order["property"][r[2]],
                            _point_order(r[3], order["kind"])))
    return pd.DataFrame(out, columns=COLUMNS)
