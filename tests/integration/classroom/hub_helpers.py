"""What the hub tests share (``test_hub.py``: a Unix user per student;
``test_hub_docker.py``: a container per student): the chapter every student runs, doing
a thing for every student at once, and the check that a student's claim held."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from deliverylab.classroom.hub.client import Student
from deliverylab.errors import LabError

CHAPTER = "00_tour"
NOTEBOOK = f"labs/{CHAPTER}.ipynb"
RESULTS = f"labs/results/{CHAPTER}.json"


def parallel(fn: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
    """``fn`` on every item at once; every failure is reported, not only the first."""
    items = list(items)
    with ThreadPoolExecutor(len(items)) as pool:
        futures = [pool.submit(fn, item) for item in items]
    errors = [f.exception() for f in futures if f.exception() is not None]
    if errors:
        raise LabError(f"{len(errors)} of {len(items)} failed: "
                       + "\n---\n".join(map(str, errors)))
    return [f.result() for f in futures]


def claim_held(name: str, student: Student, home: Path) -> dict[str, Any]:
    """Chapter 00's results as the student's server serves them: the claim held on local
    brokers, a leader was killed, nothing lost; and the instructor's view (the file in
    the student's home on the host) reads the same."""
    text = student.api("GET", f"/contents/{RESULTS}?content=1&type=file&format=text")
    results = json.loads(text["content"])
    observed = results["observed"]
    assert results["pass"] is True, f"{name}: {results['checks']}"
    assert observed["backend"] == "local" and observed["lost"] == 0, (name, observed)
    assert observed["killed_leaders"], f"{name}: no leader was killed: {observed}"
    assert json.loads((home / RESULTS).read_text()) == results
    return results
