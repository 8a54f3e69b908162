"""The course's predictions: each chapter's questions, and each outcome from a run.

A chapter asks (``dl.predict(chapter, "moved", predict_moved)``) before the run whose
outcome is its lesson, and reveals (``dl.reveal(moved, dl.questions.moved_partitions(
before, after))``) after it. The question's text, its named outcomes and the concept
behind them live here, with the function that computes the outcome from the run's own
evidence, so that a notebook holds no answer and a test can check every outcome
function on hand-written evidence.

Each question's name is ``<chapter number>_<short>``; the chapter's papermill
parameter is ``predict_<short>`` (:data:`deliverylab.notebook.params.SPECS`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..errors import LabError, bad_value
from .chapter import Chapter, number
from .predict import Prediction, Question

if TYPE_CHECKING:
    from ..history import History

#: Chapter 08's variants a prediction may name (a custom commit interval is left out).
COST_VARIANTS = ("acks=0", "acks=1", "acks=all", "idempotent", "txn 10ms", "txn 100ms",
                 "txn 1000ms")

_QUESTIONS = [
    Question(
        "00_moved", "After Kill leader, which partitions get a new leader?", "set",
        tuple((p, f"partition {p}") for p in range(12)),
        concept="Each partition has its own leader. Killing a broker moves the "
                "partitions *it* led, and only those: a follower in sync takes each over, "
                "and the partitions other brokers lead never notice. The status line "
                "showed which broker led which partition before the press."),
    Question(
        "01_lost", "In the leader-kill run (followers frozen, then the leader killed), "
        "which acknowledged values will be missing from the log?", "set",
        (("before_pause", "acknowledged before the followers froze"),
         ("while_paused", "acknowledged while the followers were frozen"),
         ("after_kill", "acknowledged by the new leader, after the kill")),
        concept="With acks=1 the leader acknowledges a write as soon as it is in its own "
                "log. Followers copy within milliseconds, so what was acknowledged "
                "before they froze is on them; what the leader acknowledged while they "
                "were frozen is on the leader alone, and dies with it. The follower "
                "elected next serves its own log, so what it acknowledges is kept.",
        why={"before_pause": "copied by the followers before they froze: the new leader "
                             "has it.",
             "while_paused": "only the old leader had it; a follower without it was "
                             "elected, and the old leader truncated its log to match.",
             "after_kill": "written to the new leader's own log, which is the log now."}),
    Question(
        "02_autocommit", "The default consumer's poll handed it 10 values; it processed 4, "
        "its commit timer fired, and then it is SIGKILLed. What happens to the other 6?",
        "choice",
        (("successor", "its successor processes them, each once"),
         ("never", "nobody ever processes them"),
         ("twice", "some of them are processed twice")),
        concept="With librdkafka's defaults (enable.auto.offset.store=true) a message's "
                "offset is stored the moment poll hands it to your code, and the "
                "auto-commit timer commits what is stored, processed or not. The "
                "successor starts at the committed offset: after the whole batch.",
        why={"successor": "what storing offsets only after processing gives (the second "
                          "run): the timer then commits the 4 processed values alone.",
             "never": "the timer committed the offset past all 10 handed values; the "
                      "successor starts after them.",
             "twice": "would need a committed offset below what was processed: a crash "
                      "before a commit-after-processing, not this timer."}),
    Question(
        "02b_commit", "pipeline-A wakes up after pipeline-B took its partitions over, and "
        "commits the offsets of the batch it processed. What becomes of that commit?",
        "choice",
        (("accepted", "the broker accepts it: the group's offsets move to A's"),
         ("refused", "the broker refuses it")),
        concept="A consumer that does not poll within max.poll.interval.ms leaves its "
                "group (librdkafka sends LeaveGroup itself). The group's next generation "
                "hands its partitions to the others, and a commit from a member of a "
                "generation that is gone is refused: the partitions are not its own.",
        why={"accepted": "a late commit would overwrite the successor's progress; the "
                         "group coordinator checks the member and its generation first.",
             "refused": "A left the group when its poll interval ran out; its commit "
                        "names a generation the group no longer has."}),
    Question(
        "03_restart", "After the idempotent producer is restarted and sends every value "
        "again, what will partition 0's log segment show?", "set",
        (("two_ids", "two producer ids"),
         ("restart_at_0", "the second id's sequence numbers start again at 0"),
         ("duplicates", "some values stored twice"),
         ("refused", "the broker refused the re-sends")),
        concept="Idempotence is per producer *instance*: the broker deduplicates a retry "
                "by (producer id, sequence number). A restarted producer gets a new id "
                "and counts from 0 again, so to the broker its re-sends are new writes "
                "of another producer: nothing to deduplicate.",
        why={"two_ids": "the restarted instance asked the broker for a new producer id.",
             "restart_at_0": "sequence numbers count per producer id and partition.",
             "duplicates": "the application sent the values again: no producer setting "
                           "can tell.",
             "refused": "the broker refuses an out-of-order sequence of the *same* "
                        "producer id, never another id's writes."}),
    Question(
        "05_replayed", "After the crash between the sink's write and commits/N, how many "
        "records will the restarted query write a second time?", "number",
        concept="Spark writes offsets/N before it reads batch N and commits/N after the "
                "sink returned. A restart finds offsets/N without commits/N and runs "
                "batch N again with the same offsets: the replay is exactly batch N's "
                "offset range (with plain input, one record per offset), whatever the "
                "sink already wrote."),
    Question(
        "07_kill", "The worker running the task is SIGKILLed once all the lines are in "
        "the topic. How many lines will the topic then hold twice?", "number",
        concept="A source task writes records as it reads them, but its source offset "
                "only every offset.flush.interval.ms (10 minutes on the lab's workers). "
                "The successor starts from the last committed offset, so every line "
                "after it is read and written again; here no flush had committed "
                "anything, so that is every line."),
    Question(
        "07_window", "Of the lines in Kafka at the kill, how many end past the committed "
        "position (and will be written twice)?", "number",
        concept="The successor reads from the committed byte position on: a line that "
                "ends at or before it is not read again, every line that ends past it "
                "is. Count the line ends greater than the position (all of them when "
                "nothing was committed)."),
    Question(
        "07_open", "The worker is killed inside an open transaction. How many aborted "
        "copies will a read_uncommitted reader see?", "number",
        concept="With exactly-once support the task commits its records and its offset "
                "in one transaction. The lines past the committed position sit in the "
                "open transaction; the successor aborts it and reads them again, so they "
                "appear twice to read_uncommitted (once aborted) and once to "
                "read_committed."),
    Question(
        "08_slowest_e2e", "Which variant will have the highest end-to-end p95 latency "
        "(produced to read by a read_committed consumer)?", "choice",
        tuple((v, v) for v in COST_VARIANTS),
        concept="A read_committed consumer sees a record only once its transaction "
                "commits, so a transactional record waits up to a whole commit interval "
                "end to end. acks changes only the producer's wait: every consumer reads "
                "below the high watermark, which waits for the in-sync followers "
                "whatever the acks.",
        why={v: "a transaction that commits every second holds its records up to a "
                "second before a read_committed reader may see them." if v == "txn 1000ms"
             else "its records are readable once the followers copied them (or its "
                  "transaction committed sooner)." for v in COST_VARIANTS}),
    Question(
        "08_lowest_throughput", "Which variant will produce the fewest records per "
        "second?", "choice", tuple((v, v) for v in COST_VARIANTS),
        concept="Each commit costs a fixed round of coordinator work (EndTxn, a marker on "
                "every partition, the next AddPartitionsToTxn waiting for them). The "
                "more often a producer commits, the more of its time that round takes; "
                "acks and idempotence cost far less per record.",
        why={v: "it commits every 10 ms: the commit round takes most of its time."
             if v == "txn 10ms" else "it pays the commit round rarely or never."
             for v in COST_VARIANTS}),
    Question(
        "09_markers", "Transaction 1 commits, its EndTxn is held and injected while "
        "transaction 2 is open, then the application aborts transaction 2. Which "
        "markers will the partition hold?", "choice",
        (("commit_abort", "a COMMIT (transaction 1) and an ABORT (transaction 2)"),
         ("two_commits", "two COMMIT markers"),
         ("commit_only", "one COMMIT: transaction 2 left without a marker"),
         ("other", "something else")),
        concept="Under transaction protocol 1 a producer keeps one epoch for all its "
                "transactions, so the coordinator cannot tell transaction 1's late "
                "EndTxn(commit) from one sent for transaction 2: it commits transaction "
                "2, and the application's abort comes too late to write an ABORT.",
        why={"commit_abort": "what the application asked for; the stale request got "
                             "there first.",
             "two_commits": "transaction 1's own commit, and transaction 2 committed by "
                            "the stale EndTxn.",
             "commit_only": "a transaction always ends with a marker once the "
                            "coordinator decides it."}),
    Question(
        "09_epoch", "Will transaction 2's records and markers carry the same producer "
        "epoch as transaction 1's?", "choice",
        (("same", "the same epoch"), ("bumped", "a higher epoch for transaction 2")),
        concept="librdkafka speaks transaction protocol 1: the epoch is set when the "
                "producer initialises and stays for all its transactions. KIP-890's "
                "protocol 2 bumps it at the end of every transaction, which is what "
                "lets the coordinator refuse a stale EndTxn (section 4).",
        why={"same": "protocol 1: one epoch per producer session.",
             "bumped": "protocol 2 (Kafka 4's Java client) does this; librdkafka does "
                       "not yet."}),
]

#: Every question of the course, by name.
QUESTIONS: dict[str, Question] = {q.name: q for q in _QUESTIONS}


def question(chapter: str, short: str) -> Question:
    """Chapter ``chapter``'s (``"00_tour"`` or ``"00"``, ``"02b"``) question ``short``."""
    name = f"{number(chapter)}_{short}"
    if name not in QUESTIONS:
        raise bad_value("prediction", name, "one of " + ", ".join(QUESTIONS))
    return QUESTIONS[name]


