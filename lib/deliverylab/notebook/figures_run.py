"""The chapters' explanatory figures filled with one run's own values.

Why: before a run, :mod:`.figures` draws the idea (an example's offsets); after it, the
same picture with *this* run's leader, offsets, producer id, epoch, sequence numbers and
batch ids (chapters 1, 2b, 3, 4, 5, 7, 9) lets a student match the drawing to what just
happened. Each function here takes what the kit already returned to the notebook (a
recipe's result, a :func:`~deliverylab.segments.log_batches` DataFrame, an Inspector's
``partition_summary``, a Spark scene, the History a stall recorded into, a Connect kill's
positions, a reproduction of a Kafka bug) and reads nothing itself: no second read path,
so the figure can only show what the chapter's own evidence shows. :mod:`.figures` calls
these when a run is passed; a notebook calls them after its prediction is revealed.

Every value drawn comes from the argument; what the drawing adds is the mechanism the
recipe documents (e.g. the followers stayed in the ISR while paused), said as such.
"""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Any

from matplotlib.figure import Figure

from ..errors import bad_value
from ..history import offsets_in
from .diagram import FONT, ROW, boundary, canvas, cells, key, sequence
from .plots import COLORS

if TYPE_CHECKING:
    import pandas as pd

    from ..spark.scene import SceneResult

GREY = "#dddddd"
MAX_CELLS = 8  # cells of a run's log drawn at most (the latest ones): legible at 420 px


def _offset_of(records: tuple[tuple[int, str | None], ...], label: str) -> int | None:
    return next((offset for offset, value in records if value == label), None)


def high_watermark(run: Any) -> Figure:
    """Chapter 1's ``acked_then_lost`` run: its leader, paused followers, offsets and
    high watermark just before the kill, and what the offset holds now."""
    before = _offset_of(run.records, run.before)
    if before is None:
        raise bad_value("run", run.topic, "an acked_then_lost result whose control value "
                        "is in its records")
    victim = run.acked_offset if run.acked_before_kill and run.acked_offset is not None \
        else before + 1  # the next append on the old leader: one producer, in order
    shared = [o for o, _ in run.records if o <= before][-(MAX_CELLS - 2):]
    fig, ax = canvas(3.6, 4.1, -1.45, f"This run: partition {run.partition} of "
                     f"{run.topic}, before the kill")
    acked, pending = COLORS["info"], COLORS["pending"]
    w, x0 = 0.08, 0.36
    brokers = (run.old_leader, *run.paused_followers)
    for i, node in enumerate(brokers):
        y = 3.0 - 0.95 * i
        role = "leader" if i == 0 else "follower, paused"
        ax.text(x0 - 0.02, y, f"broker {node}: {role}", ha="right", va="center",
                fontsize=FONT)
        have = [*shared, victim] if i == 0 else shared
        colors = [COLORS["record"]] * len(shared) + (
            [acked if run.acked_before_kill else pending] if i == 0 else [])
        cells(ax, x0, y, w, [str(o) for o in have], colors, numbers=False)
    boundary(ax, x0 + len(shared) * w, 0.85, 3.45, f"high watermark {victim}",
             COLORS["ok"])
    ax.text(x0 + (len(shared) + 1) * w + 0.03, 3.0, "ISR: brokers\n"
            + ", ".join(str(b) for b in brokers), ha="left", va="center", fontsize=FONT)
    told = (f"acknowledged by broker {run.old_leader} alone (acks={run.acks})"
            if run.acked_before_kill else
            f"appended by broker {run.old_leader}, not acknowledged (acks={run.acks})")
    key(ax, 0.03, 0.25, [(COLORS["record"], f"offsets up to {before}: on every replica "
                          "of the ISR"), (acked if run.acked_before_kill else pending,
                                          f"offset {victim}: {told}")])
    now = dict(run.records).get(victim)
    holds = ("the value written after the failover" if now == run.after else
             "the same value" if now == run.value else
             "nothing" if now is None else now)
    lines = (f"Broker {run.old_leader} was killed; broker {run.new_leader}, from the ISR, "
             f"became leader.",
             f"Offset {victim} now holds {holds}; the value was found "
             f"{run.copies} time(s).",
             "Lost: acknowledged, and not in the log." if run.lost else
             "Nothing acknowledged was lost.")
    for line, text in enumerate(lines):
        ax.text(0.03, -0.65 - 0.3 * line, text, ha="left", va="center", fontsize=FONT)
    return fig


