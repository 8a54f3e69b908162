"""One explanatory figure per idea of the course: ``dl.figures.<name>()`` in a chapter.

These are pictures of *mechanisms* (a cluster, a high watermark, a lost ack, a crash
window). Called with no argument a figure is the idea, the same in every notebook and
in the book, and ``tests/unit/notebook/test_figures.py`` renders exactly those calls.
Each statement drawn matches the chapter's text and Kafka's (or Spark's, Connect's)
documented behaviour; offsets in those log pictures are an example's, not measured; a
lab setting shown is labelled as the lab's. Chapter 8's time line is qualitative on
purpose.

The figures listed in :data:`FILLED` also take what a run returned (a recipe's result,
a log dump, a Spark scene) and draw the same picture with *this* run's leader, offsets,
producer id, epoch and batch ids (:mod:`.figures_run`); a notebook calls them so after
its prediction is revealed, never before.

Drawn with :mod:`.diagram` (sequence diagrams, log cells) in :mod:`.plots`' palette;
each returns a matplotlib Figure that shows itself in JupyterLab (``LabFigure``) and,
with ``save=``, writes a file (:func:`.plots.finish`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from ..errors import bad_value
from . import figures_run
from .diagram import FONT, boundary, canvas, cells, key, sequence
from .plots import COLORS, finish

if TYPE_CHECKING:
    import pandas as pd

    from ..spark.scene import SceneResult

Save = str | Path | None
GREY = "#dddddd"



def describe(name: str) -> str | None:
    """What figure ``name`` shows, in words (its docstring without the chapter number),
    or None for a name that is no figure: the book's alternative text for the image, so
    a reader without it (or with a screen reader) learns what it shows."""
    fn = globals().get(name)
    if not callable(fn) or name.startswith("_") or name == "describe" or not fn.__doc__ \
            or getattr(fn, "__module__", None) != __name__:
        return None
    first = fn.__doc__.strip().split("\n\n", 1)[0]
    text = " ".join(first.split())
    head, sep, rest = text.partition(": ")
    chapter = sep and re.fullmatch(r"\d+[a-z]?(-\d+[a-z]?)?", head)
    return (rest if chapter else text).rstrip(".") + "."

# --- 00: the cluster ---------------------------------------------------------------------


def cluster(save: Save = None) -> Figure:
    """00: brokers, a topic's partitions, each with one leader and follower replicas."""
    fig, ax = canvas(3.2, 4.0, 0.0, "A cluster: 3 brokers, a topic of 3 partitions, "
                     "3 replicas each")
    leaders = {0: 0, 1: 1, 2: 2}  # partition -> broker index (an example placement)
    for b in range(3):
        x = 0.04 + b * 0.32
        ax.add_patch(Rectangle((x, 0.7), 0.28, 2.4, facecolor="#f4f4f4",
                               edgecolor="#888888", linewidth=1))
        ax.text(x + 0.14, 2.85, f"broker {b + 1}", ha="center", va="center",
                fontsize=FONT, fontweight="bold")
        for p in range(3):
            lead = leaders[p] == b
            ax.add_patch(Rectangle((x + 0.02, 2.3 - 0.55 * p), 0.24, 0.42,
                                   facecolor=COLORS["read"] if lead else "white",
                                   edgecolor=COLORS["read"], linewidth=1.5))
            ax.text(x + 0.14, 2.51 - 0.55 * p,
                    f"partition {p}: " + ("leader" if lead else "follower"),
                    ha="center", va="center", fontsize=FONT,
                    color="white" if lead else "black")
    ax.text(0.5, 3.45, "producers write to, and consumers read from, each partition's "
            "leader", ha="center", va="center", fontsize=FONT)
    for line, text in enumerate((  # nothing about a broker's death: 00 asks for it
            "followers fetch (copy) their partition from its leader",
            "(in this lab each broker is also a KRaft controller)")):
        ax.text(0.5, 0.45 - 0.3 * line, text, ha="center", va="center", fontsize=FONT)
    return finish(fig, save)


