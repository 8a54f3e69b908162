"""The one encoding of the values the lab writes.

Every value is unique (producer id + sequence number) so that a loss or a duplicate
is a fact about the topic, not a guess. Values are small JSON objects so that both the
Python checkers and Spark's ``from_json`` decode them without a custom reader; the key
is the producer id so a student reading raw records sees who wrote them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

#: JSON field names, shared with the Spark schema in the Inspector.
FIELDS = ("producer", "seq", "payload")


@dataclass(frozen=True, order=True)
class ValueId:
    """Identity of one written value: who wrote it and its sequence number."""

    producer: str
    seq: int

    def __str__(self) -> str:
        return f"{self.producer}:{self.seq}"


def parse(text: str | ValueId) -> ValueId:
    """Parse ``"producer:seq"`` (the ``str`` of a :class:`ValueId`) back into a ValueId.

    Splits on the *last* colon so a producer id may itself contain colons. The one
    parser of value ids: raises ``ValueError`` on anything else.
    """
    if isinstance(text, ValueId):
        return text
    return ValueId(*split(text))


def split(text: str) -> tuple[str, int]:
    """:func:`parse` without the object: ``(producer, seq)``, which sorts as the ValueId
    does. Checkers split a million values; a tuple is what they compare."""
    producer, sep, seq = str(text).rpartition(":")
    if not (sep and producer) or not seq.lstrip("-").isdigit():
        raise ValueError(f"not a value id: {str(text)[:60]!r}; expected 'producer:seq', "
                         "e.g. 'producer-0:17'")
    return producer, int(seq)


def encode(producer: str, seq: int, payload_size: int = 0) -> bytes:
    """Encode one value; ``payload_size`` pads it (benchmarks write ~1 KB records)."""
    return json.dumps(
        {"producer": producer, "seq": seq, "payload": "x" * payload_size},
        separators=(",", ":"),
    ).encode()


def decode(raw: bytes | str) -> ValueId:
    """Decode a value written by :func:`encode`; raises ``ValueError`` on anything else."""
    try:
        obj = json.loads(raw)
        return ValueId(str(obj["producer"]), int(obj["seq"]))
    except (ValueError, KeyError, TypeError) as exc:
        text = raw[:60] if raw is not None else raw
        raise ValueError(f"not a lab value: {text!r}") from exc


def key(producer: str) -> bytes:
    """Record key: the producer id (keeps one producer's values readable in raw dumps)."""
    return producer.encode()