def idempotent_retry(run: Any, log: pd.DataFrame) -> Figure:
    """Chapter 3's idempotent ``lost_ack_duplicate`` run with its log segment's producer
    id, epoch and sequence numbers (``log_batches`` of ``run.topic``)."""
    if not run.idempotent:
        raise bad_value("run", str(run), "an idempotent lost_ack_duplicate result")
    rows = log[log["value"] == run.value]
    if rows.empty:
        raise bad_value("log", f"{len(log)} rows", f"the log_batches of {run.topic}, "
                        f"holding {run.value}")
    first = rows.iloc[0]
    pid, epoch, seq = (int(first[c]) for c in ("producer_id", "producer_epoch", "sequence"))
    stored = int(first["offset"])
    mine = sorted(int(s) for s in log.loc[log["producer_id"] == pid, "sequence"])
    p, proxy, broker = "producer", "fault proxy", f"broker {run.leader} (leader)"
    fig = sequence(
        f"This run: the lost ack, idempotent (producer id {pid})",
        [p, proxy, broker],
        [("msg", p, broker, "InitProducerId"),
         ("msg", broker, p, f"producer id {pid}, epoch {epoch}", "ok"),
         ("msg", p, broker, f"Produce [v] (producer id {pid}, sequence {seq})"),
         ("note", broker, f"appends v at offset {stored}, remembers ({pid}, {seq})"),
         ("msg", broker, proxy, f"response: ok, offset {stored}", "lost"),
         ("msg", p, broker, f"retry: [v] (producer id {pid}, sequence {seq})", "retry"),
         ("note", broker, f"({pid}, {seq}) is here: not appended again", COLORS["ok"]),
         ("msg", broker, p, f"ok, offset {run.acked_offset}", "ok")],
        footer=[f"{run.acks_dropped} ack dropped; v is stored {run.copies} time(s), at "
                f"offset(s) {', '.join(map(str, run.offsets))}.",
                f"On disk, producer id {pid} (epoch {epoch}) wrote sequence numbers "
                f"{', '.join(map(str, mine))}."])
    return fig


def _transactions(log: pd.DataFrame) -> dict[int, tuple[int | None, str]]:
    """Each data record's offset -> (offset, kind) of the marker that ended its
    transaction (COMMIT, ABORT): the first control record of the same producer id after
    it; (None, "") while none follows (the transaction is open)."""
    out: dict[int, tuple[int | None, str]] = {}
    rows = log.sort_values("offset").to_dict("records")
    for i, row in enumerate(rows):
        if row["control"]:
            continue
        end = next((r for r in rows[i + 1:] if r["control"]
                    and r["producer_id"] == row["producer_id"]), None)
        out[int(row["offset"])] = ((int(end["offset"]), end["marker"] or "")
                                   if end else (None, ""))
    return out


