"""Chapter 05's kit without Spark: the observed figures from hand-made scenes."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from deliverylab.chapters.spark_pipeline.scenes import observations
from deliverylab.errors import BadValue


def _scene(predicted=None, extra=0, lost=0, missing=0, **facts):
    counts = {"lost": lost, "pipeline_missing": missing}
    return SimpleNamespace(predicted=predicted, extra=extra, facts=facts,
                           result=SimpleNamespace(counts=counts))


def test_observations_name_every_figure_the_verdict_checks():
    plain = _scene()
    txn_input = _scene(input_records=30, input_offsets=33)
    crashed = {"crash_query": _scene(10, 10), "kill_driver": _scene(10, 9, lost=1)}
    eos = {"files": _scene(10, 0, plain_reader_records=40),
           "database": _scene(10, 0, missing=2),
           "kafka_txn": _scene(10, 0, aborted_visible_uncommitted=10)}
    dedup = {"records_in": 40, "records_out": 30}
    seen = observations(plain, txn_input, crashed, eos, dedup)
    assert seen == {
        "txn_input_records": 30, "txn_input_offsets": 33,
        "crash_query_predicted": 10, "crash_query_extra": 10,
        "kill_driver_predicted": 10, "kill_driver_extra": 9,
        "files_extra": 0, "files_predicted": 10, "database_extra": 0,
        "database_predicted": 10, "kafka_txn_extra": 0, "kafka_txn_predicted": 10,
        "kafka_txn_aborted_visible_uncommitted": 10, "files_plain_reader_records": 40,
        "dedup_records_in": 40, "dedup_records_out": 30,
        "pipeline_missing": 2, "lost": 1}


def test_observations_refuse_a_missing_scene():
    with pytest.raises(BadValue, match="kafka_txn"):
        observations(_scene(), _scene(input_records=1, input_offsets=1),
                     {"crash_query": _scene()}, {"files": _scene()}, {})
    with pytest.raises(BadValue, match="crashed"):
        observations(_scene(), _scene(), {}, {"files": _scene()}, {})