# --- 01: ISR and high watermark ----------------------------------------------------------


def high_watermark(run: Any = None, save: Save = None) -> Figure:
    """01: a partition's three replicas, the ISR, the high watermark, and why a write
    acknowledged with acks=1 above it is lost when the leader dies.

    ``run``: an ``acked_then_lost`` result (a chapter kit's: duck-typed, the
    layout keeps chapter kits out of the notebook face); the figure then shows its leader, paused
    followers and offsets before the kill, and what the acknowledged offset holds now."""
    if run is not None:
        return finish(figures_run.high_watermark(run), save)
    fig, ax = canvas(3.6, 4.1, -1.45, "One partition, three replicas: the high watermark")
    acked = COLORS["info"]
    w, x0 = 0.07, 0.3
    rows = (("broker 1: leader", 8), ("broker 2: follower", 5), ("broker 3: follower", 5))
    for i, (name, have) in enumerate(rows):
        y = 3.0 - 0.95 * i
        ax.text(x0 - 0.02, y, name, ha="right", va="center", fontsize=FONT)
        cells(ax, x0, y, w, [f"v{k}" for k in range(have)],
              [COLORS["record"] if k < 5 else acked for k in range(have)],
              numbers=i == 0)
    boundary(ax, x0 + 5 * w, 0.85, 3.45, "high watermark", COLORS["ok"])
    ax.text(x0 + 8 * w + 0.02, 3.0, "ISR: brokers\n1, 2, 3", ha="left", va="center",
            fontsize=FONT)
    key(ax, 0.03, 0.25, [(COLORS["record"], "copied by every in-sync replica: "
                          "consumers read up to the high watermark"),
                         (acked, "acknowledged by the leader alone (acks=1): "
                          "no follower has it yet")])
    ax.text(0.03, -0.65, "The leader dies: a follower from the ISR becomes leader with "
            "v0..v4. The old leader,", ha="left", va="center", fontsize=FONT)
    ax.text(0.03, -0.95, "back, truncates its log to the new leader's: v5..v7 are gone, "
            "though acknowledged.", ha="left", va="center", fontsize=FONT)
    ax.text(0.03, -1.25, "With acks=all the leader acknowledges only what every in-sync "
            "replica has.", ha="left", va="center", fontsize=FONT)
    return finish(fig, save)


# --- 02: at least once -------------------------------------------------------------------


def lost_ack_retry(save: Save = None) -> Figure:
    """02: a produce whose acknowledgement is lost, retried, and written twice."""
    fig = sequence(
        "A lost acknowledgement, retried: written twice",
        ["producer", "fault proxy", "broker (leader)"],
        [("msg", "producer", "broker (leader)", "Produce [v]"),
         ("note", "broker (leader)", "appends v at offset n"),
         ("msg", "broker (leader)", "fault proxy", "response: ok, offset n", "lost"),
         ("note", "producer", "no response: retry (retries > 0)", COLORS["info"]),
         ("msg", "producer", "broker (leader)", "Produce [v] again", "retry"),
         ("note", "broker (leader)", "appends v at offset n+1"),
         ("msg", "broker (leader)", "producer", "ok, offset n+1", "ok")],
        footer=["Without idempotence the broker cannot tell a retry from a new write:",
                "v was acknowledged once and is stored twice."])
    return finish(fig, save)


def commit_after_process(save: Save = None) -> Figure:
    """02: a consumer that commits after processing, crashing in between: redone."""
    fig = sequence(
        "Commit after processing: a crash in between redoes the batch",
        ["input topic", "pipeline-0", "pipeline-1", "output topic", "group offsets"],
        [("msg", "input topic", "pipeline-0", "poll: a batch"),
         ("msg", "pipeline-0", "output topic", "process: copy each value"),
         ("band", "crash window: processed, offsets not yet committed"),
         ("crash", "pipeline-0", "crash"),
         ("msg", "group offsets", "pipeline-1", "start at the last commit", "msg"),
         ("msg", "input topic", "pipeline-1", "poll: the same batch", "retry"),
         ("msg", "pipeline-1", "output topic", "copy again: duplicates", "retry"),
         ("msg", "pipeline-1", "group offsets", "commit", "ok")],
        footer=["Nothing is lost, some values are processed twice (at least once).",
                "Chapter 1 commits first: the same crash then loses the batch."])
    return finish(fig, save)


