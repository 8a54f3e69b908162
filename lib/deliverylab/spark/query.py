"""What every Spark run shares and what needs no Spark: the sinks and crashes by name,
the checkpoint's two logs (``offsets/N`` before a batch, ``commits/N`` after it; see
:mod:`deliverylab.spark.pipeline` for why the guarantee lives between them), the query's
spec (JSON, so a child driver gets it whole, with where its
:class:`~deliverylab.history.OpLog` goes), and the wait for a query. The sinks and the
pipeline both build on it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..errors import LabError, bad_value

#: The sinks a pipeline can write to (see :mod:`deliverylab.spark.sinks`), and the
#: guarantee Spark's documentation gives each under a replayed batch.
SINKS: dict[str, str] = {
    "kafka": "at-least-once: Spark's Kafka writer sends a replayed batch again",
    "files": "exactly-once for Spark readers: the file sink's _spark_metadata log "
             "skips a batch it already holds",
    "database": "exactly-once: one database transaction per batch, keyed by "
                "(query id, batch id)",
    "kafka_txn": "exactly-once for read_committed readers: one Kafka transaction per "
                 "batch, with the batch id committed beside the output",
}

#: The two crashes of the registry, both between the sink's write and ``commits/N``.
CRASHES: tuple[str, ...] = ("crash_query", "kill_driver")

#: Offsets per micro-batch unless told otherwise: small, so batches are countable.
MAX_OFFSETS = 10


# --- the checkpoint's two logs (no Spark needed) ------------------------------------------


def _json_lines(text: str) -> list[Any]:
    """The JSON lines of a metadata-log file (its first line is a version, ``v1``)."""
    out = []
    for line in text.splitlines():
        line = line.strip().lstrip("\x00")
        if line.startswith("{"):
            out.append(json.loads(line))
    return out


def parse_offsets(text: str) -> dict[str, Any]:
    """One ``offsets/N`` file: ``{"metadata": {...}, "sources": [{topic: {part: off}}]}``.

    Line 1 is the version, line 2 the batch metadata (watermark, timestamp, conf),
    then one line per source: Kafka's end offsets of batch N, per topic and partition.
    """
    if not text.startswith("v"):
        raise bad_value("offsets file", text[:40], "a Spark offsets log entry ('v1' first)")
    lines = _json_lines(text)
    if not lines:
        raise bad_value("offsets file", text[:40], "a version line, metadata, then offsets")
    return {"metadata": lines[0], "sources": lines[1:]}


def kafka_offsets(source: dict[str, Any]) -> dict[tuple[str, int], int]:
    """``{"in": {"0": 12}}`` -> ``{("in", 0): 12}``."""
    return {(topic, int(p)): int(o) for topic, parts in source.items()
            for p, o in parts.items()}


def parse_initial(text: str) -> dict[tuple[str, int], int]:
    """``sources/0/0``: where the Kafka source started (the start of batch 0)."""
    lines = _json_lines(text)
    if not lines:
        raise bad_value("initial offsets file", text[:40], "Kafka's start offsets as JSON")
    return kafka_offsets(lines[-1])


@dataclass(frozen=True)
class BatchLog:
    """One micro-batch as the checkpoint tells it: its offset range and whether it
    was committed. ``size`` is the offsets it spans -- the records it *predicts*
    (a transactional input's markers take offsets too, so records <= size)."""

    batch: int
    start: dict[tuple[str, int], int]
    end: dict[tuple[str, int], int]
    committed: bool
    planned_at: float | None = None  # offsets/N's mtime (epoch seconds)
    committed_at: float | None = None  # commits/N's mtime

    @property
    def size(self) -> int:
        return sum(e - self.start.get(tp, 0) for tp, e in self.end.items())

    def ranges(self) -> dict[str, str]:
        """Per partition ``"start-end"``, as a student reads it."""
        return {f"{t}/{p}": f"{self.start.get((t, p), 0)}-{e}"
                for (t, p), e in sorted(self.end.items())}

    def to_dict(self) -> dict[str, Any]:
        return {"batch": self.batch, "size": self.size, "committed": self.committed,
                "ranges": self.ranges()}


def _numbered(folder: Path) -> list[int]:
    if not folder.is_dir():
        return []
    return sorted(int(p.name) for p in folder.iterdir() if p.name.isdigit() and p.is_file())


def batches(checkpoint: str | Path) -> list[BatchLog]:
    """Every batch planned in ``checkpoint``: ``offsets/N`` beside ``commits/N``."""
    ckpt = Path(checkpoint)
    planned = _numbered(ckpt / "offsets")
    committed = set(_numbered(ckpt / "commits"))
    initial_file = ckpt / "sources" / "0" / "0"
    start = parse_initial(initial_file.read_text()) if initial_file.is_file() else {}
    out = []
    for n in planned:
        path = ckpt / "offsets" / str(n)
        sources = parse_offsets(path.read_text())["sources"]
        end = kafka_offsets(sources[0]) if sources else {}
        commit = ckpt / "commits" / str(n)
        out.append(BatchLog(n, dict(start), end, n in committed, path.stat().st_mtime,
                            commit.stat().st_mtime if n in committed else None))
        start = {**start, **end}
    return out


def predicted_size(checkpoint: str | Path, batch: int) -> int:
    """How many offsets batch ``batch`` spans, from ``offsets/N-1`` and ``offsets/N``:
    on a plain (non-transactional) input, exactly the records a replay writes again."""
    for b in batches(checkpoint):
        if b.batch == batch:
            return b.size
    raise bad_value("batch", batch, f"a batch planned in {checkpoint}/offsets")


def uncommitted(checkpoint: str | Path) -> list[int]:
    """Batches planned but not committed: the ones a restart runs again."""
    return [b.batch for b in batches(checkpoint) if not b.committed]


def query_id(checkpoint: str | Path) -> str:
    """The query's id (``metadata``), stable across restarts of one checkpoint."""
    return json.loads((Path(checkpoint) / "metadata").read_text())["id"]


# --- the query (the same code in the kernel and in a child driver) --------------------


@dataclass
class QuerySpec:
    """Everything one run of the query needs; JSON, so a child driver gets it whole.

    ``crash_at``: the batch after whose write the query dies (``crash``: raise an
    exception in the driver, or -- ``kill_driver`` -- park there until the parent
    SIGKILLs the driver process). A crash happens once per ``state`` folder: the
    restarted query finds the flag and goes on.
    """

    bootstrap: str
    source: str
    sink: str
    target: str  # output topic, folder or database file
    checkpoint: str
    state: str  # crash flags, the "parked" file, the child's ops
    process: str = "spark-0"
    max_offsets: int = MAX_OFFSETS
    crash_at: int | None = None
    crash: str | None = None
    master: str | None = None
    shuffle_partitions: int = 2

    def __post_init__(self) -> None:
        if self.sink not in SINKS:
            raise bad_value("sink", self.sink, "one of " + ", ".join(SINKS))
        if self.crash is not None and self.crash not in CRASHES:
            raise bad_value("crash", self.crash, "None or one of " + ", ".join(CRASHES))
        if self.crash_at is not None and (not isinstance(self.crash_at, int)
                                          or self.crash_at < 0):
            raise bad_value("crash_at", self.crash_at, "None or a batch number >= 0")
        if not isinstance(self.max_offsets, int) or self.max_offsets < 1:
            raise bad_value("max_offsets", self.max_offsets, "a whole number >= 1")

    @property
    def ops_path(self) -> Path:
        """The :class:`~deliverylab.history.OpLog` of this run's driver."""
        return Path(self.state) / f"ops-{self.process}.jsonl"

    def parked_path(self, batch: int) -> Path:
        return Path(self.state) / f"parked-{batch}"

    def crashed_path(self, batch: int) -> Path:
        return Path(self.state) / f"crashed-{batch}"

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> QuerySpec:
        return cls(**json.loads(text))


def await_query(query: Any, what: str, checkpoint: str, timeout: float) -> None:
    """Wait for an ``availableNow`` query to drain its input; raise (never return half a
    run) if it does not within ``timeout``, and stop it either way."""
    try:
        if not query.awaitTermination(timeout):
            raise LabError(f"{what} did not finish within {timeout:.0f} s; its "
                           f"checkpoint is {checkpoint}")
    finally:
        if query.isActive:
            query.stop()