def transaction_log(log: pd.DataFrame, summary: pd.DataFrame, partition: int = 0) -> Figure:
    """Chapter 4's partition as ``log_batches`` dumped it, with the LSO and high watermark
    an Inspector's ``partition_summary`` read while a transaction was open."""
    bound = summary[summary["partition"] == partition]
    if log.empty:
        raise bad_value("log", "no rows", f"the log_batches of partition {partition}")
    if bound.empty:
        raise bad_value("partition", partition, "a partition of the partition_summary: "
                        + ", ".join(str(p) for p in summary["partition"]))
    lso, hw = int(bound["last_stable_offset"].iloc[0]), int(bound["high_watermark"].iloc[0])
    ends = _transactions(log)
    by_offset = {int(r["offset"]): r for r in log.to_dict("records")}
    first = max(min(by_offset), hw - MAX_CELLS)
    rec, ab, mk, op = (COLORS["record"], COLORS["aborted"], COLORS["marker"],
                       COLORS["pending"])
    labels, colors, letters = [], [], {}
    for offset in range(first, max(hw, max(by_offset) + 1)):
        row = by_offset.get(offset)
        if row is None:  # after the dump: below the LSO unknown, at or above it open
            labels.append("open" if offset >= lso else "?")
            colors.append(op if offset >= lso else GREY)
        elif row["control"]:
            labels.append(row["marker"] or "marker")
            colors.append(mk)
        else:
            marker, end = ends[offset]
            if marker is None:
                labels.append("open")
            else:
                labels.append(letters.setdefault(marker, "ABCDEFGH"[len(letters) % 8]))
            colors.append(rec if end == "COMMIT" else ab if end == "ABORT" else op)
    fig, ax = canvas(3.3, 3.4, -2.2, f"This run: partition {partition}, a transaction open")
    w, x0, y = 0.09, 0.17, 2.2
    ax.text(x0 - 0.02, y, f"partition {partition}", ha="right", va="center", fontsize=FONT)
    lefts = cells(ax, x0, y, w, labels, colors, height=0.7, first=first)
    if first <= lso <= first + len(labels):
        boundary(ax, lefts[lso - first], y - 0.42, y + 0.42, f"LSO {lso}", COLORS["fail"])
    hw_x = lefts[min(hw - first, len(labels))]
    ax.plot([hw_x] * 2, [y - 0.42, y + 0.42], color=COLORS["ok"], linewidth=2.2)
    ax.text(hw_x + 0.01, y, f"high\nwatermark {hw}", ha="left", va="center",
            fontsize=FONT, color=COLORS["ok"], fontweight="bold")
    key(ax, 0.03, 0.85, [(rec, "committed"), (ab, "aborted")], step=0.36)
    key(ax, 0.4, 0.85, [(mk, "a transaction's marker"), (op, "open (no marker yet)")],
        step=0.36)
    ids = log.loc[~log["control"], ["producer_id", "producer_epoch"]].drop_duplicates()
    who = "; ".join(f"producer id {int(p)}, epoch {int(e)}" for p, e in ids.values[:2])
    for line, text in enumerate((
            f"Records and markers as the broker stored them: {who}.",
            f"read_committed stops at the LSO ({lso}), the open transaction's first "
            "offset;",
            f"read_uncommitted reads up to the high watermark ({hw}).")):
        ax.text(0.02, -0.4 - 0.4 * line, text, ha="left", va="center", fontsize=FONT)
    return fig


def spark_checkpoint(run: SceneResult) -> Figure:
    """Chapter 5's crash scene: the batch id it crashed after, that batch's offsets from
    ``offsets/N``, the records the restart wrote again."""
    n = run.pipeline.report.crashed_batch
    batch = next((b for b in run.batches if b.batch == n), None)
    if n is None or batch is None:
        raise bad_value("run", run.summary(), "a crash_scene result with a crash "
                        "(crash='crash_query' or 'kill_driver')")
    ranges = ", ".join(f"partition {p}: {batch.start.get((t, p), 0)}-{end}"
                       for (t, p), end in sorted(batch.end.items()))
    before = [b.batch for b in run.batches if b.batch < n and b.committed]
    k, drv, off, sink, com = "Kafka input", "Spark driver", "offsets/", "sink", "commits/"
    fig = sequence(
        f"This run: {run.crash} after batch {n}, {run.sink} sink",
        [k, drv, off, sink, com],
        [("msg", drv, off, f"write offsets/{n}: {batch.size} offsets"),
         ("msg", k, drv, f"read batch {n} up to them"),
         ("msg", drv, sink, f"write batch {n}"),
         ("band", f"crash window: {run.crash} here, commits/{n} not written"),
         ("crash", drv, run.crash),
         ("gap", f"on restart: offsets/{n} without commits/{n}"),
         ("msg", k, drv, f"read batch {n} again, same offsets", "retry"),
         ("msg", drv, sink, f"write batch {n} again", "retry"),
         ("msg", drv, com, f"write commits/{n}", "ok")],
        footer=[f"Batch {n} (offsets/{n}): {ranges}.",
                f"Predicted from offsets/{n}: {run.predicted} records again; the output "
                f"holds {run.extra} twice.",
                "Committed before the crash: "
                + (", ".join(f"commits/{b}" for b in before) or "none") + "."])
    return fig


def _wrap(*texts: str, width: int = 82) -> list[str]:
    """Footer lines of at most ``width`` characters (about the canvas's width at the
    figures' font): a run's lists of partitions and offsets grow with the run."""
    return [line for text in texts for line in textwrap.wrap(text, width)]


def _spans(points: list[tuple[int, int]]) -> str:
    """(partition, offset) pairs as "partition 0: 7-9, partition 2: 5" (first-last)."""
    by: dict[int, list[int]] = {}
    for partition, offset in points:
        by.setdefault(partition, []).append(offset)
    return ", ".join(f"partition {p}: {min(o)}" + (f"-{max(o)}" if max(o) > min(o) else "")
                     for p, o in sorted(by.items()))


