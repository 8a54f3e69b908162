"""What every Spark run shares, without Spark: the checkpoint's two logs, the batch-size
prediction and the query spec."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deliverylab.errors import BadValue
from deliverylab.spark import query as Q

META = '{"batchWatermarkMs":0,"batchTimestampMs":1,"conf":{}}'


def write_checkpoint(root: Path, ends: list[dict[str, int]], committed: int,
                     start: dict[str, int] | None = None) -> Path:
    """A checkpoint as Spark 4.0 writes it: offsets/N for each end, commits/0..committed."""
    ckpt = root / "ckpt"
    (ckpt / "offsets").mkdir(parents=True)
    (ckpt / "commits").mkdir()
    (ckpt / "sources" / "0").mkdir(parents=True)
    (ckpt / "metadata").write_text('{"id":"q-1"}')
    (ckpt / "sources" / "0" / "0").write_text(
        "\x00v1\n" + json.dumps({"in": start or {"0": 0, "1": 0}}))
    for n, end in enumerate(ends):
        (ckpt / "offsets" / str(n)).write_text(f"v1\n{META}\n" + json.dumps({"in": end}))
        (ckpt / "offsets" / f".{n}.crc").write_text("crc")
        if n <= committed:
            (ckpt / "commits" / str(n)).write_text('v1\n{"nextBatchWatermarkMs":0}')
    return ckpt


def test_parse_offsets_reads_version_metadata_and_kafka_offsets():
    parsed = Q.parse_offsets(f'v1\n{META}\n{{"in":{{"0":12,"2":9}}}}')
    assert parsed["metadata"]["batchWatermarkMs"] == 0
    assert Q.kafka_offsets(parsed["sources"][0]) == {("in", 0): 12, ("in", 2): 9}


def test_parse_offsets_refuses_other_files():
    with pytest.raises(BadValue, match="offsets file"):
        Q.parse_offsets('{"in":{"0":1}}')


def test_batches_pair_offsets_with_commits_and_predict_sizes(tmp_path: Path):
    ckpt = write_checkpoint(tmp_path, [{"0": 3, "1": 4}, {"0": 6, "1": 8}, {"0": 7, "1": 8}],
                            committed=0)
    logs = Q.batches(ckpt)
    assert [(b.batch, b.size, b.committed) for b in logs] == [(0, 7, True), (1, 7, False),
                                                             (2, 1, False)]
    assert logs[1].ranges() == {"in/0": "3-6", "in/1": "4-8"}
    assert Q.predicted_size(ckpt, 1) == 7
    assert Q.uncommitted(ckpt) == [1, 2]
    assert Q.query_id(ckpt) == "q-1"


def test_batch_zero_starts_where_the_source_started(tmp_path: Path):
    ckpt = write_checkpoint(tmp_path, [{"0": 15, "1": 20}], committed=0,
                            start={"0": 10, "1": 10})
    assert Q.predicted_size(ckpt, 0) == 15


def test_a_partition_new_in_a_batch_starts_at_zero(tmp_path: Path):
    ckpt = write_checkpoint(tmp_path, [{"0": 2}, {"0": 4, "1": 3}], committed=1, start={"0": 0})
    assert [b.size for b in Q.batches(ckpt)] == [2, 5]


def test_predicting_a_batch_never_planned_is_refused(tmp_path: Path):
    ckpt = write_checkpoint(tmp_path, [{"0": 2, "1": 2}], committed=0)
    with pytest.raises(BadValue, match="batch=5"):
        Q.predicted_size(ckpt, 5)


def test_no_checkpoint_yet_has_no_batches(tmp_path: Path):
    assert Q.batches(tmp_path / "nothing") == []


def spec(tmp_path: Path, **kw) -> Q.QuerySpec:
    base = dict(bootstrap="127.0.0.1:9092", source="in", sink="kafka", target="out",
                checkpoint=str(tmp_path / "ckpt"), state=str(tmp_path / "state"))
    base.update(kw)
    return Q.QuerySpec(**base)


@pytest.mark.parametrize("bad", [dict(sink="console"), dict(crash="explode"),
                                 dict(crash_at=-1), dict(max_offsets=0)])
def test_query_spec_refuses_bad_values(tmp_path: Path, bad: dict):
    with pytest.raises(BadValue):
        spec(tmp_path, **bad)


def test_query_spec_round_trips_through_json(tmp_path: Path):
    s = spec(tmp_path, crash_at=2, crash="kill_driver")
    assert Q.QuerySpec.from_json(s.to_json()) == s