# --- 02b: the consumer group under a stall ---------------------------------------------


def consumer_stall(run: Any = None, history: Any = None, save: Save = None) -> Figure:
    """02b: a consumer stalled past max.poll.interval.ms leaves the group; the other
    instance gets its partitions, starts at the last commit and redoes the batch.

    Without a run the stalled instance's late commit is left open (chapter 2b asks for
    it). ``run`` and ``history``: a ``stall_takeover`` result and the History it recorded
    into; the figure then shows the batch's partitions and offsets, the committed offsets
    the successor started at, the values redone and the broker's answer to the late
    commit."""
    if (run is None) != (history is None):
        raise bad_value("run, history", "only one of them",
                        "both (a stall_takeover result and its History) or neither")
    if run is not None:
        return finish(figures_run.consumer_stall(run, history), save)
    a, b, coord = "pipeline-A", "pipeline-B", "coordinator"
    fig = sequence(
        "A consumer stalls past max.poll.interval.ms: the group moves on",
        ["input topic", a, b, "output topic", coord],
        [("msg", "input topic", a, "poll: a batch"),
         ("msg", a, "output topic", "process: write each value"),
         ("band", "stalled: no poll for longer than max.poll.interval.ms"),
         ("msg", a, coord, "its client gives up: leaves the group"),
         ("msg", coord, b, f"rebalance: every partition to {b}"),
         ("msg", coord, b, "start at the last committed offsets"),
         ("msg", "input topic", b, "poll: the same batch again", "retry"),
         ("msg", b, "output topic", "process again: duplicates", "retry"),
         ("msg", b, coord, "commit", "ok"),
         ("msg", a, coord, "wakes up, commits its batch: ?")],
        footer=["Nothing is lost; the stalled batch is processed twice (at least once).",
                f"And {a}'s late commit? Section 1 asks you first."])
    return finish(fig, save)


def _held(text: str) -> list[tuple[int, str]]:
    return [(int(q[:-1]), q[-1]) for q in text.split()]


#: chapter 2b's group (three members, six partitions, consumer-2 the staller): each
#: member's partitions before the stall, after the eviction and after the rejoin, with
#: how each got there (:data:`.figures_run.HOLDING`). An example assignment: range for
#: eager, cooperative-sticky's balanced move; chapter 2b's run draws its own. A static
#: staller revokes its own partitions when it polls again and is handed them back (the
#: others see no rebalance), as chapter 2b's runs with librdkafka show.
_BEFORE = {"consumer-0": "0k 1k", "consumer-1": "2k 3k", "consumer-2": "4k 5k"}
_REBALANCES = {
    "eager": (_BEFORE, {"consumer-0": "0b 1b 2m", "consumer-1": "3b 4m 5m", "consumer-2": ""},
              {"consumer-0": "0b 1b", "consumer-1": "2m 3b", "consumer-2": "4m 5m"}),
    "cooperative-sticky": (_BEFORE, {"consumer-0": "0k 1k 4m", "consumer-1": "2k 3k 5m",
                                     "consumer-2": ""},
                           {"consumer-0": "0k 1k", "consumer-1": "2k 3k",
                            "consumer-2": "4m 5m"}),
    "static membership": (_BEFORE, {"consumer-0": "0k 1k", "consumer-1": "2k 3k",
                                    "consumer-2": "4i 5i"},
                          {"consumer-0": "0k 1k", "consumer-1": "2k 3k",
                           "consumer-2": "4b 5b"}),
}


