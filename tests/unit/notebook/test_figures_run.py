"""The figures filled with a run's values, drawn from hand-written results: legible at
420 px, nothing overlapping, and every number of the run in the figure's text (so a
figure cannot silently fall back to the example's offsets)."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
import pytest
from matplotlib.figure import Figure

from deliverylab import checker as C
from deliverylab.chapters.at_least_once.lost_ack import LostAckResult
from deliverylab.chapters.at_most_once.recipes import AckedThenLostResult
from deliverylab.chapters.consumer_groups import GroupRun, Takeover
from deliverylab.chapters.consumer_groups.rebalance import Event
from deliverylab.chapters.exactly_once_sources.sources import SourceRun
from deliverylab.chapters.exactly_once_sources.window import WindowRun
from deliverylab.chapters.kafka_bugs.reproductions import Reproduction
from deliverylab.errors import BadValue
from deliverylab.history import History, Read
from deliverylab.notebook import figures, figures_run
from deliverylab.spark.query import BatchLog
from deliverylab.spark.scene import SceneResult
from deliverylab.workload import PipelineReport


def acked_then_lost() -> AckedThenLostResult:
    """acks=1, before value at 41, the victim acked at 42, then lost; 42 holds 'after'."""
    return AckedThenLostResult(
        topic="amo-certain-1", partition=0, acks="1", value="acked-1-ab:1", acked=True,
        acked_before_kill=True, acked_offset=42, copies=0, offsets=(), old_leader=2,
        new_leader=3, paused_followers=(1, 3), error=None, before="acked-1-ab:0",
        after="acked-1-ab:2",
        records=((40, "other:0"), (41, "acked-1-ab:0"), (42, "acked-1-ab:2")))


def lost_ack() -> tuple[LostAckResult, pd.DataFrame]:
    run = LostAckResult(topic="idem-on-3", partition=0, idempotent=True,
                        value="lost-ack-ab:1", copies=1, offsets=(17,), acked_offset=17,
                        acks_dropped=1, leader=2, error=None, records=())
    log = pd.DataFrame([
        {"offset": 16, "producer_id": 4711, "producer_epoch": 3, "sequence": 6,
         "control": False, "marker": None, "value": "lost-ack-ab:0"},
        {"offset": 17, "producer_id": 4711, "producer_epoch": 3, "sequence": 7,
         "control": False, "marker": None, "value": "lost-ack-ab:1"}])
    return run, log


def txn_log() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Partition 1: committed record, COMMIT, aborted record, ABORT; then one open
    record (after the dump) below the high watermark."""
    rows = [(20, False, None), (21, True, "COMMIT"), (22, False, None), (23, True, "ABORT")]
    log = pd.DataFrame([{"offset": o, "producer_id": 5150, "producer_epoch": 9,
                         "sequence": -1 if c else 0, "control": c, "marker": m,
                         "value": None} for o, c, m in rows])
    summary = pd.DataFrame({"partition": [0, 1, 2], "last_stable_offset": [4, 24, 4],
                            "high_watermark": [5, 25, 5]})
    return log, summary


def scene() -> SceneResult:
    t = "in-kafka-kill_driver-abc123"
    batches = [BatchLog(0, {}, {(t, 0): 3, (t, 1): 3, (t, 2): 4}, True),
               BatchLog(1, {(t, 0): 3, (t, 1): 3, (t, 2): 4},
                        {(t, 0): 6, (t, 1): 7, (t, 2): 7}, True),
               BatchLog(2, {(t, 0): 6, (t, 1): 7, (t, 2): 7},
                        {(t, 0): 10, (t, 1): 10, (t, 2): 10}, True)]
    pipeline = SimpleNamespace(report=SimpleNamespace(crashed_batch=1))
    return SceneResult("kafka", "kill_driver", 10, None, batches, pipeline,  # type: ignore[arg-type]
                       (t, "out"), {"extra_records": 10})


