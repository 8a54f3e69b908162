"""Reading DumpLogSegments output, on a literal dump (no broker)."""

from __future__ import annotations

import pandas as pd

from deliverylab.segments import parse_segments, producer_summary

# --- the log on disk -----------------------------------------------------------------------

DUMP = """\
Dumping /tmp/x/node-1/data/t-0/00000000000000000000.log
Log starting offset: 0
baseOffset: 0 lastOffset: 0 count: 1 baseSequence: 0 lastSequence: 0 producerId: 7 \
producerEpoch: 2 partitionLeaderEpoch: 0 isTransactional: true isControl: false \
deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 100 size: 139 magic: 2 \
compresscodec: none crc: 520232546 isvalid: true
| offset: 0 CreateTime: 100 keySize: 4 valueSize: 40 sequence: 0 headerKeys: [] key: shop \
payload: {"producer":"shop","seq":0,"payload":""}
baseOffset: 1 lastOffset: 1 count: 1 baseSequence: -1 lastSequence: -1 producerId: 7 \
producerEpoch: 2 partitionLeaderEpoch: 0 isTransactional: true isControl: true \
deleteHorizonMs: OptionalLong.empty position: 139 CreateTime: 101 size: 78 magic: 2 \
compresscodec: none crc: 1 isvalid: true
| offset: 1 CreateTime: 101 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] \
endTxnMarker: COMMIT coordinatorEpoch: 0
"""


def test_parse_segments_reads_records_batches_and_markers():
    rows = parse_segments(DUMP)
    assert [r["offset"] for r in rows] == [0, 1]
    first, marker = rows
    assert first["producer_id"] == 7 and first["producer_epoch"] == 2
    assert first["sequence"] == 0 and first["transactional"] and not first["control"]
    assert first["value"] == "shop:0" and first["marker"] is None
    assert first["crc"] == 520232546 and first["create_time"] == 100
    assert marker["control"] and marker["marker"] == "COMMIT" and marker["value"] is None


def test_producer_summary_counts_records_per_producer_id_and_epoch():
    rows = pd.DataFrame(parse_segments(DUMP))
    summary = producer_summary(rows)
    assert list(summary["records"]) == [1]  # the marker is not a record
    assert summary.index[0] == (7, 2)
