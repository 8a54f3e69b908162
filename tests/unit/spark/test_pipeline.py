"""The Spark pipeline without Spark: the crash hook a sink calls after its write, and the
refusal of an unknown sink."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from deliverylab.errors import BadValue
from deliverylab.history import History, OpLog
from deliverylab.spark import pipeline as S
from deliverylab.spark import query as Q


def test_crash_hook_raises_once_then_lets_the_replay_pass(tmp_path: Path):
    s = Q.QuerySpec(bootstrap="127.0.0.1:9092", source="in", sink="kafka", target="out",
                    checkpoint=str(tmp_path / "ckpt"), state=str(tmp_path / "state"),
                    crash_at=1, crash="crash_query")
    Path(s.state).mkdir()
    log = OpLog(s.ops_path)
    hook = S._crash_hook(s, log)
    hook(0)  # not the batch: nothing happens
    with pytest.raises(RuntimeError, match="after writing batch 1"):
        hook(1)
    hook(1)  # the replay of batch 1 after the restart goes on
    faults = [op for op in History.load(s.ops_path) if op.kind == "fault"]
    assert [op.fault for op in faults] == ["crash_query"]



def test_a_commit_op_is_timed_by_its_commit_file_on_the_history_s_clock(tmp_path: Path):
    """commits/N's mtime is wall-clock; the op log's clock is monotonic: the commit op
    lands in the History when the file was written, not when it was read."""
    ckpt = tmp_path / "ckpt"
    for n, end in enumerate(('{"in":{"0":3}}', '{"in":{"0":6}}')):
        for folder, text in (("offsets", f"v1\n{{}}\n{end}"), ("commits", "v1\n{}")):
            (ckpt / folder).mkdir(parents=True, exist_ok=True)
            (ckpt / folder / str(n)).write_text(text)
    s = Q.QuerySpec(bootstrap="127.0.0.1:9092", source="in", sink="kafka", target="out",
                    checkpoint=str(ckpt), state=str(tmp_path / "state"))
    Path(s.state).mkdir()
    history = History()
    wall_zero = time.time() - history.now()
    os.utime(ckpt / "commits" / "0", (wall_zero - 30, wall_zero - 30))  # before `since`
    os.utime(ckpt / "commits" / "1", (wall_zero + 12.5, wall_zero + 12.5))
    S.record_commits(s, OpLog(s.ops_path), since=wall_zero)
    (op,) = history.merge_logs([s.ops_path]).ops
    assert (op.kind, op.process, op.detail.split()[0]) == ("commit", "spark-0", "commits/1")
    assert abs(op.time - 12.5) < 0.05, op.time


def test_pipeline_refuses_an_unknown_sink():
    with pytest.raises(BadValue, match="sink"):
        S.SparkPipeline("127.0.0.1:9092", "in", sink="console")


def test_a_pipeline_s_own_folder_is_inside_this_process_s_spark_folder(monkeypatch, tmp_path):
    """Checkpoint, state and a database sink's file go where the exit hook and the next
    session's sweep remove them, not loose in the shared temporary directory."""
    from deliverylab.spark import session as sess

    monkeypatch.setattr(sess.tempfile, "gettempdir", lambda: str(tmp_path))
    pipe = S.SparkPipeline("127.0.0.1:9092", "in", sink="database", name="spark-database")
    own = tmp_path / f"deliverylab-spark-{sess.os.getpid()}"
    assert pipe.workdir.parent == sess.temp_dir() == own
    assert Path(pipe.output).parent == pipe.workdir
    assert [p.name for p in tmp_path.iterdir()] == [sess.temp_dir().name]