def stall() -> tuple[Takeover, History]:
    """pipeline-A committed partitions 0, 1, 2 up to 12, 1999, 30, polled a batch
    (partition 0: 12-14, partition 2: 30-31), stalled 14 s; pipeline-B redid the five;
    A's late commit was refused (UNKNOWN_MEMBER_ID)."""
    h = History()
    batch = [(0, 12), (0, 13), (0, 14), (2, 30), (2, 31)]
    h.record("pipeline-A", "commit", "ok", detail="in/0@12,in/1@1999,in/2@29")
    h.record("pipeline-A", "commit", "ok", detail="in/2@30")
    for k, (p, o) in enumerate(batch):
        h.record("pipeline-A", "poll", "ok", [f"events:{k}"], topic="in", partition=p,
                 offset=o)
    h.record("pipeline-A", "fault", "info", fault="stall_consumer")
    for k, (p, o) in enumerate(batch):
        h.record("pipeline-B", "poll", "ok", [f"events:{k}"], topic="in", partition=p,
                 offset=o)
    h.record("pipeline-A", "commit", "fail", error="UNKNOWN_MEMBER_ID",
             detail="in/0@15,in/2@32")
    redone = [f"events:{k}" for k in range(5)]
    run = Takeover(PipelineReport("pipeline-A", processed=25, rejected_commits=1),
                   PipelineReport("pipeline-B", processed=35),
                   {"name": "pipeline-A stalls", "time": 3.0, "end": 17.0}, 10.0, redone,
                   ["UNKNOWN_MEMBER_ID"])
    return run, h


def group_run(strategy: str) -> GroupRun:
    """Three members, six partitions; consumer-2 stalls at 2 s and wakes at 12 s. Eager:
    evicted at 8 s (everything revoked, range over two members), rejoined at 12.5 s
    (everything revoked again). Static: no callback at all."""
    ev: list[Event] = [Event(0.1, f"consumer-{m}", "assigned", (2 * m, 2 * m + 1))
                       for m in range(3)]
    if strategy == "eager":
        for t, owners in ((8.0, {0: (0, 1), 1: (2, 3)}),
                          (12.5, {0: (0, 1, 2), 1: (3, 4, 5), 2: (4, 5)})):
            ev += [Event(t, f"consumer-{m}", "revoked", ps) for m, ps in owners.items()]
            ev += [Event(t + 0.6, f"consumer-{m}", "flushed") for m in owners]
        ev += [Event(8.7, "consumer-0", "assigned", (0, 1, 2)),
               Event(8.7, "consumer-1", "assigned", (3, 4, 5)),
               Event(13.5, "consumer-0", "assigned", (0, 1)),
               Event(13.5, "consumer-1", "assigned", (2, 3)),
               Event(13.5, "consumer-2", "assigned", (4, 5))]
    ev += [Event(t, "consumer-0", "record", (p,)) for t in (1.0, 9.5, 14.0) for p in (0, 1)]
    ev += [Event(t, "consumer-1", "record", (p,)) for t in (1.0, 9.0, 14.1) for p in (2, 3)]
    return GroupRun(strategy, {}, 6, "consumer-2", 2.0, 12.0, 17.0,
                    sorted(ev, key=lambda e: e.t), 0.3)


def window(position: int | None = 5910) -> WindowRun:
    """150 lines of 41 bytes... ending at 5910 for line 140: 10 past the position."""
    ends = [41 * (k + 1) for k in range(139)] + [5910 + 43 * k for k in range(11)]
    result = SourceRun("plain-window", "window-ab", "lines-window")
    result.observed.update(owner=1, taken_over_by=2, uncommitted_duplicates=10)
    past = 10 if position else 150
    return WindowRun(2000, 150, position, ends, past, past, result,
                     [("03:37:05,094", 0), ("03:37:07,096", 40), ("03:37:09,131", 40),
                      ("03:37:11,149", 60)])


def stale() -> tuple[Reproduction, pd.DataFrame]:
    """Chapter 9's dump as a run printed it: shop:0 at 0, COMMIT at 1, shop:1 at 2,
    COMMIT at 3, producer id 4, epoch 0 (here 6 and 2, so no number is a default)."""
    h = History()
    h.record("shop", "begin_txn", "ok", txn="shop/txn-1")
    h.record("shop", "send", "ok", ["shop:0"], topic="t", partition=0, offset=10,
             txn="shop/txn-1")
    h.record("shop", "commit_txn", "ok", txn="shop/txn-1")
    h.record("shop", "begin_txn", "ok", txn="shop/txn-2")
    h.record("shop", "send", "ok", ["shop:1"], topic="t", partition=0, offset=12,
             txn="shop/txn-2")
    h.record("shop", "abort_txn", "fail", txn="shop/txn-2", error="INVALID_TXN_STATE")
    reads = [Read("t", 0, 10, "shop:0", "read_committed"),
             Read("t", 0, 12, "shop:1", "read_committed")]
    run = Reproduction("stale_end_txn", "bug", "t", h, reads, C.check(h, reads), ["NONE"],
                       3.9, {"commit_1_seconds": 3.12, "abort_2": "INVALID_TXN_STATE"})
    nan = float("nan")
    log = pd.DataFrame([
        {"offset": o, "producer_id": 6, "producer_epoch": 2, "transactional": True,
         "control": c, "marker": m, "value": v}
        for o, c, m, v in ((10, False, nan, "shop:0"), (11, True, "COMMIT", nan),
                           (12, False, nan, "shop:1"), (13, True, "COMMIT", nan))])
    return run, log


