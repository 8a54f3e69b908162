"""Hand-written student home folders for the instructor's view (unit and integration
tests): four students with complete, partial, failed, bad and missing results."""

from __future__ import annotations

import json
from pathlib import Path


def chapter(name: str, checks: dict[str, bool], **observed: object) -> dict:
    return {"chapter": name, "claim": f"the claim of {name}", "observed": observed,
            "checks": [{"what": w, "pass": p} for w, p in checks.items()],
            "pass": all(checks.values()), "seconds": 42.0}


def grade(exercise: str, cells: dict[tuple[str, str], tuple[int, int]]) -> dict:
    return {"exercise": exercise, "name": "consume_loop", "student": "x",
            "cells": [{"fault": f, "property": p, "passed": k, "runs": n,
                       "failing_seeds": list(range(k + 1, n + 1))}
                      for (f, p), (k, n) in cells.items()],
            "passed": sum(k == n for k, n in cells.values()),
            "failed": sum(k < n for k, n in cells.values())}


def write(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))


LOST_ACK = ("lose_ack", "one_batch_redone")
CRASH = ("crash_consumer", "nothing_lost")


def make_class(root: Path) -> list[Path]:
    """ana: two chapters held and a perfect grade; ben: chapter 02 failed one check,
    a grade caught by two cells, a broken file; cy: nothing run yet; dee: results at the
    home's top (``results/``), a grade caught by one cell, a chapter file without checks
    and the matrix file of chapter 09."""
    ana, ben, cy, dee = (root / n for n in ("ana", "ben", "cy", "dee"))
    write(ana / "labs/results/00_tour.json", chapter("00_tour", {"a leader died": True}))
    write(ana / "labs/results/02_at_least_once.json", chapter(
        "02_at_least_once", {"one lost ack stored the value twice": True,
                             "nothing acknowledged was lost": True},
        grade_passed=9, grade_failed=0))
    write(ana / "labs/results/grades/02.json",
          grade("02", {LOST_ACK: (3, 3), CRASH: (3, 3)}))
    write(ben / "labs/results/02_at_least_once.json", chapter(
        "02_at_least_once", {"one lost ack stored the value twice": True,
                             "nothing acknowledged was lost": False},
        grade_passed=7, grade_failed=2))
    write(ben / "labs/results/grades/02.json",
          grade("02", {LOST_ACK: (1, 3), CRASH: (0, 3)}))
    write(ben / "labs/results/03_idempotent_producer.json", '{"chapter": "03_idem')
    cy.mkdir(parents=True)
    write(dee / "results/01_at_most_once.json", chapter(
        "01_at_most_once", {"a leader kill lost acknowledged values": True}))
    write(dee / "results/grades/02.json", grade("02", {LOST_ACK: (2, 3), CRASH: (3, 3)}))
    write(dee / "results/04_transactions.json", {"chapter": "04_transactions", "pass": True})
    write(dee / "results/09_matrix.json", [{"mode": "AT_LEAST_ONCE", "runs": 1}])
    return [ana, ben, cy, dee]