def predict(chapter: Chapter, short: str, value: Any = None,
            choices: Iterable[Any] | None = None) -> Prediction:
    """The widget for ``chapter``'s question ``short``, bound to the chapter so that its
    reveal lands in the results file; ``value`` (the papermill parameter) commits it.

    Once committed, running the cell again shows the same, locked prediction: a
    prediction changed after the run is no longer a prediction."""
    q = question(chapter.name, short)
    earlier = chapter.asked.get(q.name)
    if earlier is not None and earlier.committed:
        return earlier
    chapter.asked[q.name] = Prediction(q, value, chapter=chapter, choices=choices)
    return chapter.asked[q.name]


# --- outcomes, from each run's evidence ----------------------------------------------------


def moved_partitions(before: Mapping[int, int], after: Mapping[int, int]) -> list[int]:
    """00: the partitions whose leader changed."""
    return sorted(p for p in before if after.get(p) != before[p])


def lost_phases(history: History, topic: str, in_log: Iterable[str]) -> list[str]:
    """01: when the acknowledged values missing from ``in_log`` were acknowledged:
    before the followers were paused, while they were (by the old leader), or by the
    new leader after the kill.

    The kill's op is stamped as it starts, and the old leader may still acknowledge
    while its SIGKILL is on its way; so "after the kill" starts with the first
    acknowledgement after it whose value the log holds: the new leader's."""
    faults = {op.fault: op.time for op in reversed(history.faults())}
    if "pause_followers" not in faults or "kill_leader" not in faults:
        raise LabError("this run has no pause_followers and kill_leader faults: the "
                       "question is about the isolate_leader run")
    kept = set(in_log)
    acked = [op for op in history.snapshot()
             if op.kind == "send" and op.outcome == "ok" and op.topic == topic]
    new_leader = min((op.time for op in acked if op.time >= faults["kill_leader"]
                      and all(v in kept for v in op.values)), default=float("inf"))
    phases = set()
    for op in acked:
        if any(v not in kept for v in op.values):
            phases.add("before_pause" if op.time < faults["pause_followers"] else
                       "while_paused" if op.time < new_leader else "after_kill")
    return [p for p in ("before_pause", "while_paused", "after_kill") if p in phases]