def rebalance_strategies(runs: Any = None, save: Save = None) -> Figure:
    """02b: who holds which partition before a member's stall, after the eviction and
    after its rejoin, under the eager and cooperative-sticky strategies and static
    membership.

    ``runs``: chapter 2b's ``compare_rebalances`` result; the figure then shows each
    strategy's owners as the run's callbacks left them, and its stop-the-world pauses."""
    if runs is not None:
        return finish(figures_run.rebalance_strategies(runs), save)
    rows = [(name, None, [{m: _held(h) for m, h in state.items()} for state in states])
            for name, states in _REBALANCES.items()]
    return finish(figures_run.assignment_grid(
        "One member of three stalls: who holds what (an example)", rows, "consumer-2"),
        save)


# --- 03: the idempotent producer ---------------------------------------------------------


def idempotent_retry(run: Any = None, log: pd.DataFrame | None = None,
                     save: Save = None) -> Figure:
    """03: the same lost ack with producer id and sequence number: one copy.

    ``run`` and ``log``: an idempotent ``lost_ack_duplicate`` result and the
    ``log_batches`` of its topic; the figure then shows the producer id, epoch, sequence
    numbers and offsets the broker stored."""
    if (run is None) != (log is None):
        raise bad_value("run, log", "only one of them",
                        "both (a lost_ack_duplicate result and its log_batches) or neither")
    if run is not None and log is not None:
        return finish(figures_run.idempotent_retry(run, log), save)
    fig = sequence(
        "The same lost ack, idempotent: the broker keeps one copy",
        ["producer", "fault proxy", "broker (leader)"],
        [("msg", "producer", "broker (leader)", "InitProducerId"),
         ("msg", "broker (leader)", "producer", "producer id P, epoch 0", "ok"),
         ("msg", "producer", "broker (leader)", "Produce [v] (producer id P, sequence 0)"),
         ("note", "broker (leader)", "appends v at offset n, remembers (P, 0)"),
         ("msg", "broker (leader)", "fault proxy", "response: ok, offset n", "lost"),
         ("msg", "producer", "broker (leader)", "retry: [v] (producer id P, sequence 0)", "retry"),
         ("note", "broker (leader)", "(P, 0) is here: not appended again",
          COLORS["ok"]),
         ("msg", "broker (leader)", "producer", "ok, offset n (the first copy's)", "ok")],
        footer=["The broker remembers the last 5 batches of each producer id and partition.",
                "Sequence numbers also keep retries from reordering a partition."])
    return finish(fig, save)


# --- 04: transactions --------------------------------------------------------------------


def transaction_log(log: pd.DataFrame | None = None, summary: pd.DataFrame | None = None,
                    partition: int = 0, save: Save = None) -> Figure:
    """04: two partitions holding committed, aborted and open transactions' records,
    their COMMIT/ABORT markers, the last stable offset and the high watermark.

    ``log`` and ``summary``: a partition's ``log_batches`` and a ``partition_summary``
    read while a transaction was open; the figure then shows that partition's offsets,
    markers, producer id and epoch, LSO and high watermark."""
    if (log is None) != (summary is None):
        raise bad_value("log, summary", "only one of them",
                        "both (log_batches and a partition_summary) or neither")
    if log is not None and summary is not None:
        return finish(figures_run.transaction_log(log, summary, partition), save)
    fig, ax = canvas(3.9, 4.0, -2.2, "A transaction's records and markers, "
                     "the last stable offset")
    rec, ab, mk, op = COLORS["record"], COLORS["aborted"], COLORS["marker"], COLORS["pending"]
    w, x0 = 0.09, 0.17
    parts = ((["A", "A", "COMMIT", "B", "ABORT", "C", "C"], [rec, rec, mk, ab, mk, op, op]),
             (["A", "COMMIT", "B", "ABORT", "C"], [rec, mk, ab, mk, op]))
    for i, (labels, colors) in enumerate(parts):
        y = 3.0 - 1.3 * i
        ax.text(x0 - 0.02, y, f"partition {i}", ha="right", va="center", fontsize=FONT)
        lefts = cells(ax, x0, y, w, labels, colors, height=0.7)
        boundary(ax, lefts[colors.index(op)], y - 0.42, y + 0.42, "LSO", COLORS["fail"])
        ax.plot([lefts[-1]] * 2, [y - 0.42, y + 0.42], color=COLORS["ok"], linewidth=2.2)
        ax.text(lefts[-1] + 0.01, y, "high\nwatermark", ha="left", va="center",
                fontsize=FONT, color=COLORS["ok"], fontweight="bold")
    key(ax, 0.03, 0.75, [(rec, "A: committed"), (ab, "B: aborted")], step=0.36)
    key(ax, 0.4, 0.75, [(mk, "a transaction's marker"), (op, "C: still open")], step=0.36)
    for line, text in enumerate((
            "Each transaction ends with a marker (COMMIT or ABORT) in every partition it "
            "wrote;",
            "a marker takes an offset, and no reader returns it. read_committed returns A,",
            "skips B and the markers, and waits at the last stable offset (LSO): the first",
            "offset of the earliest open transaction. read_uncommitted reads to the high "
            "watermark.")):
        ax.text(0.02, -0.4 - 0.4 * line, text, ha="left", va="center", fontsize=FONT)
    return finish(fig, save)


