"""The Spark sinks' readers without Spark: the file sink's metadata log and the
database sink's rows, read back as the Checker's reads."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from deliverylab.spark import sinks as K
from deliverylab.values import encode


def test_file_sink_log_lists_each_batchs_files(tmp_path: Path):
    meta = tmp_path / "_spark_metadata"
    meta.mkdir()
    (meta / "0").write_text('v1\n{"path":"file:/o/part-0.parquet","size":1}\n'
                            '{"path":"file:/o/part-1.parquet","size":1}')
    (meta / ".0.crc").write_text("x")
    assert K.file_batches(tmp_path) == {0: ["file:/o/part-0.parquet",
                                            "file:/o/part-1.parquet"]}


def test_database_reads_are_checker_reads(tmp_path: Path):
    path = tmp_path / "out.sqlite"
    db = sqlite3.connect(path)
    db.executescript(K._SCHEMA)
    db.execute("INSERT INTO records (query_id, batch_id, provenance, partition, value) "
               "VALUES ('q', 0, 'in-0-0', 0, ?)", (encode("producer-0", 4).decode(),))
    db.commit()
    db.close()
    reads = K.read_database(path)
    assert [(r.topic, r.partition, r.value) for r in reads] == [(str(path), 0, "producer-0:4")]
