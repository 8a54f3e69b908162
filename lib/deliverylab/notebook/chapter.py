"""The chapter's verdict: its claim, what it observed, and "what you saw".

- :data:`CHAPTER_CLAIMS` -- every chapter's idea (what it asks, neutral) and its claim
  (what the runs show), by chapter name; :func:`number` and :func:`chapter_names`, the one
  reading of a chapter's name (``02_at_least_once``, ``02b_consumer_groups``). The claim
  lives here, not in the notebook: a claim states the outcome, and a student reads the
  notebook before the run.
- :class:`Chapter` -- the chapter's claim, the counts it observed, the checks it makes;
  :meth:`Chapter.finish` writes the results file (read by ``python -m
  deliverylab.classroom.course`` and by CI), prints the claim with its verdict, and fails
  the run loudly when the claim did not hold.
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
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..checker import Result
from ..errors import bad_value

# --- a chapter's name -------------------------------------------------------------------------

#: A chapter's name: its number (two digits, and a letter for a chapter split off the one
#: before it: ``02b`` follows ``02``), an underscore, its topic. Sorted as text, the names
#: are in course order (``_`` sorts before any letter).
CHAPTER_NAME = re.compile(r"(\d\d[a-z]?)_([a-z0-9_]+)")
#: The notebooks' file names that may be chapters (:func:`chapter_names` filters them).
CHAPTER_GLOB = "[0-9][0-9]*_*.ipynb"


def number(chapter: str) -> str:
    """A chapter's number from its name or number: ``"02b"`` for ``02b_consumer_groups``.

    The number is the chapter's short name everywhere a short one is used: its
    questions (``02b_commit``), its exercise (``02``), the command line's selection."""
    m = CHAPTER_NAME.fullmatch(chapter) or re.fullmatch(r"(\d\d[a-z]?)", chapter)
    if m is None:
        raise bad_value("chapter", chapter, "a chapter's name or number, e.g. "
                        "'02_at_least_once' or '02b'")
    return m.group(1)


def chapter_names(labs: str | Path) -> list[str]:
    """The chapters' names (``NN_topic``, ``NNx_topic``) of the notebooks in ``labs``, in
    course order: the one list every place that enumerates chapters starts from."""
    return sorted(p.stem for p in Path(labs).glob(CHAPTER_GLOB)
                  if CHAPTER_NAME.fullmatch(p.stem))


# --- every chapter's idea and claim --------------------------------------------------------


@dataclass(frozen=True)
class ChapterClaim:
    """What a chapter is about, in two registers.

    ``idea``: what the chapter asks, in words that give no outcome away (the book's
    contents page lists it). ``claim``: what the chapter's runs show -- the outcomes the
    student predicts -- printed only with the verdict, at the chapter's end, and kept in
    its results file.
    """

    idea: str
    claim: str