def ctp_loop(save: Save = None) -> Figure:
    """04: the consume-transform-produce loop in one transaction."""
    fig = sequence(
        "Consume, transform, produce: one transaction per batch",
        ["input topic", "stage", "output topic", "group offsets", "coordinator"],
        [("msg", "stage", "coordinator", "init_transactions (once): a new epoch"),
         ("note", "stage", "begin_transaction"),
         ("msg", "input topic", "stage", "poll a batch"),
         ("msg", "stage", "output topic", "produce the transformed records"),
         ("msg", "stage", "group offsets", "send_offsets_to_transaction"),
         ("msg", "stage", "coordinator", "commit_transaction (EndTxn)", "ok"),
         ("msg", "coordinator", "output topic", "COMMIT markers", "ok"),
         ("msg", "coordinator", "group offsets", "COMMIT marker", "ok")],
        footer=["init_transactions fences an older producer with the same transactional.id.",
                "The output records and the input offsets become visible together, or, "
                "on abort,",
                "not at all: a crash redoes the processing, never the committed output."])
    return finish(fig, save)


# --- 05: Spark's two logs ----------------------------------------------------------------


def spark_checkpoint(run: SceneResult | None = None, save: Save = None) -> Figure:
    """05: offsets/N, the sink, commits/N, and the crash window between them.

    ``run``: a ``crash_scene`` result with a crash; the figure then shows its batch id,
    that batch's offsets and the records the restart wrote again."""
    if run is not None:
        return finish(figures_run.spark_checkpoint(run), save)
    fig = sequence(
        "Spark's two logs: offsets/N before the batch, commits/N after the sink",
        ["Kafka input", "Spark driver", "offsets/", "sink", "commits/"],
        [("msg", "Spark driver", "offsets/", "write offsets/N: the batch's end offsets"),
         ("msg", "Kafka input", "Spark driver", "read batch N up to them"),
         ("msg", "Spark driver", "sink", "write batch N"),
         ("band", "crash window: the sink wrote batch N, commits/N not written"),
         ("msg", "Spark driver", "commits/", "write commits/N", "ok"),
         ("gap", "on restart: offsets/N without commits/N"),
         ("msg", "Kafka input", "Spark driver", "read batch N again, same offsets", "retry"),
         ("msg", "Spark driver", "sink", "write batch N again", "retry")],
        footer=["An at-least-once sink stores batch N twice; a sink that records each "
                "batch id",
                "with its rows (Spark's file sink, the lab's database sink) skips the "
                "replay."])
    return finish(fig, save)


# --- 06: side effects --------------------------------------------------------------------


