"""The chapter's verdict: its claim, what it observed, and "what you saw".

- :class:`Chapter` -- the chapter's claim, the counts it observed, the checks it makes;
  :meth:`Chapter.finish` writes the results file (read by ``python -m
  deliverylab.classroom.course`` and by CI) and fails the run loudly when the claim did not hold.
- :func:`what_you_saw` -- a "what you saw" summary generated from checker Results.
- :func:`self_check` -- an exercise's check: one clear line, right or wrong, never the
  expected value.

A chapter's predictions (:mod:`deliverylab.notebook.predict`) are recorded here too, so
that the results file holds each one beside what the run gave.

Everything else a chapter calls lives with its role (clients, readers, nemesis,
scenario, segments, consoles) and is reached through ``import deliverylab as dl``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..checker import Result
from ..errors import bad_value

# --- the chapter's claim and its results file -------------------------------------------


@dataclass
class Check:
    """One condition of the claim: what it says, and whether it held."""

    what: str
    passed: bool


class Chapter:
    """A chapter's claim, the counts it observed and the checks that decide it.

    >>> ch = Chapter("02_at_least_once", "A lost ack makes a duplicate.", "results/02.json")
    >>> ch.observe(duplicates=3)                                # doctest: +SKIP
    >>> ch.expect("a lost ack made at least one duplicate", 3 >= 1)  # doctest: +SKIP
    >>> ch.finish()                                              # doctest: +SKIP

    The clock starts at construction, so ``seconds`` in the results file is the time the
    chapter took from its first library call to its verdict.
    """

    def __init__(self, name: str, claim: str, results_path: str | Path | None = None) -> None:
        if not isinstance(name, str) or not name:
            raise bad_value("name", name, "the chapter's name, e.g. '02_at_least_once'")
        self.name = name
        self.claim = claim
        self.results_path = Path(results_path) if results_path else None
        self.observed: dict[str, Any] = {}
        self.checks: list[Check] = []
        #: each revealed prediction beside its outcome (``predict.Reveal.to_dict``).
        self.predictions: list[dict[str, Any]] = []
        #: the chapter's prediction widgets by question name (``questions.predict``): a
        #: committed prediction is not asked again when its cell runs again.
        self.asked: dict[str, Any] = {}
        self.t0 = time.monotonic()

    def observe(self, **counts: Any) -> dict[str, Any]:
        """Record observed counts (numbers, flags, short lists) for the results file."""
        self.observed.update(counts)
        return self.observed

    def expect(self, what: str, passed: bool) -> bool:
        """Record one condition of the claim; returns it, so a cell can print it."""
        self.checks.append(Check(what, bool(passed)))
        return bool(passed)

    def record_prediction(self, entry: dict[str, Any]) -> None:
        """Record a revealed prediction; a reveal run again replaces its entry."""
        self.predictions = [p for p in self.predictions if p["name"] != entry["name"]]
        self.predictions.append(entry)

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(c.passed for c in self.checks)

    @property
    def seconds(self) -> float:
        return time.monotonic() - self.t0

    def to_dict(self) -> dict[str, Any]:
        return {
            "chapter": self.name,
            "claim": self.claim,
            "observed": self.observed,
            "checks": [{"what": c.what, "pass": c.passed} for c in self.checks],
            "predictions": self.predictions,
            "pass": self.passed,
            "seconds": round(self.seconds, 1),
        }

    def report(self) -> str:
        """The verdict as text: one line per check, then the claim."""
        lines = [f"  [{'x' if c.passed else ' '}] {c.what}" for c in self.checks]
        verdict = "PASS" if self.passed else "FAIL"
        return "\n".join([f"{verdict}: {self.claim}", *lines,
                          f"observed: {json.dumps(self.observed, default=str)}",
                          f"({self.seconds:.0f} s)"])

    def finish(self) -> dict[str, Any]:
        """Write the results file, print the verdict, and raise if the claim failed.

        The file is written *before* raising, so a failed headless run still leaves its
        counts behind for the summary table.
        """
        record = self.to_dict()
        if self.results_path is not None:
            self.results_path.parent.mkdir(parents=True, exist_ok=True)
            self.results_path.write_text(json.dumps(record, indent=2, default=str) + "\n")
        print(self.report(), flush=True)
        if not self.checks:
            raise AssertionError(f"{self.name}: no check was recorded, so nothing was shown")
        failed = [c.what for c in self.checks if not c.passed]
        if failed:
            raise AssertionError(f"{self.name}: the claim did not hold: " + "; ".join(failed))
        return record


# --- "what you saw" ------------------------------------------------------------------------


class Saw:
    """A short generated summary: Markdown in a notebook, plain text everywhere else."""

    def __init__(self, title: str, items: list[tuple[str, str]]) -> None:
        self.title = title
        self.items = items

    def _repr_markdown_(self) -> str:
        body = "\n".join(f"- **{name}** — {text}" for name, text in self.items)
        return f"#### {self.title}\n\n{body}"

    def __str__(self) -> str:
        return self.title + "\n" + "\n".join(f"- {name}: {text}" for name, text in self.items)

    __repr__ = __str__


def what_you_saw(title: str = "What you saw",
                 **runs: Result | str | Iterable[str]) -> Saw:
    """One bullet per run, each generated from its checker :class:`Result` (its
    :meth:`~deliverylab.checker.Result.summary`) or from text built from counts.

    ``what_you_saw(leader_kill=result, consumer_crash=other, note=f"{n} lost")``:
    keyword names become the bullets' names (underscores read as spaces).
    """
    items = []
    for name, run in runs.items():
        if isinstance(run, Result):
            text = run.summary()
        elif isinstance(run, str):
            text = run
        else:
            text = " ".join(str(part) for part in run)
        items.append((name.replace("_", " "), text))
    return Saw(title, items)


def self_check(answer: Any, expected: Any, what: str, hint: str = "") -> None:
    """An exercise's check: raises ``AssertionError`` with a hint, or prints "Correct".

    Never the expected value, right or wrong: a check that prints it hands the answer
    to whoever runs it first. The hint should name the concept, not the expression."""
    if answer is None:
        raise AssertionError("set `answer` in the exercise cell first")
    if answer != expected:
        raise AssertionError(f"answer={answer!r} is not {what}"
                             + (f". Hint: {hint}" if hint else ""))
    print(f"Correct: that is {what}.")