def _committed(detail: str | None) -> dict[int, int]:
    """A commit op's detail (``topic/partition@offset,...``, the Pipeline's record of the
    offsets it committed) as {partition: offset}."""
    return {partition: offset for (_, partition), offset in offsets_in(detail).items()}


def consumer_stall(run: Any, history: Any) -> Figure:
    """Chapter 2b's ``stall_takeover`` run (a ``Takeover``) with the History it recorded
    into: the batch the stalled instance polled, where the group's committed offsets
    left the successor, the values redone, and what became of the late commit."""
    a, b = run.stalled.process, run.successor.process
    ops = list(history)
    redone = set(run.redone)
    batch = [(op.partition, op.offset) for op in ops if op.process == a and op.kind == "poll"
             and op.partition is not None and op.offset is not None
             and redone & set(op.values)]
    if not redone or not batch:
        raise bad_value("run, history", f"{len(run.redone)} values redone, {len(batch)} "
                        f"polled by {a}", "a stall_takeover result and the History it "
                        "recorded into, with values processed by both instances")
    committed: dict[int, int] = {}
    for op in ops:  # the group's offsets when A stalled: its accepted commits, in order
        if op.process == a and op.kind == "commit" and op.outcome == "ok":
            committed.update(_committed(op.detail))
    late = [op for op in ops if op.process == a and op.kind == "commit"
            and op.outcome == "fail"]
    stalled_s = run.stall["end"] - run.stall["time"]
    n, poll_ms = len(redone), run.max_poll_seconds * 1000
    inp, out, coord = "input topic", "output topic", "coordinator"
    answer = (("msg", a, coord, f"late commit refused: {late[-1].error or '?'}", "refused")
              if late else ("msg", a, coord, "late commit accepted", "ok"))
    fig = sequence(
        f"This run: {a} stalled {stalled_s:.1f} s (max.poll.interval {run.max_poll_seconds:g} s)",
        [inp, a, b, out, coord],
        [("msg", inp, a, f"poll: {n} values"),
         ("msg", a, out, f"process: write the {n} values"),
         ("band", f"stalled: no poll for {stalled_s:.1f} s, max.poll.interval.ms is "
                  f"{poll_ms:.0f}"),
         ("msg", a, coord, f"after {run.max_poll_seconds:g} s: leaves the group"),
         ("msg", coord, b, "rebalance: every partition to " + b),
         ("msg", coord, b, "start at the last committed offsets"),
         ("msg", inp, b, f"poll: the same {n} values again", "retry"),
         ("msg", b, out, f"write them again: {n} duplicates", "retry"),
         ("msg", b, coord, "commit", "ok"),
         answer],
        footer=_wrap(f"{a}'s batch before the stall: {_spans(batch)}.",
                     f"{b} started where {a} had committed: " + ", ".join(
                         f"partition {p}: " + (f"offset {committed[p]}" if p in committed
                                               else "no commit, the earliest offset")
                         for p in sorted({p for p, _ in batch} | set(committed))) + ".",
                     f"{a} processed {run.stalled.processed} values, {b} "
                     f"{run.successor.processed}; {n} by both."))
    return fig


#: how a member came to hold a partition at the end of a rebalance window: its color
#: and legend (:func:`assignment_grid`)
HOLDING = {"k": (COLORS["record"], "kept: never revoked"),
           "b": (COLORS["pending"], "revoked, handed back to the same member"),
           "m": (COLORS["info"], "moved: a new owner"),
           "i": (GREY, "nobody reads it: its owner stalls")}
Holders = dict[str, list[tuple[int, str]]]  # member -> (partition, a key of HOLDING)