def side_effect(save: Save = None) -> Figure:
    """06: process, external write, offset commit; a crash redoes the write; the key."""
    fig = sequence(
        "A side effect outside Kafka, redone, and the idempotency key",
        ["orders", "instance-1", "instance-2", "database", "payments"],
        [("msg", "orders", "instance-1", "poll: order K"),
         ("msg", "instance-1", "database", "insert row for K"),
         ("msg", "instance-1", "payments", "pay for K"),
         ("band", "killed here: row and payment done, offset not committed"),
         ("crash", "instance-1", "SIGKILL"),
         ("msg", "orders", "instance-2", "poll: order K again", "retry"),
         ("msg", "instance-2", "database", "K already processed: no 2nd row", "ok"),
         ("msg", "instance-2", "payments", "Idempotency-Key K: no 2nd payment", "ok")],
        footer=["Without the keys the redo is a second row and a second payment.",
                "Key by the message's id, not its offset: a producer duplicate has two."])
    return finish(fig, save)


# --- 07: Connect source tasks ------------------------------------------------------------


def connect_two_writes(run: Any = None, save: Save = None) -> Figure:
    """07: a source task's two writes (records, then source offsets) and the window.

    ``run``: a ``kill_mid_stream`` result (section 2b's kill); the figure then shows its
    flush interval, the committed position at the kill, the lines past it and the
    duplicates found."""
    if run is not None:
        return finish(figures_run.connect_two_writes(run), save)
    fig = sequence(
        "A Connect source task writes twice: records, then its offset",
        ["file", "source task", "topic", "offsets topic"],
        [("msg", "file", "source task", "read lines"),
         ("msg", "source task", "topic", "records, as they are read"),
         ("msg", "file", "source task", "read more lines"),
         ("msg", "source task", "topic", "more records"),
         ("band", "a SIGKILL here: records in Kafka, no offset for them"),
         ("msg", "source task", "offsets topic",
          "offset every offset.flush.interval.ms", "ok"),
         ("gap", "after a kill: the next task starts at the last committed offset"),
         ("msg", "file", "source task", "re-read every line after it", "retry"),
         ("msg", "source task", "topic", "the same records again", "retry")],
        footer=["With exactly.once.source.support=enabled (KIP-618) the records and the",
                "offset go into one transaction: both count, or neither."])
    return finish(fig, save)


# --- 08: where the time goes -------------------------------------------------------------


def where_time_goes(save: Save = None) -> Figure:
    """08: when the producer hears back and when a consumer can read, per variant.
    Qualitative: the lengths are not measured and not to scale."""
    fig, ax = canvas(4.1, 5.4, -1.4, "Where the time goes (not to scale)")
    phases = {"send": ("#bbbbbb", "send"),
              "leader": (COLORS["record"], "leader appends"),
              "copy": (COLORS["read"], "followers copy: high watermark moves"),
              "wait": (COLORS["pending"], "wait for the commit (interval)"),
              "commit": (COLORS["marker"], "EndTxn, markers: LSO moves")}
    rows = (("acks=0", ["send", "leader", "copy"], 0),
            ("acks=1", ["send", "leader", "copy"], 2),
            ("acks=all", ["send", "leader", "copy"], 3),
            ("transaction", ["send", "leader", "copy", "wait", "commit"], 3))
    length = {"send": 0.07, "leader": 0.07, "copy": 0.12, "wait": 0.22, "commit": 0.08}
    x0 = 0.2
    for i, (name, parts, acked_after) in enumerate(rows):
        y = 4.6 - 1.0 * i
        ax.text(x0 - 0.02, y, name, ha="right", va="center", fontsize=FONT,
                fontweight="bold")
        x, ends = x0, [x0]
        for part in parts:
            ax.add_patch(Rectangle((x, y - 0.22), length[part], 0.44,
                                   facecolor=phases[part][0], edgecolor="white"))
            x += length[part]
            ends.append(x)
        ack = ends[acked_after] if acked_after else ends[1]
        ax.plot([ack], [y + 0.34], marker="v", color=COLORS["ok"], markersize=9)
        ax.plot([x], [y - 0.34], marker="^", color=COLORS["duplicate"], markersize=9)
    key(ax, 0.05, 0.8, [(c, t) for c, t in phases.values()], step=0.3)
    ax.plot([0.6], [0.8], marker="v", color=COLORS["ok"], markersize=9)
    ax.text(0.62, 0.8, "the send is acknowledged", ha="left", va="center", fontsize=FONT)
    ax.text(0.62, 0.5, "(acks=0: no response, done", ha="left", va="center", fontsize=FONT)
    ax.text(0.62, 0.2, "once sent)", ha="left", va="center", fontsize=FONT)
    ax.plot([0.6], [-0.1], marker="^", color=COLORS["duplicate"], markersize=9)
    ax.text(0.62, -0.1, "a consumer can read it", ha="left", va="center", fontsize=FONT)
    ax.text(0.02, -0.75 - 0.1, "Consumers read below the high watermark: acks=0, 1 and all "
            "become readable alike.", ha="left", va="center", fontsize=FONT)
    ax.text(0.02, -1.2, "A read_committed consumer waits for the transaction's commit.",
            ha="left", va="center", fontsize=FONT)
    return finish(fig, save)