def autocommit_fate(run: Any) -> str:
    """02: what became of the values the crashed default consumer did not process
    (an ``AutoCommitCrash``), as one of ``02_autocommit``'s outcomes."""
    return "never" if run.missing else "twice" if run.twice else "successor"


def late_commit(takeover: Any) -> str:
    """02b: the stalled instance's late commit (a ``Takeover``): ``refused`` or
    ``accepted``."""
    return "refused" if takeover.rejected_commits >= 1 else "accepted"


def restart_statements(log: Any, duplicates: int) -> list[str]:
    """03: which statements about partition 0's dump (``log_batches``) hold."""
    data = log[~log["control"]] if "control" in log else log
    ids = list(dict.fromkeys(data.sort_values("offset")["producer_id"]))  # in log order
    out = []
    if len(ids) == 2:
        out.append("two_ids")
        if int(data.loc[data["producer_id"] == ids[1], "sequence"].min()) == 0:
            out.append("restart_at_0")
    out.append("duplicates" if duplicates >= 1 else "refused")
    return out


def slowest_e2e(rows: Iterable[Mapping[str, Any]]) -> str:
    """08: the produce variant (of :data:`COST_VARIANTS`) with the highest e2e p95."""
    mine = [r for r in rows if r["kind"] == "produce" and r["variant"] in COST_VARIANTS]
    return max(mine, key=lambda r: r["e2e_p95_ms"])["variant"]


def lowest_throughput(rows: Iterable[Mapping[str, Any]]) -> str:
    """08: the produce variant (of :data:`COST_VARIANTS`) with the fewest records/s."""
    mine = [r for r in rows if r["kind"] == "produce" and r["variant"] in COST_VARIANTS]
    return min(mine, key=lambda r: r["records_s"])["variant"]


def markers(disk: Any) -> str:
    """09: the markers on disk (``log_batches``), as one of ``09_markers``' outcomes."""
    kinds = list(disk.loc[disk["control"], "marker"]) if "control" in disk else []
    counts = (kinds.count("COMMIT"), kinds.count("ABORT"))
    return {(2, 0): "two_commits", (1, 1): "commit_abort", (1, 0): "commit_only"}.get(
        counts, "other")


def epochs(disk: Any) -> str:
    """09: one producer epoch on disk (``same``), or more (``bumped``)."""
    return "same" if disk["producer_epoch"].dropna().nunique() <= 1 else "bumped"


__all__ = ["COST_VARIANTS", "QUESTIONS", "autocommit_fate", "epochs", "late_commit",
           "lost_phases", "lowest_throughput",
           "markers", "moved_partitions", "predict", "question", "restart_statements",
           "slowest_e2e"]