def assignment_grid(title: str, rows: list[tuple[str, str | None, list[Holders]]],
                    staller: str) -> Figure:
    """Chapter 2b's rebalances as a grid: per strategy (a row: its name, a note, the
    owners before the stall, after the eviction, after the rejoin), each member's
    partitions as cells colored by :data:`HOLDING`."""
    members = sorted({m for _, _, states in rows for state in states for m in state})
    lines = len(rows) * (len(members) + 1.3) + 1.5
    fig, ax = canvas(0.8 * ROW * (lines + 2.7), lines + 0.8, -1.9, title)
    columns = (0.3, 0.53, 0.76)
    widest = max((len(held) for _, _, states in rows for state in states
                  for held in state.values()), default=1)
    w = min(0.035, 0.2 / max(widest, 1))
    for x, head in zip(columns, ("before the stall", "after the eviction",
                                 "after the rejoin"), strict=True):
        ax.text(x + 0.09, lines - 0.4, head, ha="center", va="center", fontsize=FONT,
                fontweight="bold")
    y = lines - 1.5
    for name, note, states in rows:
        ax.text(0.02, y, name, ha="left", va="center", fontsize=FONT, fontweight="bold")
        if note:
            ax.text(0.98, y, note, ha="right", va="center", fontsize=FONT, color="#555555")
        y -= 1.0
        for member in members:
            ax.text(0.02, y, member + (" (stalls)" if member == staller else ""),
                    ha="left", va="center", fontsize=FONT)
            for x, state in zip(columns, states, strict=True):
                held = sorted(state.get(member, []))
                if held:
                    cells(ax, x, y, w, [str(p) for p, _ in held],
                          [HOLDING[k][0] for _, k in held], height=0.75, numbers=False)
                else:
                    ax.text(x, y, "none", ha="left", va="center", fontsize=FONT,
                            style="italic", color="#555555")
            y -= 1.0
        y -= 0.3
    key(ax, 0.02, -0.6, [HOLDING["k"], HOLDING["b"]], step=0.8)
    key(ax, 0.55, -0.6, [HOLDING["m"], HOLDING["i"]], step=0.8)
    return fig


def _holders(run: Any, start: float, end: float, before: dict[int, str] | None) -> Holders:
    """Who held each partition at ``end`` (the callbacks of ``run.timeline`` up to it),
    and how: against ``before`` (the owners at ``start``) and the revoke callbacks in
    between. A partition its stalled owner still holds at the wake is idle."""
    after = run.owners(end)  # the kit's own reading of the callbacks
    revoked = {(e.member, p) for e in run.timeline if start <= e.t <= end
               and e.kind in ("revoked", "lost") for p in e.partitions}
    out: Holders = {}
    for p, m in sorted(after.items()):
        if before is None:
            kind = "k"
        elif m == run.staller and end == run.wake:
            kind = "i"
        elif before.get(p) != m:
            kind = "m"
        else:
            kind = "b" if (m, p) in revoked else "k"
        out.setdefault(m, []).append((p, kind))
    return out


def rebalance_strategies(runs: Any) -> Figure:
    """Chapter 2b's ``compare_rebalances`` runs: each strategy's owners before the stall,
    after the eviction (at the wake) and after the rejoin (at the end), read from its
    callbacks, with its stop-the-world pauses."""
    runs = list(runs)
    if not runs or not all(hasattr(r, "timeline") and hasattr(r, "owners") for r in runs):
        raise bad_value("runs", f"{len(runs)} run(s)", "chapter 2b's compare_rebalances "
                        "result: one GroupRun per strategy")
    rows = []
    for r in runs:
        before = r.owners(r.stall)
        rows.append((r.strategy, f"stop-the-world: {r.eviction.pause:.2f} s at the "
                     f"eviction, {r.rejoin.pause:.2f} s at the rejoin",
                     [_holders(r, 0.0, r.stall, None), _holders(r, r.stall, r.wake, before),
                      _holders(r, r.wake, r.end, r.owners(r.wake))]))
    staller = runs[0].staller
    return assignment_grid(f"This run: {staller} stalls {runs[0].wake - runs[0].stall:.1f} s; "
                           "who held what", rows, staller)