CASES = {
    "high_watermark": (lambda: figures.high_watermark(acked_then_lost()),
                       ["broker 2: leader", "high watermark 42", "41", "42",
                        "broker 3, from the ISR", "value written after the failover"]),
    "idempotent_retry": (lambda: figures.idempotent_retry(*lost_ack()),
                         ["producer id 4711, epoch 3", "sequence 7", "offset 17",
                          "sequence numbers 6, 7", "broker 2 (leader)"]),
    "transaction_log": (lambda: figures.transaction_log(*txn_log(), partition=1),
                        ["LSO 24", "watermark 25", "COMMIT", "ABORT", "open", "20", "23",
                         "producer id 5150, epoch 9"]),
    "consumer_stall": (lambda: figures.consumer_stall(*stall()),
                       ["stalled 14.0 s", "10000", "poll: 5 values",
                        "partition 0: 12-14, partition 2: 30-31",
                        "partition 0: offset 12, partition 1: offset 1999, partition 2: offset 30",
                        "5 duplicates",
                        "refused: UNKNOWN_MEMBER_ID", "25 values, pipeline-B 35"]),
    "rebalance_strategies": (lambda: figures.rebalance_strategies(
        [group_run("eager"), group_run("static")]),
        ["This run: consumer-2 stalls 10.0 s", "eager", "static",
         "stop-the-world: 7.00 s at the eviction, 2.90 s at the rejoin",
         "consumer-2 (stalls)", "after the rejoin"]),
    "connect_two_writes": (lambda: figures.connect_two_writes(window()),
                           ["offset.flush.interval.ms=2000", "after 150 lines",
                            "read lines 1-140", "position 5910 (line 140's end)", "lines 141-150",
                            "SIGKILL worker 1", "worker 2 runs the task from byte 5910",
                            "same 10 records", "found 10", "covered 0, 40, 40, 60 records"]),
    "stale_end_txn": (lambda: figures.stale_end_txn(*stale()),
                      ["producer id 6, epoch 2", "shop:0 at offset 10",
                       "COMMIT marker at offset 11", "shop:1 at offset 12",
                       "COMMIT marker at offset 13: txn 2", "answered NONE",
                       "INVALID_TXN_STATE", "3.12 s", "1 aborted read"]),
    "spark_checkpoint": (lambda: figures.spark_checkpoint(scene()),
                         ["kill_driver after batch 1", "offsets/1", "commits/1",
                          "partition 1: 3-7", "10 twice", "commits/0"]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_filled_figure_is_legible_and_shows_the_runs_numbers(name: str,
                                                               figure_checks) -> None:
    check_legible, check_no_overlap, texts, _ = figure_checks
    draw, expected = CASES[name]
    fig = draw()
    assert isinstance(fig, Figure)
    check_legible(name, fig)
    check_no_overlap(name, fig)
    words = " ".join(" ".join(t.get_text() for t in texts(fig)).split())  # lines wrap
    for part in expected:
        assert part in words, f"{name}: {part!r} not in the figure's text"


def test_every_filled_figure_has_a_case_and_draws_unfilled_too(figure_checks) -> None:
    texts = figure_checks[2]
    assert sorted(CASES) == sorted(figures.FILLED)
    for name in figures.FILLED:
        words = "\n".join(t.get_text() for t in texts(getattr(figures, name)()))
        assert "This run" not in words, name


def test_the_figure_draws_the_example_offsets_only_without_a_run(figure_checks) -> None:
    texts = figure_checks[2]
    """A filled figure is not the example: chapter 1's example offsets (v5..v7 above a
    high watermark at 5) do not appear in the run's figure."""
    words = "\n".join(t.get_text() for t in texts(figures.high_watermark(acked_then_lost())))
    assert "v5" not in words and "This run" in words


def test_half_a_run_or_a_run_that_does_not_fit_says_what_is_accepted() -> None:
    run, log = lost_ack()
    with pytest.raises(BadValue, match="both"):
        figures.idempotent_retry(run)
    with pytest.raises(BadValue, match="idempotent"):
        figures.idempotent_retry(LostAckResult(**{**run.__dict__, "idempotent": False}), log)
    with pytest.raises(BadValue, match="holding lost-ack-ab:1"):
        figures.idempotent_retry(run, log.iloc[:1])
    log4, summary = txn_log()
    with pytest.raises(BadValue, match=r"partition=7.*0, 1, 2"):
        figures.transaction_log(log4, summary, partition=7)
    with pytest.raises(BadValue, match="both"):
        figures.transaction_log(log4)
    uncrashed = scene()
    uncrashed.pipeline.report.crashed_batch = None
    uncrashed.crash = None
    uncrashed.result = SimpleNamespace(summary=lambda: "ok")  # type: ignore[assignment]
    with pytest.raises(BadValue, match="with a crash"):
        figures.spark_checkpoint(uncrashed)


def test_the_idea_of_a_stall_leaves_the_late_commit_open(figure_checks) -> None:
    """Chapter 2b draws the idea before its prediction: the late commit's fate is not
    in it; the run's figure, after the reveal, says it."""
    texts = figure_checks[2]
    idea = "\n".join(t.get_text() for t in texts(figures.consumer_stall()))
    assert "refused" not in idea and "accepted" not in idea and "?" in idea
    run, h = stall()
    run.stalled.rejected_commits = 0
    h = History([op for op in h if op.outcome != "fail"])
    words = "\n".join(t.get_text() for t in texts(figures.consumer_stall(run, h)))
    assert "late commit accepted" in words


def test_a_kill_before_any_flush_starts_at_the_files_start(figure_checks) -> None:
    texts = figure_checks[2]
    fig = figures.connect_two_writes(window(position=None))
    figure_checks[0]("connect_two_writes", fig)
    figure_checks[1]("connect_two_writes", fig)
    words = "\n".join(t.get_text() for t in texts(fig))
    assert "no flush has committed a position yet" in words
    assert "re-read lines 1-150" in words and "from the file's start" in words


def test_a_run_that_does_not_fit_a_new_figure_says_what_is_accepted() -> None:
    run, h = stall()
    with pytest.raises(BadValue, match="both"):
        figures.consumer_stall(run)
    with pytest.raises(BadValue, match="processed by both"):
        figures.consumer_stall(run, History())
    rep, log = stale()
    with pytest.raises(BadValue, match="both"):
        figures.stale_end_txn(log=log)
    with pytest.raises(BadValue, match="both transactions"):
        figures.stale_end_txn(rep, log.iloc[:2])
    unfinished = window()
    unfinished.result = None
    with pytest.raises(BadValue, match="kill_mid_stream"):
        figures.connect_two_writes(unfinished)


def test_a_rebalance_is_read_from_the_runs_callbacks() -> None:
    """Who held what, and how, from the hand-written callbacks: eager revokes what comes
    back (b) and moves the staller's partitions (m); static moves nothing, and the
    staller's partitions sit idle (i) until it polls again."""
    eager, static = group_run("eager"), group_run("static")
    before = {p: f"consumer-{p // 2}" for p in range(6)}
    assert figures_run._holders(eager, 2.0, 12.0, before) == {
        "consumer-0": [(0, "b"), (1, "b"), (2, "m")],
        "consumer-1": [(3, "b"), (4, "m"), (5, "m")]}
    at_wake = {0: "consumer-0", 1: "consumer-0", 2: "consumer-0", 3: "consumer-1",
               4: "consumer-1", 5: "consumer-1"}
    assert figures_run._holders(eager, 12.0, 17.0, at_wake) == {
        "consumer-0": [(0, "b"), (1, "b")], "consumer-1": [(2, "m"), (3, "b")],
        "consumer-2": [(4, "m"), (5, "m")]}
    assert figures_run._holders(static, 2.0, 12.0, before)["consumer-2"] == [(4, "i"),
                                                                             (5, "i")]
    assert figures_run._holders(static, 12.0, 17.0, before)["consumer-2"] == [(4, "k"),
                                                                              (5, "k")]
    with pytest.raises(BadValue, match="compare_rebalances"):
        figures.rebalance_strategies([])


def test_a_partition_nobody_committed_starts_at_the_earliest_offset(figure_checks) -> None:
    """As in a real run of chapter 2b: pipeline-A had committed only partition 2, so
    pipeline-B read partition 0 from its earliest offset (auto.offset.reset)."""
    run, h = stall()
    h = History([op for op in h if not (op.kind == "commit" and op.outcome == "ok")])
    h.record("pipeline-A", "commit", "ok", detail="in/2@30")
    texts = figure_checks[2]
    words = " ".join(" ".join(t.get_text() for t in texts(
        figures.consumer_stall(run, h))).split())
    assert ("pipeline-B started where pipeline-A had committed: partition 0: no commit, "
            "the earliest offset, partition 2: offset 30.") in words
