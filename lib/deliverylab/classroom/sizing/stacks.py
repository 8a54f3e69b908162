"""What each chapter's kernel starts, started alone and measured (``make classroom-plan``).

Two kinds of run, each in a child process of its own so that a student's stack is one
process tree the :class:`~deliverylab.classroom.sizing.measure.Sampler` can sum:

- a **stack** (``python -m deliverylab.classroom.sizing.stacks stack 02``): the long-lived parts
  a chapter starts -- its cluster (size and fault proxy as its parameters cell says, on
  local JVMs), the kernel's Spark driver if it uses one, chapter 05's child driver,
  chapter 06's HTTP service and a fleet of two service instances, chapter 07's Connect
  workers -- with a small workload through them (values written, read back, counted by
  Spark), held while it is measured, then stopped;
- a **student** (``python -m deliverylab.classroom.sizing.stacks student 02 DIR``): the whole
  chapter as its kernel runs it, through papermill (the chapter test's small parameters
  and the graded reference solution), so every transient process (the grader's
  children, Kafka's CLI tools) is in the peak too.

The profile is ``$DELIVERYLAB_PROFILE`` (:mod:`deliverylab.runtime.profile`), inherited.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import bad_value

#: A line the children print for their parent (the rest of their output is the lab's).
MARK = "PLAN "


@dataclass(frozen=True)
class Stack:
    """The long-lived processes one chapter's kernel starts (its parameters cell)."""

    brokers: int
    proxy: bool = True
    spark: bool = True
    #: chapter 05: a query in a child driver process (a second Spark JVM), killed.
    child_driver: bool = False
    #: chapter 06: the HTTP service and a fleet of service instances (SQLite).
    services: bool = False
    #: chapter 07: Connect workers.
    connect_workers: int = 0


STACKS: dict[str, Stack] = {
    "00_tour": Stack(3),
    "01_at_most_once": Stack(3),
    "02_at_least_once": Stack(1),
    "02b_consumer_groups": Stack(1, proxy=False),
    "03_idempotent_producer": Stack(1),
    "04_transactions": Stack(1),
    "05_spark_pipeline": Stack(1, proxy=False, child_driver=True),
    "06_side_effects": Stack(1, services=True),
    "07_exactly_once_sources": Stack(3, proxy=False, connect_workers=2),
    "08_cost_of_guarantees": Stack(3, proxy=False, spark=False),
    "09_kafka_bugs": Stack(1),
}


def chapter_name(name: str) -> str:
    """A chapter by full name, number (``02``, ``02b``) or prefix (``02_at``)."""
    hits = ([c for c in STACKS if c == name or c.split("_", 1)[0] == name]
            or [c for c in STACKS if c.startswith(name)])
    if len(hits) != 1:
        raise bad_value("chapter", name, "one of " + ", ".join(STACKS))
    return hits[0]


def _say(event: str, **fields: Any) -> None:
    print(MARK + json.dumps({"event": event, "t": time.monotonic(), **fields}), flush=True)


# --- the children ------------------------------------------------------------------------


def run_stack(chapter: str, values: int = 300) -> None:
    """The child: start ``chapter``'s stack, push ``values`` through it, say so, and hold
    until stdin closes; then stop everything it started."""
    from ... import clients  # noqa: F401  (the clients load librdkafka before the JVMs)
    from ...cluster import Cluster
    from ...history import History
    from ...modes import AT_LEAST_ONCE
    from ...readers import read_back
    from ...workload import ProducerWorkload

    stack = STACKS[chapter]
    _say("begin")
    cluster = Cluster.start(brokers=stack.brokers, proxy=stack.proxy, backend="local")
    extra: list[Any] = []
    try:
        topic = cluster.create_topic("plan-load", partitions=3)
        spark = None
        if stack.spark:
            from ...spark.inspector import Inspector

            spark = Inspector(cluster)
            spark.topic(topic).count()  # the driver up, the connector loaded
        if stack.connect_workers:
            from ...connect.connect import Connect

            extra.append(Connect(cluster, workers=stack.connect_workers).start())
        if stack.services:
            from ...services.fleet import SideEffects

            lab = SideEffects(cluster)
            extra.append(lab)
            lab.fleet(topic, "none", instances=2)
        _say("ready")
        history = History()
        ProducerWorkload(cluster, topic, AT_LEAST_ONCE, history, process="plan").run(values)
        got = len(read_back(cluster, [topic]))
        if spark is not None:
            got = spark.topic(topic).count()
            spark.duplicates(topic).count()
        if stack.child_driver:
            from ...spark.scene import crash_scene

            crash_scene(cluster, "kafka", "kill_driver", values=30, crash_at=1)
        _say("worked", records=got)
        sys.stdin.read()  # the parent closes our stdin when it has measured
    finally:
        for part in reversed(extra):
            part.stop()
        if stack.spark:
            from ...spark.inspector import Inspector

            Inspector.stop()
        cluster.stop()
    _say("stopped")


#: The graded reference solutions CI injects (tests/labs/test_chapters.py's GRADED).
SOLUTIONS = Path(__file__).resolve().parents[4] / "solutions"
GRADED = {"02_at_least_once": "02_consume_loop", "04_transactions": "04_transaction_loop",
          "05_spark_pipeline": "05_foreach_batch", "06_side_effects": "06_idempotent_handler"}


def reference_extra(chapter: str) -> dict[str, Any]:
    """What the chapter test passes on top of the course's small parameters: local JVMs
    and, for a graded chapter, the reference solution graded with one seed (a headless
    run has no student to write the exercise)."""
    extra: dict[str, Any] = {"backend": "local"}
    if chapter in GRADED:
        extra.update(solution=str(SOLUTIONS / GRADED[chapter] / "reference.py"),
                     grade_seeds=1)
    return extra


def run_student(chapter: str, out: Path) -> int:
    """The child: one chapter through papermill as the chapter test runs it (small
    parameters, local JVMs, the graded reference); prints its verdict. 0 if it held."""
    from ..course.run import run_chapter

    run = run_chapter(chapter, out, small=True, html=False, extra=reference_extra(chapter))
    _say("verdict", passed=run.passed, error=run.error, wall=run.wall_seconds)
    return 0 if run.passed else 1


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) >= 2 and args[0] == "stack":
        run_stack(chapter_name(args[1]))
        return 0
    if len(args) >= 3 and args[0] == "student":
        return run_student(chapter_name(args[1]), Path(args[2]))
    print("usage: python -m deliverylab.classroom.sizing.stacks stack CHAPTER | "
          "student CHAPTER OUT", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
