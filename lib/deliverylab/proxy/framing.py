"""Kafka's wire framing, as much as the fault proxy needs: frames, headers, api keys.

Kafka's framing is simple: a 4-byte big-endian size, then a header whose first fields
are the api key, api version and correlation id; a response starts with the correlation
id. A broker answers the requests of one connection in order, so the proxy can tell
which response answers which request without decoding anything else. Pure functions of
bytes, unit-tested on captured frames (``tests/unit/proxy/test_framing.py``).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ..errors import LabError, bad_value

#: Kafka api names and keys (the ones a lab can sensibly target, plus common admin ones).
API_KEYS: dict[str, int] = {
    "Produce": 0,
    "Fetch": 1,
    "ListOffsets": 2,
    "Metadata": 3,
    "OffsetCommit": 8,
    "OffsetFetch": 9,
    "FindCoordinator": 10,
    "JoinGroup": 11,
    "Heartbeat": 12,
    "LeaveGroup": 13,
    "SyncGroup": 14,
    "DescribeGroups": 15,
    "ListGroups": 16,
    "SaslHandshake": 17,
    "ApiVersions": 18,
    "CreateTopics": 19,
    "DeleteTopics": 20,
    "DeleteRecords": 21,
    "InitProducerId": 22,
    "OffsetForLeaderEpoch": 23,
    "AddPartitionsToTxn": 24,
    "AddOffsetsToTxn": 25,
    "EndTxn": 26,
    "WriteTxnMarkers": 27,
    "TxnOffsetCommit": 28,
    "DescribeConfigs": 32,
    "AlterConfigs": 33,
    "DescribeLogDirs": 35,
    "SaslAuthenticate": 36,
    "CreatePartitions": 37,
    "DeleteGroups": 42,
    "IncrementalAlterConfigs": 44,
    "OffsetDelete": 47,
    "DescribeCluster": 60,
    "DescribeProducers": 61,
    "DescribeTransactions": 65,
    "ListTransactions": 66,
    "ConsumerGroupHeartbeat": 68,
    "ConsumerGroupDescribe": 69,
    "GetTelemetrySubscriptions": 71,
    "PushTelemetry": 72,
}
API_NAMES: dict[int, str] = {v: k for k, v in API_KEYS.items()}

PRODUCE = API_KEYS["Produce"]
#: First Produce version with a flexible (tagged-fields) request header and body.
PRODUCE_FLEXIBLE_SINCE = 9
#: Bytes of a request's body kept for parsing: the header plus Produce's transactional
#: id and acks fit easily (client ids and transactional ids are short).
REQUEST_PEEK = 1024
#: A response is identified by its correlation id: the first 4 bytes after the size.
RESPONSE_PEEK = 4
#: Bytes of a response kept when its error code is wanted (a held request released or
#: injected): a Produce response's topic name comes before the partition's error code.
ERROR_PEEK = 512
#: First version with a flexible header and body, for the apis whose error code
#: :func:`parse_response_error` reads.
FLEXIBLE_SINCE: dict[int, int] = {0: 9, 22: 2, 25: 3, 26: 3}
#: Broker error codes the published-bug reproductions meet, by name (Kafka's protocol
#: guide numbering); others read ``error-<code>``.
ERROR_CODES: dict[int, str] = {
    0: "NONE", 7: "REQUEST_TIMED_OUT", 45: "OUT_OF_ORDER_SEQUENCE_NUMBER",
    46: "DUPLICATE_SEQUENCE_NUMBER", 47: "INVALID_PRODUCER_EPOCH", 48: "INVALID_TXN_STATE",
    49: "INVALID_PRODUCER_ID_MAPPING", 51: "CONCURRENT_TRANSACTIONS",
    53: "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", 59: "UNKNOWN_PRODUCER_ID",
    90: "PRODUCER_FENCED", 15: "COORDINATOR_NOT_AVAILABLE", 16: "NOT_COORDINATOR",
}
#: Anything bigger is not Kafka talking (brokers cap requests at 100 MB by default).
MAX_FRAME = 512 * 1024 * 1024
DIRECTIONS = ("both", "to_broker", "to_client")


def api_key(api: str | int) -> int:
    """The numeric key of an api given by name (``"Produce"``) or key (``0``)."""
    if isinstance(api, int) and not isinstance(api, bool) and api in API_NAMES:
        return api
    if isinstance(api, str) and api in API_KEYS:
        return API_KEYS[api]
    raise bad_value("api", api, "a Kafka api name: " + ", ".join(API_KEYS))


def api_name(key: int) -> str:
    """The name of an api key; unknown keys read ``api-<key>`` rather than failing."""
    return API_NAMES.get(key, f"api-{key}")


# --- framing -------------------------------------------------------------------------


class FramingError(LabError):
    """The bytes on a connection are not Kafka frames (the proxy closes it)."""


@dataclass(frozen=True)
class Frame:
    """One frame seen on a byte stream.

    ``start`` is the stream offset of its 4-byte size field, ``length`` counts that size
    field too (so the next frame starts at ``start + length``), and ``head`` holds the
    first bytes of the body, up to the scanner's ``peek``.
    """

    start: int
    length: int
    head: bytes

    @property
    def end(self) -> int:
        return self.start + self.length


class FrameScanner:
    """Finds Kafka frame boundaries in a byte stream fed in arbitrary chunks.

    It never copies a frame's body: it keeps the first ``peek`` bytes of each body and
    skips the rest by arithmetic, so a 1 MB produce request costs the same as a tiny one.
    Offsets are counted from the first byte ever fed, so a caller can cut a chunk
    exactly at a frame boundary that was announced in an earlier chunk.
    """

    def __init__(self, peek: int) -> None:
        self.peek = peek
        self.pos = 0  # stream offset of the next byte to be fed
        self._skip = 0  # body bytes of the current frame still to pass over
        self._partial = bytearray()  # size field + head of a frame split across chunks
        self._start = 0
        self._size = -1

    def feed(self, data: bytes | bytearray | memoryview) -> list[Frame]:
        """Scan one chunk; returns the frames whose head completed in it, in order."""
        view = memoryview(data)
        n = len(view)
        i = 0
        frames: list[Frame] = []
        peek = self.peek
        while i < n:
            if self._skip:
                step = min(self._skip, n - i)
                self._skip -= step
                i += step
                continue
            if not self._partial and n - i >= 4:
                # Fast path: the size field is whole in this chunk.
                size = int.from_bytes(view[i:i + 4], "big", signed=True)
                self._check(size)
                want = min(size, peek)
                if n - i - 4 >= want:
                    frames.append(Frame(self.pos + i, 4 + size, bytes(view[i + 4:i + 4 + want])))
                    i += 4 + want
                    self._skip = size - want
                    continue
            # Slow path: gather the size field and head across chunk boundaries.
            if not self._partial:
                self._start = self.pos + i
                self._size = -1
            if self._size < 0:
                step = min(4 - len(self._partial), n - i)
                self._partial += view[i:i + step]
                i += step
                if len(self._partial) < 4:
                    break
                self._size = int.from_bytes(self._partial[:4], "big", signed=True)
                self._check(self._size)
            want = min(self._size, peek)
            step = min(want - (len(self._partial) - 4), n - i)
            self._partial += view[i:i + step]
            i += step
            if len(self._partial) - 4 == want:
                frames.append(Frame(self._start, 4 + self._size, bytes(self._partial[4:])))
                self._skip = self._size - want
                self._partial = bytearray()
                self._size = -1
        self.pos += n
        return frames

    @staticmethod
    def _check(size: int) -> None:
        if size < 0 or size > MAX_FRAME:
            raise FramingError(f"frame size {size} is not a Kafka frame")


@dataclass(frozen=True)
class RequestHeader:
    """What the proxy reads of a request: enough to route faults, nothing more.

    ``acks`` is set for Produce requests only (0, 1 or -1), and None when it could not
    be read (the header did not fit the peek): a Produce with ``acks=0`` gets no
    response, so a lost-ack fault must never wait for one.
    """

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None = None
    acks: int | None = None

    @property
    def api(self) -> str:
        return api_name(self.api_key)

    @property
    def expects_response(self) -> bool:
        return not (self.api_key == PRODUCE and self.acks == 0)


def _uvarint(buf: bytes, i: int) -> tuple[int, int]:
    """Decode an unsigned varint at ``buf[i]``; returns (value, next index)."""
    value = shift = 0
    while True:
        if i >= len(buf):
            raise IndexError("varint runs past the peeked bytes")
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, i
        shift += 7
        if shift > 35:
            raise FramingError("varint too long")


def parse_request_header(body: bytes) -> RequestHeader:
    """Parse the start of a request body (the bytes after the 4-byte size).

    Request header v1 is ``api_key int16, api_version int16, correlation_id int32,
    client_id nullable string (int16 length)``; v2 (flexible versions) adds tagged
    fields after the client id. For Produce, the body then starts with the
    transactional id (v3+; compact from v9) and ``acks int16``.
    """
    if len(body) < 8:
        raise FramingError(f"request header needs 8 bytes, got {len(body)}")
    key, version, cid = struct.unpack_from(">hhi", body, 0)
    client_id = None
    acks = None
    try:
        i = 8
        (length,) = struct.unpack_from(">h", body, i)
        i += 2
        if length >= 0:
            if i + length > len(body):
                raise IndexError
            client_id = body[i:i + length].decode("utf-8", "replace")
            i += length
        if key == PRODUCE:
            flexible = version >= PRODUCE_FLEXIBLE_SINCE
            if flexible:  # header tagged fields
                count, i = _uvarint(body, i)
                for _ in range(count):
                    _tag, i = _uvarint(body, i)
                    size, i = _uvarint(body, i)
                    i += size
            if version >= 3:  # transactional_id
                if flexible:
                    n, i = _uvarint(body, i)
                    i += max(0, n - 1)
                else:
                    (n,) = struct.unpack_from(">h", body, i)
                    i += 2 + max(0, n)
            (acks,) = struct.unpack_from(">h", body, i)
    except (IndexError, struct.error):
        pass  # the header did not fit the peek: fields stay unknown
    return RequestHeader(key, version, cid, client_id, acks)


def parse_response_correlation(body: bytes) -> int:
    """The correlation id of a response: the first field of every response header."""
    if len(body) < 4:
        raise FramingError(f"response header needs 4 bytes, got {len(body)}")
    return struct.unpack_from(">i", body, 0)[0]


def error_name_of(code: int | None) -> str:
    """A broker error code as Kafka names it (``48`` -> ``INVALID_TXN_STATE``)."""
    if code is None:
        return "unknown"
    return ERROR_CODES.get(code, f"error-{code}")


def parse_response_error(key: int, version: int, body: bytes) -> int | None:
    """The error code of a response body (the bytes after the 4-byte size).

    Read for the apis a held request can be (None for others, or when the peeked bytes
    end first): Produce (the first partition's error), and InitProducerId, AddOffsetsToTxn
    and EndTxn, whose body starts ``throttle_time_ms int32, error_code int16``. Flexible
    versions put a tagged-field count after the correlation id and use compact arrays
    and strings (unsigned varint length + 1).
    """
    if key not in FLEXIBLE_SINCE:
        return None
    flexible = version >= FLEXIBLE_SINCE[key]
    try:
        i = 4  # correlation id
        if flexible:
            count, i = _uvarint(body, i)
            for _ in range(count):
                _tag, i = _uvarint(body, i)
                size, i = _uvarint(body, i)
                i += size
        if key != PRODUCE:
            i += 4  # throttle_time_ms
            return struct.unpack_from(">h", body, i)[0]
        if flexible:
            _topics, i = _uvarint(body, i)
            n, i = _uvarint(body, i)
            i += max(0, n - 1)
            _parts, i = _uvarint(body, i)
        else:
            i += 4
            (n,) = struct.unpack_from(">h", body, i)
            i += 2 + max(0, n) + 4
        i += 4  # partition index
        return struct.unpack_from(">h", body, i)[0]
    except (IndexError, struct.error):
        return None
