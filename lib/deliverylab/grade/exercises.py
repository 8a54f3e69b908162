"""The graded exercises: each one's contract, faults, properties and hints, named once.

An exercise is a function the student writes in a ``.py`` file next to the chapter
(``labs/exercises/NN_<name>.py``). The grader runs it in a child process under each of
the exercise's faults (names of :data:`deliverylab.faults.FAULTS`, plus ``none``, the
control run) and judges each run's History with the Checker; a *property* turns the
Checker's counts into pass or fail, and carries the one-line hint a failing student
reads (the concept, never the answer).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import bad_value
from ..faults import FAULTS
from .search import CrashPoint, crash_points

#: The repository root (exercises live in labs/, references in solutions/).
ROOT = Path(__file__).resolve().parents[3]

#: A run's state: judged, or why not (the student's code raised or hung; the run ran
#: out of time; the grader could not place its crash; the grader's own run failed).
JUDGED, RAISED, HUNG, TIMEOUT, UNPLACED, BROKEN = (
    "judged", "raised", "hung", "timeout", "unplaced", "grader_error")
#: The states that are the student's doing: ``finishes`` fails, nothing else is judged.
STUDENT_STATES = (RAISED, HUNG)


@dataclass(frozen=True)
class Property:
    """One thing every run must show: ``holds(counts, fault)`` says whether it did."""

    name: str
    says: str
    holds: Callable[[dict[str, int], str], bool]
    hint: str
    #: The anomaly whose example values the report shows when this property fails.
    anomaly: str = ""
    #: A sharper hint for a failure under one fault (the cause differs by fault).
    fault_hints: dict[str, str] = field(default_factory=dict)

    def hint_for(self, fault: str) -> str:
        return self.fault_hints.get(fault, self.hint)


@dataclass(frozen=True)
class Exercise:
    """One graded exercise: where its files are, what runs it, how it is judged."""

    id: str
    name: str
    chapter: str
    function: str
    faults: tuple[str, ...]
    properties: tuple[Property, ...]
    values: int = 60
    batch: int = 10
    #: The input's values per partition, partition 0 first (empty: the runner's uneven
    #: 2 : 7 : 11 split over 3 partitions, :func:`~deliverylab.grade.runner.uneven_sizes`).
    input_sizes: tuple[int, ...] = ()
    #: The student's ``consume(n)`` returns n messages while their process has input left
    #: (the grader's wrapper waits for the rest of a short batch: :mod:`~deliverylab.
    #: grade.child`), so a batch is the same thing in every run. With every partition
    #: smaller than a batch, every batch spans partitions (02 and 04: SPANNING_SIZES).
    full_batches: bool = False
    #: Extra producer settings of the student's producer (on top of the mode's).
    settings: dict[str, Any] = field(default_factory=dict)
    #: Transactional: the student's producer has a transactional.id (one per run, shared
    #: by every stage process: a restarted stage fences its predecessor), the consumer
    #: and the final read-back use read_committed.
    transactional: bool = False
    #: The contract's arguments (the parent checks the signature before any run).
    params: tuple[str, ...] = ()
    #: The faults that kill the student's process at searched crash points, the calls
    #: the child counts for them (in a correct loop's order) and over how many of each
    #: (:mod:`deliverylab.grade.search`).
    crash_faults: tuple[str, ...] = ()
    boundaries: tuple[str, ...] = ()
    #: Boundaries a correct loop may never call (04's own offset commit: a correct loop
    #: sends its offsets in the transaction). A crash point of such a kind that the
    #: student's run never reached at all is no crash point of their code: the run is
    #: judged as it ran, not "not judged".
    optional_boundaries: tuple[str, ...] = ()
    depth: int = 2
    #: The boundaries a crash fault searches when they are not ``boundaries`` (06:
    #: kill_after_db its database commits, kill_after_http its calls to the service).
    fault_boundaries: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: Faults that make one of the student's calls fail while their process lives: a
    #: stage that raises on it is restarted once (as a service manager would: its
    #: successor also fences an open transaction it left, so the output reads back).
    live_faults: tuple[str, ...] = ()
    #: Whether raising is the right answer to the live fault's failed call, so that the
    #: run is judged by the successor (:meth:`hands_over`): 02's write that failed for
    #: good (raise, uncommitted); not 04's abortable transaction error, which the loop
    #: answers itself (abort, rewind, go on): there a raise fails ``finishes``.
    live_raise_ok: bool = True
    #: The overlap fault, if the exercise has one: a first instance stops (06: before a
    #: database write; 04: before a commit_transaction) while a successor takes its
    #: place, then resumes (:meth:`~deliverylab.grade.runner.Stage.overlap`); and at
    #: which of its messages (06) or transaction commits (04) it stops.
    overlap: str = ""
    stall_at: int = 1
    #: Values of one aborted transaction the lab adds to the input.
    aborted_input: int = 0
    #: "stage": the student writes the whole loop; "handler": the lab's loop calls the
    #: student's per-message handler with a database (chapter 06); "foreach_batch": a
    #: Spark query in a driver process of its own calls the student's ``foreachBatch``
    #: function with a database (chapter 05, :mod:`deliverylab.grade.spark_run`).
    kind: str = "stage"

    def __post_init__(self) -> None:
        for f in self.faults:
            if f != "none" and f not in FAULTS:
                raise bad_value("fault", f, "'none' or a name of deliverylab.faults.FAULTS")
        if self.input_sizes and (sum(self.input_sizes) != self.values
                                 or min(self.input_sizes) < 1):
            raise bad_value("input_sizes", self.input_sizes,
                            f"one or more values per partition, {self.values} in all")
        if self.full_batches and self.input_sizes and max(self.input_sizes) >= self.batch:
            raise bad_value("input_sizes", self.input_sizes, f"partitions of fewer than "
                            f"{self.batch} values each, so that every full batch spans two")

    @property
    def starter(self) -> Path:
        return ROOT / "labs" / "exercises" / f"{self.id}_{self.name}.py"

    @property
    def solutions(self) -> Path:
        return ROOT / "solutions" / f"{self.id}_{self.name}"

    @property
    def reference(self) -> Path:
        return self.solutions / "reference.py"

    def wrong(self) -> dict[str, Path]:
        """The known-wrong solutions, by what they get wrong (``wrong_<what>.py``)."""
        return {p.stem.removeprefix("wrong_"): p
                for p in sorted(self.solutions.glob("wrong_*.py"))}

    def correct(self) -> dict[str, Path]:
        """The solutions that must pass every cell: the reference, and any other correct
        one written differently (``correct_<how>.py``)."""
        return {"reference": self.reference, **{
            p.stem: p for p in sorted(self.solutions.glob("correct_*.py"))}}

    def hands_over(self, fault: str) -> bool:
        """Does a first stage process that raised under ``fault`` hand over to its
        successor, which the run is judged by? Under a live fault whose failed call a
        raise rightly answers (``live_raise_ok``), and under a transaction loop's overlap
        fault: the resumed instance is fenced (a fatal error), and stopping is the one
        right answer. Otherwise the raise is the student's (``finishes`` fails), whatever
        the successor does (06's handler that raised on finding its successor's row)."""
        if fault == self.overlap and fault:
            return self.transactional
        return fault in self.live_faults and self.live_raise_ok

    def points(self, fault: str) -> list[CrashPoint | None]:
        """Where ``fault`` kills, one run each ([None]: a fault that is not a crash)."""
        if fault not in self.crash_faults:
            return [None]
        return list(crash_points(self.fault_boundaries.get(fault, self.boundaries),
                                 self.depth))

    def verdicts(self, fault: str, counts: dict[str, int],
                 state: str = JUDGED) -> dict[str, bool | None]:
        """Each property's verdict on one run: True, False, or None (not judged).

        Only a run that ran to its end with its fault placed is judged. Code that raised
        (or never returned once ``running()`` was False) fails ``finishes`` and nothing
        else is judged: its History says nothing about delivery. A run that ran out of
        time, or whose crash the grader could not place, is judged on nothing: that is
        the grader's problem, never the student's failure."""
        if state == JUDGED:
            return {p.name: p.holds(counts, fault) for p in self.properties}
        if state in STUDENT_STATES:
            return {p.name: False if p.name == "finishes" else None for p in self.properties}
        return {p.name: None for p in self.properties}

    def prop(self, name: str) -> Property:
        for p in self.properties:
            if p.name == name:
                return p
        raise bad_value("property", name, "one of " + ", ".join(p.name for p in self.properties))


def _nothing_lost(counts: dict[str, int], fault: str) -> bool:
    return counts.get("lost", 0) == 0 and counts.get("pipeline_missing", 0) == 0


def _one_batch_redone(batch: int) -> Callable[[dict[str, int], str], bool]:
    """No fault: nothing twice. A lost ack: at most one batch (the producer resends its
    request). A crash: only values the killed process polled since its last promise that
    was durable at the kill (``redo_beyond``, :func:`deliverylab.grade.search.redo_bound`),
    and at most one batch of them besides those the group still owed it (``redo_owed``:
    offsets it had stored, which auto-commit's timer had not committed when the process
    died, as the group's offsets read right after the kill show). No cap on those: the
    broker says what was committed, and a loop that stores each batch once written has
    done its part; a loop that stores or commits late gets no excuse for what it had
    not stored, nor for what it committed short."""
    def holds(counts: dict[str, int], fault: str) -> bool:
        if fault == "none":
            return counts.get("pipeline_extra", 0) == 0
        return (counts.get("pipeline_extra", 0) - counts.get("redo_owed", 0) <= batch
                and counts.get("redo_beyond", 0) == 0)
    return holds


def _finishes(counts: dict[str, int], fault: str) -> bool:
    return counts.get("unfinished", 0) == 0 and counts.get("fault_missed", 0) == 0



FINISHES = Property(
    "finishes", "the stage processes its whole input and returns when running() is False",
    _finishes,
    "Your loop must keep polling while running() is True, return when it is False, and "
    "never raise: read the child's error in the excerpt.")

#: Every batch spans partitions, by construction, not by luck: no partition holds a whole
#: batch (at most 9 values; a batch is 10) and the grader's consume() hands over full
#: batches while input is left (``full_batches``). So any batch -- 10 distinct messages,
#: in whatever order librdkafka's fetches queued them (a fetch hands a partition over
#: whole, so with 3 partitions of 6, 21 and 33 a run whose first fetch queued the 33
#: first had two single-partition batches before any crash point left its depth) --
#: holds values of two partitions or more. The first commit then has two partitions to
#: cover: a loop that commits (02) or sends to its transaction (04) only its last
#: message's partition leaves the other with no committed offset, and killed right
#: after that commit (searched on every seed) its successor redoes that partition's
#: values from the start. Uneven sizes, so that no two partitions run out together.
SPANNING_SIZES = (9, 4, 8, 9, 6, 9, 7, 8)

#: The arguments of a whole stage's loop (02, 04).
STAGE_PARAMS = ("consumer", "producer", "output_topic", "running")

CONSUME_LOOP = Exercise(
    id="02", name="consume_loop", chapter="02_at_least_once", function="consume_loop",
    faults=("none", "crash_consumer", "lose_ack", "hold_request"),
    properties=(
        Property("nothing_lost", "every input value reaches the output topic",
                 _nothing_lost,
                 "A restarted stage resumes after the last committed offset: a committed "
                 "offset is a promise that everything before it is done. Was it?",
                 anomaly="pipeline_missing",
                 fault_hints={"hold_request": "Here one of your writes failed for good: "
                              "no answer within message.timeout.ms. flush() returns once "
                              "nothing is queued, delivered or not: what told your loop "
                              "that every write of the batch succeeded before it "
                              "committed?"}),
        Property("one_batch_redone", "at most one batch is written twice (the batch in "
                 "flight when a crash or a lost ack hits; no fault: nothing twice)",
                 _one_batch_redone(10),
                 "A restarted stage redoes everything since its last commit: how much work "
                 "does your loop leave uncommitted at any moment?",
                 anomaly="pipeline_extra",
                 fault_hints={"lose_ack": "A lost ack makes the producer send its whole "
                              "unacknowledged request again: how much does your loop hand "
                              "the producer before it waits for the writes?"}),
        FINISHES,
    ),
    # Output batched for 100 ms (linger.ms): a produce() call is not a write. A write
    # with no answer in 10 s fails for good (hold_request holds one for longer). Not 3 s:
    # lose_ack's write is answered only on its second try (the proxy drops the first
    # answer and closes the connection; librdkafka sends it again), so its budget holds
    # two acks=all round trips to fresh partitions, and a cold make test under load
    # (2026-11-30) timed a correct loop's whole batch out within 3 s.
    settings={"linger.ms": 100, "message.timeout.ms": 10000, "request.timeout.ms": 10000},
    params=STAGE_PARAMS, crash_faults=("crash_consumer",), live_faults=("hold_request",),
    boundaries=("poll", "flush", "commit"),
    # Killed after commit#1, a loop that committed its last message's partition only
    # redoes values polled before that commit: beyond the exact redo bound.
    input_sizes=SPANNING_SIZES, full_batches=True,
)

def _exactly_once(counts: dict[str, int], fault: str) -> bool:
    return counts.get("pipeline_extra", 0) == 0 and counts.get("duplicates", 0) == 0


TRANSACTION_LOOP = Exercise(
    id="04", name="transaction_loop", chapter="04_transactions", function="transaction_loop",
    faults=("none", "crash_consumer", "hold_request", "zombie_producer"),
    properties=(
        Property("nothing_lost", "every committed input value reaches the output "
                 "(read_committed)", _nothing_lost,
                 "After a crash the restarted stage starts from the group's committed "
                 "offsets: were offsets committed for work whose transaction never "
                 "committed?", anomaly="pipeline_missing",
                 fault_hints={"hold_request": "Here one of your transactions failed and "
                              "was aborted: its output is gone, and your consumer's "
                              "position had already moved past its batch. Where does the "
                              "next transaction start reading, and what does it commit?",
                              "zombie_producer": "Here your instance stalled with a "
                              "transaction open; its successor aborted that transaction "
                              "and started from the group's committed offsets, which were "
                              "already past the batch. What besides your transaction "
                              "commits your consumer's offsets, and when?"}),
        Property("exactly_once", "no committed input value appears twice in the output, "
                 "nor any aborted one (read_committed)", _exactly_once,
                 "A read_committed reader sees a value twice only if two committed "
                 "transactions wrote it: do your output and the position you resume from "
                 "commit atomically, and at the right offset?", anomaly="pipeline_extra"),
        replace(FINISHES, fault_hints={
            "hold_request": "Here one of your writes got no answer within "
            "message.timeout.ms, and a transactional call raised an abortable error "
            "(txn_requires_abort()): it ends the transaction, not the stage. What must "
            "your loop do so that the batch is still copied, once?",
            "zombie_producer": "Here a successor fenced your stalled instance (its "
            "transactional calls now fail with a fatal error, fatal() is True): the "
            "fenced instance must stop, by raising or returning, and the successor run "
            "the input to its end."}),
    ),
    transactional=True, aborted_input=5, params=STAGE_PARAMS,
    crash_faults=("crash_consumer",),
    boundaries=("poll", "commit", "send_offsets", "commit_transaction"),
    optional_boundaries=("commit",),
    # hold_request keeps the student's first Produce request from the broker: with no
    # answer in 3 s its messages time out (librdkafka tears the connection down after a
    # timed-out request, socket.max.fails=1, and reconnects), the transaction enters
    # librdkafka's abortable state (an epoch bump follows its abort), and
    # send_offsets_to_transaction or commit_transaction raises an abortable error in the
    # live process. A raise is no answer to that (live_raise_ok): abort, rewind, go on.
    # message.timeout.ms must not exceed the mode's transaction.timeout.ms (librdkafka
    # refuses the config otherwise).
    settings={"message.timeout.ms": 3000, "request.timeout.ms": 3000},
    live_faults=("hold_request",), live_raise_ok=False,
    # zombie_producer (grade.stall.TxnStall): the first instance is held, then stopped,
    # right before its 2nd commit_transaction (its batch written, offsets sent); a
    # successor fences it and finishes the input; the resumed zombie's commit is refused
    # (fatal: it must stop). The hold lets the consumer's own timers fire inside the open
    # transaction: auto-commit left on moves the group past the batch, which is lost.
    overlap="zombie_producer", stall_at=2,
    # Killed after commit_transaction#1, a loop that sent its last message's partition
    # only to the transaction has its successor copy the other partition's values of
    # that committed batch again, in committed transactions: exactly_once fails.
    input_sizes=SPANNING_SIZES, full_batches=True,
)

IDEMPOTENT_HANDLER = Exercise(
    id="06", name="idempotent_handler", chapter="06_side_effects", function="handle",
    # stall_consumer: two instances at once. The first stops (SIGSTOP) right before its
    # first database write -- after whatever it read to decide -- a successor takes the
    # partitions and handles the same messages, then the first resumes and finishes
    # its call (grade.runner.Stage.overlap): a check outside the write's transaction
    # was true when read and is false when it writes.
    # kill_after_http: SIGKILL right after the payment service answered the student's
    # n-th call (grade.http_call), before whatever the handler does next: the call is
    # made again by the successor, and the service applies it once only if its key
    # names the message.
    faults=("none", "kill_after_db", "kill_after_http", "lose_ack", "stall_consumer"),
    properties=(
        Property("one_row_each", "no message makes more than one row, however often it "
                 "is delivered or written", lambda c, f: c.get("duplicate_rows", 0) == 0,
                 "A message can reach your handler twice: redelivered after a crash "
                 "(same offset) or written twice upstream (another offset). What does "
                 "your handler remember, and is it the message's identity?",
                 anomaly="duplicate_rows",
                 fault_hints={"stall_consumer": "Here two instances handled the same "
                              "message at once: yours was stalled after it read and "
                              "before it wrote, while its successor handled the message. "
                              "Was what your handler read still true when it wrote?"}),
        Property("no_missing_rows", "every message in the input has its row",
                 lambda c, f: c.get("missing_rows", 0) == 0,
                 "A crash can land between any two database commits: can your handler "
                 "remember a message as done while its row was never committed?",
                 anomaly="missing_rows"),
        Property("one_effect_each", "no order is paid twice at the payment service, "
                 "however often its message is delivered or the call made",
                 lambda c, f: c.get("duplicate_effects", 0) == 0,
                 "The payment service cannot join your database transaction: whatever "
                 "reached it before a crash stays done, and the next delivery calls it "
                 "again. What tells the service that a second call is the same payment?",
                 anomaly="duplicate_effects",
                 fault_hints={"kill_after_http": "Here the service was SIGKILLed right "
                              "after the payment service answered your call, before your "
                              "database commit; the next instance handled the message "
                              "again and called again. Did your second call carry the "
                              "same idempotency key as the first?",
                              "lose_ack": "Here the producer wrote an order twice, at "
                              "two offsets: one message, two deliveries. Is your "
                              "idempotency key the same for both copies?"}),
        Property("no_missing_effects", "every order in the input is paid at the payment "
                 "service", lambda c, f: c.get("missing_effects", 0) == 0,
                 "A crash can land between your database commit and your call to the "
                 "service: can your handler take a message for done while its payment "
                 "was never made?", anomaly="missing_effects"),
        replace(FINISHES, fault_hints={
            "stall_consumer": "Here your handler raised when a stalled instance resumed "
            "after its successor had handled the same message: finding another "
            "instance's finished work is a normal case for a handler, not an error."}),
    ),
    kind="handler", params=("db", "message_id", "order", "where", "payments"),
    overlap="stall_consumer", crash_faults=("kill_after_db", "kill_after_http"),
    boundaries=("http_call", "db_commit"), depth=3,
    fault_boundaries={"kill_after_db": ("db_commit",), "kill_after_http": ("http_call",)},
    # A handler that never calls the service: judged as it ran (every payment missing).
    optional_boundaries=("http_call",),
)

FOREACH_BATCH = Exercise(
    id="05", name="foreach_batch", chapter="05_spark_pipeline", function="write_batch",
    # No control run: a Spark driver costs seconds to start, and both crashes also
    # judge every batch the crash did not touch.
    faults=("crash_query", "kill_driver"),
    properties=(
        Property("nothing_lost", "every input value has its row in the database",
                 _nothing_lost,
                 "A replayed batch must still write whatever its first try did not "
                 "commit: can your function take a batch for done while its rows were "
                 "never committed?", anomaly="pipeline_missing"),
        Property("exactly_once", "no input value has two rows, however often Spark runs "
                 "its batch", _exactly_once,
                 "Spark runs a batch again, with the same batch_id, when the query died "
                 "after your write and before commits/N: what does your function know "
                 "about a batch it has already written?", anomaly="pipeline_extra",
                 fault_hints={"kill_driver": "This time the whole driver was SIGKILLed, "
                              "right after your first database commit of the batch: what "
                              "did the restarted driver still know, and was it committed "
                              "together with the rows?"}),
        Property("finishes", "the query reaches the end of its input, restarted after the "
                 "crash, with no error of its own",
                 _finishes,
                 "Your function must return for every batch without raising: read the "
                 "driver's error in the excerpt."),
    ),
    values=40, batch=10, kind="foreach_batch", params=("df", "batch_id", "db"),
    crash_faults=("crash_query", "kill_driver"), boundaries=("batch",), depth=3,
)

#: Every exercise, by id ("02") and by name ("consume_loop").
EXERCISES: dict[str, Exercise] = {e.id: e for e in (CONSUME_LOOP, TRANSACTION_LOOP,
                                                     FOREACH_BATCH, IDEMPOTENT_HANDLER)}


@dataclass(frozen=True)
class Declared:
    """What a known-wrong solution says of itself: the cell that must catch it (``fault``
    x ``prop``) and, when declared, the crash point that exposes its mistake."""

    fault: str
    prop: str
    point: str | None = None


def declared_failure(path: Path) -> Declared:
    """A known-wrong solution's ``EXPECTED_FAILURE = "fault x property"`` and optional
    ``EXPECTED_POINT = "flush#2"``, read without running its file (a student's import
    would run the module)."""
    import ast

    found = {node.targets[0].id: node.value.value for node in ast.parse(path.read_text()).body
             if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
             and isinstance(node.value, ast.Constant)}
    fault, _, prop = str(found.get("EXPECTED_FAILURE", "")).partition(" x ")
    if not fault or not prop:
        raise bad_value("EXPECTED_FAILURE", found.get("EXPECTED_FAILURE"),
                        f"'fault x property' in {path}")
    return Declared(fault, prop, found.get("EXPECTED_POINT"))


def exercise(name: str | Exercise) -> Exercise:
    """Look an exercise up by id or name; one clear line for anything else."""
    if isinstance(name, Exercise):
        return name
    key = str(name).strip()
    for e in EXERCISES.values():
        if key in (e.id, e.name, f"{e.id}_{e.name}", e.chapter):
            return e
    raise bad_value("exercise", name, "one of " + ", ".join(
        f"{e.id} ({e.name})" for e in EXERCISES.values()))