def connect_two_writes(run: Any) -> Figure:
    """Chapter 7's mid-stream kill (a ``kill_mid_stream`` result): the lines the last
    offset flush covered, the committed position at the kill, the lines past it that
    the next task wrote again."""
    ends, position, observed = list(run.line_ends), run.position_at_kill, \
        (run.result.observed if run.result is not None else {})
    if not ends or "owner" not in observed:
        raise bad_value("run", str(run), "a kill_mid_stream result (its line ends and its "
                        "run's observed owner)")
    total, past = len(ends), run.predicted
    kept = total - past
    owner, taker = observed["owner"], observed.get("taken_over_by", "?")
    f, task, topic, offsets = "file", "source task", "topic", "offsets topic"
    start = f"byte {position}" if position else "the file's start"
    steps: list[tuple[Any, ...]] = []
    if kept:
        steps += [("msg", f, task, f"read lines 1-{kept}"),
                  ("msg", task, topic, f"{kept} records"),
                  ("msg", task, offsets, f"flush: position {position}"
                   + (f" (line {kept}'s end)" if ends[kept - 1] == position else ""), "ok")]
    else:
        steps.append(("note", task, "no flush has committed a position yet",
                      COLORS["pending"]))
    if past:
        steps += [("msg", f, task, f"read lines {kept + 1}-{total}"),
                  ("msg", task, topic, f"{past} records, no offset for them")]
    steps += [("band", f"SIGKILL worker {owner}: {total} lines in Kafka, offset at {start}"),
              ("crash", task, f"worker {owner} killed"),
              ("gap", f"worker {taker} runs the task from {start}")]
    steps += ([("msg", f, task, f"re-read lines {kept + 1}-{total}", "retry"),
               ("msg", task, topic, f"the same {past} records again", "retry")] if past else
              [("msg", f, task, "nothing past the position: no line again", "ok")])
    covered = [str(count) for _, count in run.flushes][-8:]
    fig = sequence(
        f"This run: offset.flush.interval.ms={run.flush_ms}, SIGKILL after "
        f"{run.kill_after} lines", [f, task, topic, offsets], steps,
        footer=_wrap(f"Predicted from the position: {past} lines twice; found {run.found}.",
                     f"Worker {owner}'s {len(run.flushes)} offset flush(es) before the kill "
                     f"covered {', '.join(covered) or 'no'} records."))
    return fig


def _row_value(row: dict[str, Any], column: str) -> Any:
    value = row.get(column)
    return None if value is None or value != value else value  # NaN: a missing cell


def stale_end_txn(run: Any, log: pd.DataFrame) -> Figure:
    """Chapter 9's ``stale_end_txn`` reproduction (a ``Reproduction``) with the
    ``log_batches`` of its partition: the producer id and epoch, each transaction's
    record and marker offsets, the broker's answer to the stale EndTxn and to the
    abort."""
    rows = log.sort_values("offset").to_dict("records")
    data = [r for r in rows if not r["control"]]
    if len(data) < 2:
        raise bad_value("log", f"{len(data)} data record(s)", f"the log_batches of "
                        f"{run.topic}, holding both transactions' records")
    first, second = data[0], data[1]

    def marker(after: int, before: float, txn: int) -> str:
        """The first marker after the record at ``after``: the end of its transaction."""
        found = next((r for r in rows if r["control"] and after < r["offset"] < before),
                     None)
        return (f"{_row_value(found, 'marker') or 'a'} marker at offset {found['offset']}: "
                f"txn {txn}" if found else f"no marker for txn {txn}")

    pid = first["producer_id"]
    epochs = sorted({int(e) for r in rows if (e := _row_value(r, "producer_epoch")) is not None})
    late = run.late[0] if run.late else "no answer"
    aborted = run.notes.get("abort_2", "?")
    p, proxy, coord, part = "producer", "fault proxy", "coordinator", "partition"
    fig = sequence(
        f"This run: the stale EndTxn (producer id {pid}, epoch "
        f"{', '.join(map(str, epochs))})", [p, proxy, coord, part],
        [("msg", p, part, f"txn 1: {_row_value(first, 'value')} at offset "
                          f"{first['offset']}"),
         ("msg", p, proxy, "EndTxn(commit), txn 1: held", "stale"),
         ("note", p, f"no answer: retried (the commit took "
                     f"{run.notes.get('commit_1_seconds', '?')} s)", COLORS["info"]),
         ("msg", p, coord, "EndTxn(commit) on a new connection", "retry"),
         ("msg", coord, part, marker(first["offset"], second["offset"], 1), "ok"),
         ("msg", p, part, f"txn 2: {_row_value(second, 'value')} at offset "
                          f"{second['offset']}"),
         ("msg", proxy, coord, f"held EndTxn injected: answered {late}", "stale"),
         ("msg", coord, part, marker(second["offset"], float("inf"), 2), "stale"),
         ("msg", p, coord, "EndTxn(abort), txn 2"),
         ("msg", coord, p, f"answer: {aborted}", "ok" if aborted == "ok" else "refused")],
        footer=[f"On disk: {len(data)} records, "
                f"{sum(1 for r in rows if r['control'])} markers, producer id {pid}, "
                f"epoch(s) {', '.join(map(str, epochs))}.",
                f"read_committed returned {len(run.reads)} record(s): "
                f"{run.anomalies} aborted read(s)."])
    return fig
