"""The log as the broker stored it: segment files read with Kafka's own DumpLogSegments.

No consumer ever returns what chapter 03 and 04 need to show -- the producer id, epoch
and sequence number of every batch, and the transaction markers -- so these read the
partition's segment files from the broker's data directory, read-only, with the
broker's jars (the tool behind ``bin/kafka-dump-log.sh``). Introduced in
``labs/03_idempotent_producer.ipynb``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from . import values as V
from .cluster import tools
from .errors import LabError, bad_value

if TYPE_CHECKING:
    import pandas as pd

_PAIR = re.compile(r"(\w+): (\S+)")


def dump_segments(cluster: Any, topic: str, partition: int = 0,
                  node: int | None = None, timeout: float = 120.0) -> str:
    """Raw output of Kafka's ``kafka.tools.DumpLogSegments --print-data-log`` for one
    partition's segment files on ``node`` (default: its leader), as the broker wrote them.

    Reads the files a local broker keeps in its data directory, read-only (a container's
    are copied out first), with the broker's own jars: the same tool as
    ``bin/kafka-dump-log.sh`` in a Kafka download.
    """
    backend = getattr(cluster, "backend", None)
    if backend is None or not hasattr(backend, "partition_dir"):
        raise LabError("reading log segments needs a running lab cluster (local or docker)")
    if node is None:
        node = cluster.wait_leader(topic, partition, timeout=30)
    folder = backend.partition_dir(node, f"{topic}-{partition}")
    files = sorted(folder.glob("*.log"))
    if not files:
        raise bad_value("topic/partition", f"{topic}/{partition}",
                        f"a partition with a replica on broker {node} (no segment in {folder})")
    return tools.run("kafka-dump-log", "--print-data-log",
                     "--files", ",".join(str(f) for f in files), timeout=timeout)


def parse_segments(text: str) -> list[dict[str, Any]]:
    """One row per record of ``DumpLogSegments --print-data-log`` output, with its batch.

    Columns: offset, batch (base offset), producer_id, producer_epoch, sequence,
    transactional, control, marker (COMMIT / ABORT for a control record), create_time,
    crc (of the batch: a resent batch has the same), value (``producer:seq`` for a lab
    value).
    """
    rows: list[dict[str, Any]] = []
    batch: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("baseOffset:"):
            batch = dict(_PAIR.findall(line))
        elif line.startswith("| offset:"):
            head, _, payload = line.partition(" payload: ")
            rec = dict(_PAIR.findall(head))
            marker = rec.get("endTxnMarker")
            value = None
            if payload:
                try:
                    value = str(V.decode(payload))
                except ValueError:
                    value = None
            rows.append({
                "offset": int(rec["offset"]),
                "batch": int(batch.get("baseOffset", rec["offset"])),
                "producer_id": int(batch.get("producerId", -1)),
                "producer_epoch": int(batch.get("producerEpoch", -1)),
                "sequence": int(rec.get("sequence", -1)),
                "transactional": batch.get("isTransactional") == "true",
                "control": batch.get("isControl") == "true",
                "marker": marker,
                "create_time": int(rec.get("CreateTime", -1)),
                "crc": int(batch.get("crc", 0)),
                "value": value,
            })
    return rows


def log_batches(cluster: Any, topic: str, partition: int = 0,
                node: int | None = None) -> pd.DataFrame:
    """The partition's records as stored on disk, as a DataFrame (see
    :func:`parse_segments`): producer id, epoch and sequence number of every record, and
    the transaction markers, which no consumer ever returns."""
    import pandas as pd

    rows = parse_segments(dump_segments(cluster, topic, partition, node))
    columns = ["offset", "batch", "producer_id", "producer_epoch", "sequence",
               "transactional", "control", "marker", "create_time", "crc", "value"]
    return pd.DataFrame(rows, columns=columns)


def producer_summary(batches: pd.DataFrame, by: tuple[str, ...] = ()) -> pd.DataFrame:
    """One row per (producer id, epoch) of :func:`log_batches` (per ``by`` columns
    first, e.g. ``("partition",)``): how many records it wrote, its first and last
    sequence numbers and how many distinct ones -- a restarted producer shows up as a
    second producer id, a fenced one as an older epoch. Introduced in
    ``labs/03_idempotent_producer.ipynb``."""
    data = batches[~batches["control"]] if "control" in batches else batches
    return data.groupby([*by, "producer_id", "producer_epoch"]).agg(
        records=("offset", "count"), first_sequence=("sequence", "min"),
        last_sequence=("sequence", "max"), distinct_sequences=("sequence", "nunique"))