#: Every chapter's idea and claim, by chapter name. A notebook names its chapter
#: (``dl.Chapter("03_idempotent_producer", results_path=...)``) and never spells its
#: claim: the notebook is read before the run, and the claim is the run's outcome.
CHAPTER_CLAIMS: dict[str, ChapterClaim] = {
    "00_tour": ChapterClaim(
        "A tour of the lab: start a real cluster, produce and consume while the lab records "
        "what each client was told, read the topic with Spark, kill a partition's leader, "
        "and check the evidence.",
        "With acks=all and 3 replicas, killing the leader of a partition loses no "
        "acknowledged value: another broker takes over."),
    "01_at_most_once": ChapterClaim(
        "The at-most-once mode (acks=1, no retries, offsets committed before processing): "
        "what a leader kill and a consumer crash do to acknowledged writes and to "
        "processing.",
        "At most once (acks=1, no retries, commit before processing): nothing is "
        "delivered twice, but a leader kill loses acknowledged writes and a consumer "
        "crash after its commit loses messages downstream."),
    "02_at_least_once": ChapterClaim(
        "The at-least-once mode (acks=all, retries, offsets committed after processing): "
        "what a lost acknowledgement, a consumer crash, the default auto-committing "
        "consumer and a rewind do; your own consume loop, graded under faults.",
        "At least once (acks=all, retries, commit after processing): nothing "
        "acknowledged is lost, but a lost ack makes a duplicate, and a consumer that "
        "crashes before committing has its batch processed twice; librdkafka's default "
        "auto-commit commits what poll handed over, so the same crash loses the rest of "
        "the batch."),
    "02b_consumer_groups": ChapterClaim(
        "The consumer group: a member that stalls past max.poll.interval.ms, the instance "
        "that takes its partitions over, and what the rebalances that follow cost the "
        "other members under the eager and cooperative strategies and static membership.",
        "A consumer stalled past max.poll.interval.ms leaves its group: another instance "
        "redoes its uncommitted batch and its late commit is refused. The stall costs the "
        "others two rebalances; eager stops the whole group at both, cooperative-sticky "
        "flushes nothing at the eviction, and static membership has no rebalance at all "
        "while the staller's own partitions wait."),
    "03_idempotent_producer": ChapterClaim(
        "The idempotent producer: producer ids and sequence numbers, on the wire and on "
        "disk, under a lost acknowledgement and a restarted producer.",
        "Idempotence: a lost ack no longer makes a duplicate (the broker recognises "
        "the retry by producer id and sequence number), but a restarted producer is a "
        "new producer and its re-sends are stored again."),
    "04_transactions": ChapterClaim(
        "Transactions: writes across partitions, read_committed beside read_uncommitted, "
        "markers and the last stable offset, consume-transform-produce, and instances "
        "that come back; your own transactional loop, graded under faults.",
        "Transactions: writes across partitions commit atomically; aborted records "
        "are visible to read_uncommitted and hidden from read_committed; markers leave "
        "offset gaps; an open transaction holds the last stable offset back; "
        "consume-transform-produce with offsets in the transaction is exactly once; "
        "a second instance fences the first; a paused instance whose group moved on is "
        "fenced by its group generation."),
    "05_spark_pipeline": ChapterClaim(
        "A Spark Structured Streaming query from Kafka to Kafka: its checkpoint's two "
        "logs, a crash after the sink wrote a batch and before commits/N, other sinks under "
        "the same crash, and deduplication downstream; your own foreachBatch sink, graded.",
        "A Spark query Kafka -> Kafka is at-least-once: a crash between the sink's "
        "write and commits/N duplicates exactly that batch, as predicted from the "
        "checkpoint; the file sink, a database keyed by batch id and a transactional "
        "sink show zero duplicates under the same crash; a dedup query repairs it."),
    "06_side_effects": ChapterClaim(
        "Side effects outside Kafka: database rows and HTTP calls under redelivery, and "
        "what an idempotent consumer, idempotency keys and a transactional outbox change; "
        "your own handler, graded under faults.",
        "A service that writes a row and calls an HTTP service per message, then commits, "
        "makes duplicate rows and duplicate calls under every redelivery (a kill after the "
        "DB write or after the call, a stall past max.poll.interval.ms, a restart, a "
        "producer duplicate); the idempotent consumer with idempotency keys, and the "
        "transactional outbox, make zero duplicate rows and zero duplicate effects under "
        "the same faults."),
    "07_exactly_once_sources": ChapterClaim(
        "Kafka Connect source tasks (KIP-618): records and source offsets, a worker "
        "killed or stopped between them, exactly-once support, open transactions and "
        "zombie tasks.",
        "Connect source tasks without exactly-once duplicate exactly the lines after the "
        "last committed offset when their worker is killed (none when it stops "
        "gracefully); with exactly-once support read_committed sees each line once, a kill "
        "inside an open transaction leaves aborted copies and an ABORT marker, and a "
        "zombie task is fenced."),
    "08_cost_of_guarantees": ChapterClaim(
        "What each guarantee costs on your machine: throughput and latency of acks, "
        "idempotence and transactions at several commit intervals, beside the published "
        "figures.",
        "Guarantees cost in shapes, not fixed numbers: transactions committing every "
        "1 s keep >= 0.6x idempotent throughput; end-to-end p95 latency grows with "
        "the commit interval; acks=0 is at least as fast as acks=all."),
    "09_kafka_bugs": ChapterClaim(
        "Kafka's own published delivery bugs, reproduced on demand with a fault proxy (an "
        "expired producer id, a stale EndTxn, a late transactional write), the fixes, and "
        "the anomaly matrix of the whole course.",
        "Kafka's published delivery bugs on demand: a retry held past "
        "producer.id.expiration.ms is written twice despite idempotence, every run, and "
        "never with an expiration longer than the delivery timeout; a held EndTxn "
        "injected into the next librdkafka transaction commits it, so a read_committed "
        "reader sees a record of an aborted transaction, every run; Kafka's Java 4.1 "
        "client (transaction protocol 2) gets the same stale EndTxn refused, and accepted "
        "again once the cluster's transaction.version is lowered to 1; a "
        "transaction's write delivered after it aborted hangs its partition when "
        "partition verification is off (find-hanging lists it, abort frees it) and is "
        "refused when it is on."),
}


# --- the chapter's claim and its results file -------------------------------------------


@dataclass
class Check:
    """One condition of the claim: what it says, and whether it held."""

    what: str
    passed: bool


class Chapter:
    """A chapter's claim, the counts it observed and the checks that decide it.

    >>> ch = Chapter("02_at_least_once", results_path="results/02.json")
    >>> ch.observe(duplicates=3)                                # doctest: +SKIP
    >>> ch.expect("a lost ack made at least one duplicate", 3 >= 1)  # doctest: +SKIP
    >>> ch.finish()                                              # doctest: +SKIP

    A course chapter's claim comes from :data:`CHAPTER_CLAIMS` by its name; ``claim`` is
    for a chapter outside the course (a test's, an instructor's own notebook). Nothing
    shows the claim before :meth:`finish` prints it with the verdict.

    The clock starts at construction, so ``seconds`` in the results file is the time the
    chapter took from its first library call to its verdict.
    """

    def __init__(self, name: str, claim: str | None = None,
                 results_path: str | Path | None = None) -> None:
        if not isinstance(name, str) or not name:
            raise bad_value("name", name, "the chapter's name, e.g. '02_at_least_once'")
        if claim is None:
            if name not in CHAPTER_CLAIMS:
                raise bad_value("name", name, "a chapter of the course ("
                                + ", ".join(CHAPTER_CLAIMS) + "), or give its claim")
            claim = CHAPTER_CLAIMS[name].claim
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
