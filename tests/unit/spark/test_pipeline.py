"""The Spark pipeline without Spark: the crash hook a sink calls after its write, and the
refusal of an unknown sink."""

from __future__ import annotations

from pathlib import Path

import pytest

from deliverylab.errors import BadValue
from deliverylab.history import History
from deliverylab.spark import pipeline as S
from deliverylab.spark import query as Q


def test_crash_hook_raises_once_then_lets_the_replay_pass(tmp_path: Path):
    s = Q.QuerySpec(bootstrap="127.0.0.1:9092", source="in", sink="kafka", target="out",
                    checkpoint=str(tmp_path / "ckpt"), state=str(tmp_path / "state"),
                    t0_epoch=1000.0, crash_at=1, crash="crash_query")
    Path(s.state).mkdir()
    log = Q.OpLog(s.ops_path, s.t0_epoch)
    hook = S._crash_hook(s, log)
    hook(0)  # not the batch: nothing happens
    with pytest.raises(RuntimeError, match="after writing batch 1"):
        hook(1)
    hook(1)  # the replay of batch 1 after the restart goes on
    faults = [op for op in History.load(s.ops_path) if op.kind == "fault"]
    assert [op.fault for op in faults] == ["crash_query"]


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