# --- 09: a Kafka bug ---------------------------------------------------------------------


def stale_end_txn(run: Any = None, log: pd.DataFrame | None = None,
                  save: Save = None) -> Figure:
    """09: KAFKA-17754 as chapter 9 reproduces it with librdkafka: transaction 1's
    held EndTxn, released during transaction 2, commits transaction 2.

    ``run`` and ``log``: a ``stale_end_txn`` reproduction and the ``log_batches`` of its
    partition; the figure then shows the producer id and epoch, each record's and
    marker's offset, and the broker's answers to the stale EndTxn and to the abort."""
    if (run is None) != (log is None):
        raise bad_value("run, log", "only one of them",
                        "both (a stale_end_txn reproduction and its log_batches) or neither")
    if run is not None and log is not None:
        return finish(figures_run.stale_end_txn(run, log), save)
    fig = sequence(
        "A stale EndTxn commits the next transaction (KAFKA-17754)",
        ["producer", "fault proxy", "coordinator", "partition"],
        [("msg", "producer", "partition", "txn 1: write shop:0"),
         ("msg", "producer", "fault proxy", "EndTxn(commit), txn 1: held", "stale"),
         ("note", "producer", "no answer in socket.timeout.ms (3 s, the lab's): retry",
          COLORS["info"]),
         ("msg", "producer", "coordinator", "EndTxn(commit) on a new connection", "retry"),
         ("msg", "coordinator", "partition", "COMMIT marker: txn 1", "ok"),
         ("msg", "producer", "partition", "txn 2: write shop:1"),
         ("msg", "fault proxy", "coordinator", "held EndTxn(commit) released", "stale"),
         ("msg", "coordinator", "partition", "COMMIT marker: commits txn 2!", "stale"),
         ("msg", "producer", "coordinator", "EndTxn(abort), txn 2"),
         ("msg", "coordinator", "producer", "INVALID_TXN_STATE: too late", "refused")],
        footer=["Same producer id, same epoch: the coordinator cannot tell txn 1's EndTxn",
                "from txn 2's. KIP-890 (protocol 2) bumps the epoch per transaction."])
    return finish(fig, save)


#: every figure, by chapter: what the unit test renders and the book's chapters call
BY_CHAPTER = {
    "00": ("cluster",),
    "01": ("high_watermark",),
    "02": ("lost_ack_retry", "commit_after_process"),
    "02b": ("consumer_stall", "rebalance_strategies"),
    "03": ("idempotent_retry",),
    "04": ("transaction_log", "ctp_loop"),
    "05": ("spark_checkpoint",),
    "06": ("side_effect",),
    "07": ("connect_two_writes",),
    "08": ("where_time_goes",),
    "09": ("stale_end_txn",),
}

#: the figures a run can fill with its own values (their optional arguments)
FILLED = ("high_watermark", "consumer_stall", "rebalance_strategies", "idempotent_retry",
          "transaction_log", "spark_checkpoint", "connect_two_writes", "stale_end_txn")

__all__ = ["BY_CHAPTER", "FILLED", *(name for names in BY_CHAPTER.values() for name in names)]
