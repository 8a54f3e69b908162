"""The figures filled with a run's values, drawn from hand-written results: legible at
420 px, nothing overlapping, and every number of the run in the figure's text (so a
figure cannot silently fall back to the example's offsets)."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
import pytest
from matplotlib.figure import Figure

from deliverylab.chapters.at_least_once.lost_ack import LostAckResult
from deliverylab.chapters.at_most_once.recipes import AckedThenLostResult
from deliverylab.errors import BadValue
from deliverylab.notebook import figures
from deliverylab.spark.query import BatchLog
from deliverylab.spark.scene import SceneResult


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
    words = "\n".join(t.get_text() for t in texts(fig))
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
