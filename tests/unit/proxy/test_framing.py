"""The fault proxy without Kafka: framing on hand-made bytes, faults on a fake broker.

The fake broker (``broker``, and ``proxy`` in front of it: tests/unit/conftest.py)
speaks just enough Kafka framing to answer each request with a response carrying its
correlation id, and records what reached it, so every fault can be checked byte for
byte in milliseconds.
"""

from __future__ import annotations

import random
import socket
import struct
import time

import pytest

from deliverylab.cluster import free_ports
from deliverylab.errors import BadValue
from deliverylab.proxy.engine import HoldState, Loss
from deliverylab.proxy.framing import (
    API_KEYS,
    FrameScanner,
    FramingError,
    api_key,
    api_name,
    error_name_of,
    parse_request_header,
    parse_response_correlation,
    parse_response_error,
)
from deliverylab.proxy.proxy import AckLoss, Hold, Proxy
from deliverylab.waiting import wait_until

# --- building frames by hand ---------------------------------------------------------


def frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


def uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def request(key: int, version: int, cid: int, client_id: str | None = "rdkafka",
            body: bytes = b"", tagged: bytes | None = None) -> bytes:
    """A request frame: header v1 (or v2 when ``tagged`` is given) then ``body``."""
    head = struct.pack(">hhi", key, version, cid)
    if client_id is None:
        head += struct.pack(">h", -1)
    else:
        raw = client_id.encode()
        head += struct.pack(">h", len(raw)) + raw
    if tagged is not None:
        head += tagged
    return frame(head + body)


def produce(cid: int, acks: int = -1, version: int = 7, txn: str | None = None,
            payload: bytes = b"records", client_id: str = "rdkafka") -> bytes:
    """A Produce request of ``version`` (flexible from v9) with ``acks``."""
    if version >= 9:
        txn_field = uvarint(0) if txn is None else uvarint(len(txn) + 1) + txn.encode()
        body = txn_field + struct.pack(">hi", acks, 30000) + payload
        # One header tagged field (tag 0, 3 bytes) to prove they are skipped.
        return request(0, version, cid, client_id, body=body,
                       tagged=uvarint(1) + uvarint(0) + uvarint(3) + b"abc")
    txn_field = struct.pack(">h", -1) if txn is None else struct.pack(">h", len(txn)) + txn.encode()
    return request(0, version, cid, client_id,
                   body=txn_field + struct.pack(">hi", acks, 30000) + payload)


def response(cid: int, payload: bytes = b"ok") -> bytes:
    return frame(struct.pack(">i", cid) + payload)


# --- FrameScanner --------------------------------------------------------------------


STREAM = (request(18, 3, 1, tagged=b"\x00") + request(3, 12, 2) + produce(3, payload=b"x" * 5000)
          + produce(4, acks=0) + request(1, 16, 5, client_id=None) + frame(b""))


def scan(chunks: list[bytes], peek: int = 64) -> list[tuple[int, int, bytes]]:
    scanner = FrameScanner(peek)
    out = []
    for chunk in chunks:
        out += [(f.start, f.length, f.head) for f in scanner.feed(chunk)]
    assert scanner.pos == sum(map(len, chunks))
    return out


def test_scanner_finds_every_frame_with_its_offsets():
    frames = scan([STREAM])
    assert len(frames) == 6
    starts = [s for s, _, _ in frames]
    lengths = [n for _, n, _ in frames]
    assert starts[0] == 0
    assert all(starts[i] + lengths[i] == starts[i + 1] for i in range(5))
    assert starts[-1] + lengths[-1] == len(STREAM)
    assert all(len(h) == min(64, n - 4) for _, n, h in frames)
    assert frames[-1][1:] == (4, b"")


@pytest.mark.parametrize("how", ["bytewise", "random", "split-size-field"])
def test_scanner_is_independent_of_chunking(how: str):
    if how == "bytewise":
        chunks = [STREAM[i:i + 1] for i in range(len(STREAM))]
    elif how == "random":
        rng = random.Random(7)
        chunks, i = [], 0
        while i < len(STREAM):
            n = rng.randint(1, 700)
            chunks.append(STREAM[i:i + n])
            i += n
    else:  # every cut inside a size field or a header
        cuts = sorted({2, 5, 11, 40, 41, 42, 43, 44, 90})
        chunks = [STREAM[a:b] for a, b in zip([0, *cuts], [*cuts, len(STREAM)], strict=True)]
    assert scan(chunks) == scan([STREAM])


def test_scanner_accepts_memoryview_and_bytearray():
    assert scan([bytearray(STREAM)]) == scan([STREAM])
    scanner = FrameScanner(8)
    assert len(scanner.feed(memoryview(STREAM))) == 6


def test_scanner_rejects_what_is_not_kafka():
    with pytest.raises(FramingError):
        FrameScanner(8).feed(struct.pack(">i", -5) + b"xxxx")
    with pytest.raises(FramingError):
        FrameScanner(8).feed(b"GET / HTTP/1.1\r\n")  # 0x47455420: > 512 MB


def test_scanner_emits_frame_once_head_is_complete():
    scanner = FrameScanner(16)
    data = request(3, 12, 99)
    assert scanner.feed(data[:6]) == []
    (f,) = scanner.feed(data[6:])
    assert (f.start, f.length, f.end) == (0, len(data), len(data))
    assert parse_request_header(f.head).correlation_id == 99


# --- headers ---------------------------------------------------------------------------


def test_parse_request_header_v1():
    head = parse_request_header(request(3, 12, 42, client_id="my-app")[4:])
    assert (head.api_key, head.api_version, head.correlation_id) == (3, 12, 42)
    assert head.client_id == "my-app"
    assert head.api == "Metadata"
    assert head.acks is None and head.expects_response


def test_parse_request_header_null_client_id():
    head = parse_request_header(request(1, 16, 7, client_id=None)[4:])
    assert head.client_id is None and head.correlation_id == 7


@pytest.mark.parametrize("version", [3, 7, 8])
@pytest.mark.parametrize("acks", [-1, 0, 1])
@pytest.mark.parametrize("txn", [None, "my-transactional-id"])
def test_parse_produce_acks_classic(version: int, acks: int, txn: str | None):
    head = parse_request_header(produce(5, acks=acks, version=version, txn=txn)[4:])
    assert head.api == "Produce" and head.acks == acks
    assert head.expects_response == (acks != 0)


@pytest.mark.parametrize("version", [9, 11, 13])
@pytest.mark.parametrize("acks", [-1, 0, 1])
@pytest.mark.parametrize("txn", [None, "tx-1"])
def test_parse_produce_acks_flexible(version: int, acks: int, txn: str | None):
    head = parse_request_header(produce(5, acks=acks, version=version, txn=txn)[4:])
    assert head.api_version == version and head.acks == acks
    assert head.client_id == "rdkafka"


def test_truncated_head_leaves_acks_unknown():
    body = produce(5, acks=0, txn="t" * 200)[4:]
    head = parse_request_header(body[:60])
    assert head.correlation_id == 5 and head.acks is None
    assert head.expects_response  # unknown: assume a response may come
    with pytest.raises(FramingError):
        parse_request_header(body[:7])


def test_parse_response_correlation():
    assert parse_response_correlation(response(123456)[4:]) == 123456
    assert parse_response_correlation(struct.pack(">i", -2)) == -2
    with pytest.raises(FramingError):
        parse_response_correlation(b"\x00\x01")


def test_api_names_and_keys():
    expected = {"Produce": 0, "Fetch": 1, "ListOffsets": 2, "Metadata": 3, "OffsetCommit": 8,
                "OffsetFetch": 9, "FindCoordinator": 10, "JoinGroup": 11, "Heartbeat": 12,
                "SyncGroup": 14, "ApiVersions": 18, "InitProducerId": 22,
                "AddPartitionsToTxn": 24, "AddOffsetsToTxn": 25, "EndTxn": 26,
                "TxnOffsetCommit": 28}
    for name, key in expected.items():
        assert API_KEYS[name] == key and api_key(name) == key and api_name(key) == name
    assert api_key(0) == 0
    assert api_name(999) == "api-999"
    with pytest.raises(BadValue, match="Produce"):
        api_key("Produse")
    with pytest.raises(BadValue):
        AckLoss(0)


class Events:
    """Stands in for the proxy process's pipe: keeps what the budgets report."""

    def __init__(self) -> None:
        self.sent: list[tuple] = []

    def send(self, message: tuple) -> None:
        self.sent.append(message)


def test_ack_loss_budget_is_shared_and_rearmed():
    events = Events()
    loss = Loss(events, 7, 2, 0, None, False)  # type: ignore[arg-type]
    write = parse_request_header(produce(1)[4:])
    assert loss._take(write) and loss._take(write) and not loss._take(write)
    assert not loss._take(parse_request_header(request(3, 12, 2)[4:]))  # another api
    loss._unchoose()  # a chosen request's connection died before its response
    assert loss._take(write)
    loss._fired("p", 1)
    assert not loss.finished and loss.dropped == 1
    loss._fired("p", 2)
    assert loss.finished
    # The owner's handle mirrors it from the events, in order.
    handle = AckLoss(2, "Produce")
    for _, _, armed, dropped, cancelled, fired in events.sent:
        handle._update(armed, dropped, cancelled, fired)
    assert handle.wait(0.01) and handle.done and handle.finished
    assert handle.dropped_ids == [("p", 1), ("p", 2)]


# --- faults on a fake broker -----------------------------------------------------------


def closed_by_peer(conn: socket.socket, timeout: float = 2.0) -> bool:
    conn.settimeout(timeout)
    try:
        return conn.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def silent(conn: socket.socket, wait: float = 0.3) -> bool:
    conn.settimeout(wait)
    try:
        conn.recv(1)
        return False
    except TimeoutError:
        return True


def connect(proxy: Proxy) -> socket.socket:
    return socket.create_connection(("127.0.0.1", proxy.listen_port), timeout=2)


def test_ordinary_traffic_passes_unchanged(proxy, broker):
    big = produce(2, payload=bytes(range(256)) * 4096)  # 1 MB, arrives in many chunks
    with connect(proxy) as c:
        c.sendall(request(18, 3, 1) + big + request(3, 12, 3))
        assert broker.responses(c, 3) == [1, 2, 3]
    assert broker.payload_bytes == len(request(18, 3, 1)) + len(big) + len(request(3, 12, 3)) - 12
    stats = proxy.stats()
    assert stats["requests"] == {"Produce": 1, "Metadata": 1, "ApiVersions": 1}
    assert stats["responses"] == stats["requests"]
    assert stats["acks_dropped"] == 0 and stats["faults"] == []


def test_healthy_traffic_is_counted_and_matched(proxy, broker):
    # No fault armed: an acks=0 Produce is counted as a request and expects no response;
    # the rest are answered in order and counted per api.
    with connect(proxy) as c:
        c.sendall(produce(1, acks=0) + request(3, 12, 2) + produce(3, version=9)
                  + produce(4, acks=0, version=9) + request(3, 12, 5))
        assert broker.responses(c, 3) == [2, 3, 5]
    stats = proxy.stats()
    assert stats["requests"] == {"Produce": 3, "Metadata": 2}
    assert stats["responses"] == {"Produce": 1, "Metadata": 2}
    assert stats["bytes_to_broker"] == sum(map(len, [
        produce(1, acks=0), request(3, 12, 2), produce(3, version=9),
        produce(4, acks=0, version=9), request(3, 12, 5)]))


def test_a_fault_armed_mid_stream_acts_on_the_next_request(proxy, broker):
    with connect(proxy) as c:
        c.sendall(produce(1) + produce(2, acks=0))
        assert broker.responses(c, 1) == [1]  # healthy: passed through
        big = produce(3, payload=b"x" * 200_000)
        c.sendall(big[:5000])  # its head passed before the fault: it is not chosen
        assert proxy.wait_requests("Produce", 3, timeout=2)
        loss = proxy.lose_acks(1)
        c.sendall(big[5000:] + request(3, 12, 4) + produce(5) + produce(6))
        assert broker.responses(c, 2) == [3, 4]
        assert closed_by_peer(c)  # the next Produce after arming lost its ack
    assert loss.wait(2) and loss.dropped_ids == [("proxy-test", 5)]
    assert broker.cids() == [1, 2, 3, 4, 5]  # 6 was held back, never forwarded
    hold = proxy.hold("Metadata")
    with connect(proxy) as c:  # and a hold armed later keeps the next Metadata
        c.sendall(produce(7) + request(3, 12, 8))
        assert broker.responses(c, 1) == [7]
        assert silent(c) and hold.wait(2)
        assert hold.held[0].head.correlation_id == 8
    hold.cancel()


def test_lose_acks_drops_exactly_the_chosen_response(proxy, broker):
    loss = proxy.lose_acks(1, "Produce")
    with connect(proxy) as c:
        # Pipelined: a Metadata, the target Produce, and two more Produce behind it.
        c.sendall(request(3, 12, 1) + produce(2) + produce(3) + produce(4))
        assert broker.responses(c, 1) == [1]  # the response before the target passes
        assert closed_by_peer(c)  # then the link closes: no ack for cid 2
    assert loss.wait(2) and loss.dropped == 1 and loss.dropped_ids == [("proxy-test", 2)]
    # Requests pipelined after the target never reached the broker: a retry of them
    # cannot duplicate anything.
    assert broker.cids() == [1, 2]
    with connect(proxy) as c:  # the fault is spent: the client's retries pass
        c.sendall(produce(2) + produce(3) + produce(4))
        assert broker.responses(c, 3) == [2, 3, 4]
    assert broker.cids() == [1, 2, 2, 3, 4]
    assert proxy.stats()["acks_dropped"] == 1


def test_lose_acks_skips_acks0_and_other_apis(proxy, broker):
    loss = proxy.lose_acks(2, "Produce")
    with connect(proxy) as c:
        c.sendall(produce(1, acks=0) + request(3, 12, 2) + produce(3, acks=1, version=9))
        assert broker.responses(c, 1) == [2]
        assert closed_by_peer(c)
    assert broker.cids() == [1, 2, 3]
    # The event that counts the drop was sent before the link closed, so it comes before
    # the reply of any later request: ask one, then read the handle.
    assert proxy.faults() == ["lose_acks"]
    assert loss.dropped == 1 and not loss.done
    with connect(proxy) as c:  # a second connection spends the rest of the budget
        c.sendall(produce(4))
        assert closed_by_peer(c)
    assert loss.wait(1) and "lose_acks" not in proxy.faults()


def test_lose_acks_for_one_client_only(proxy, broker):
    loss = proxy.lose_acks(1, client_id="victim")
    with connect(proxy) as other, connect(proxy) as victim:
        other.sendall(produce(1, client_id="workload", version=9))
        assert broker.responses(other, 1) == [1]
        victim.sendall(produce(2, client_id="victim", version=9))
        assert closed_by_peer(victim)
        other.sendall(produce(3, client_id="workload"))
        assert broker.responses(other, 1) == [3]
    # The handle hears of the drop from the proxy process's event pipe: wait for it.
    assert loss.wait(2) and loss.dropped_ids == [("proxy-test", 2)]


def test_ack_loss_shared_by_two_proxies(proxy, broker):
    with Proxy(free_ports(1)[0], broker.port, name="other") as other:
        loss = AckLoss(1)
        for p in (proxy, other):
            p.arm(loss)
        with connect(other) as c:
            c.sendall(produce(1))
            assert closed_by_peer(c)
        with connect(proxy) as c:  # the budget is spent everywhere
            c.sendall(produce(1))
            assert broker.responses(c, 1) == [1]
        assert loss.wait(2) and loss.dropped_ids == [("other", 1)]


def test_heal_cancels_pending_lost_acks(proxy, broker):
    loss = proxy.lose_acks(1)
    proxy.heal()
    with connect(proxy) as c:
        c.sendall(produce(1))
        assert broker.responses(c, 1) == [1]
    assert loss.dropped == 0 and proxy.faults() == []


def test_blackhole_stalls_then_heal_delivers(proxy, broker):
    with connect(proxy) as c:
        c.sendall(request(18, 3, 1))
        assert broker.responses(c, 1) == [1]
        proxy.blackhole()
        assert proxy.faults() == ["blackhole"]
        c.sendall(request(3, 12, 2))
        with connect(proxy) as late:  # accepted, but goes nowhere
            late.sendall(request(18, 3, 7))
            assert silent(c) and silent(late)
            assert broker.cids() == [1]
            proxy.heal()
            assert broker.responses(c, 1) == [2]
            assert broker.responses(late, 1) == [7]


def test_delay_holds_bytes_in_order(proxy, broker):
    with connect(proxy) as c:
        c.sendall(request(18, 3, 1))
        assert broker.responses(c, 1) == [1]
        proxy.delay(250, "to_client")
        t0 = time.monotonic()
        c.sendall(request(3, 12, 2) + request(3, 12, 3))
        assert broker.responses(c, 2) == [2, 3]
        assert time.monotonic() - t0 >= 0.24
        proxy.heal()
        t0 = time.monotonic()
        c.sendall(request(3, 12, 4))
        assert broker.responses(c, 1) == [4]
        assert time.monotonic() - t0 < 0.2
    with pytest.raises(BadValue, match="to_broker"):
        proxy.delay(10, "sideways")
    with pytest.raises(BadValue):
        proxy.delay(-1)


def test_reset_drops_live_connections(proxy, broker):
    with connect(proxy) as c:
        c.sendall(request(18, 3, 1))
        assert broker.responses(c, 1) == [1]
        assert proxy.reset() == 1
        assert closed_by_peer(c)
    wait_until("the proxy to count no open connection",
               lambda: proxy.stats()["connections_open"] == 0, 2.0, interval=0.01)
    with connect(proxy) as c:  # new connections work as before
        c.sendall(request(18, 3, 2))
        assert broker.responses(c, 1) == [2]


def test_dead_broker_closes_client_connections():
    port, dead_port = free_ports(2)  # nothing listens on dead_port
    with Proxy(port, dead_port) as proxy, connect(proxy) as c:
        assert closed_by_peer(c)


def test_start_on_a_taken_port_says_so():
    from deliverylab.errors import PortTaken

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        with pytest.raises(PortTaken, match="could not listen"):
            Proxy(s.getsockname()[1], 1).start()


# --- response error codes and the hold fault ------------------------------------------


def produce_answer(error: int, version: int = 7, topic: str = "orders") -> bytes:
    """A Produce response body after the correlation id: one topic, one partition."""
    if version >= 9:
        return (uvarint(0) + uvarint(2) + uvarint(len(topic) + 1) + topic.encode()
                + uvarint(2) + struct.pack(">ihq", 0, error, 42) + b"rest")
    return (struct.pack(">ih", 1, len(topic)) + topic.encode() + struct.pack(">i", 1)
            + struct.pack(">ihq", 0, error, 42))


def throttle_error(error: int, flexible: bool = False) -> bytes:
    return (uvarint(0) if flexible else b"") + struct.pack(">ih", 0, error)


@pytest.mark.parametrize("version", [3, 7, 8, 9, 10])
def test_produce_response_error_code(version: int):
    body = struct.pack(">i", 5) + produce_answer(45, version)
    assert parse_response_error(0, version, body) == 45
    assert error_name_of(45) == "OUT_OF_ORDER_SEQUENCE_NUMBER"


@pytest.mark.parametrize(("key", "version", "flexible"),
                         [(26, 0, False), (26, 1, False), (26, 3, True), (26, 5, True),
                          (22, 1, False), (22, 4, True), (25, 2, False)])
def test_throttle_then_error_responses(key: int, version: int, flexible: bool):
    body = struct.pack(">i", 9) + throttle_error(48, flexible)
    assert parse_response_error(key, version, body) == 48
    assert error_name_of(48) == "INVALID_TXN_STATE" and error_name_of(0) == "NONE"


def test_unreadable_error_codes_are_none_not_guesses():
    assert parse_response_error(3, 12, struct.pack(">i", 1) + b"\0" * 20) is None  # Metadata
    assert parse_response_error(26, 1, struct.pack(">i", 1) + b"\0\0") is None  # cut short
    assert error_name_of(None) == "unknown" and error_name_of(1234) == "error-1234"


def test_hold_budget_skip_and_client_filter():
    events = Events()
    hold = HoldState(events, 9, 26, 1, 1, "app", False)  # type: ignore[arg-type]
    end = parse_request_header(request(26, 1, 1, "app")[4:])
    other = parse_request_header(request(26, 1, 2, "else")[4:])
    assert not hold._take(other)  # another client
    assert not hold._take(end)  # skipped: the first one passes
    assert hold._take(end) and not hold._take(end)  # budget spent
    hold._unchoose()  # its connection died before the frame was whole
    assert hold._take(end) and hold.finished
    assert events.sent[-1] == ("hold", 9, 1, False)
    handle = Hold("EndTxn")
    handle._update(1, False)
    assert handle.finished
    with pytest.raises(BadValue, match="count"):
        Hold(count=0)
    with pytest.raises(BadValue, match="skip"):
        Hold(skip=-1)


def test_hold_keeps_a_request_from_the_broker_and_injects_it_later(proxy, broker):
    broker.answers[26] = throttle_error(48)  # the broker refuses the late EndTxn
    hold = proxy.hold("EndTxn")
    end_txn = request(26, 1, 2, body=b"txn-id-and-more")
    with connect(proxy) as c:
        c.sendall(request(3, 12, 1) + end_txn + request(3, 12, 3))
        assert broker.responses(c, 1) == [1]  # what came before the held request passes
        assert silent(c)  # then nothing: the client waits, as for a lost packet
        assert hold.wait(2) and broker.cids() == [1]  # nothing behind it went on either
        assert hold.held[0].frame == end_txn and "hold" not in proxy.faults()
    assert hold.inject() == ["INVALID_TXN_STATE"]  # on a connection of its own
    wait_until("the injected EndTxn (cid 2) at the broker after cid 1",
               lambda: broker.cids() == [1, 2], 2.0, interval=0.01)
    assert hold.held[0].how == "injected"


def test_hold_release_sends_a_late_retry_on_the_clients_connection(proxy, broker):
    broker.answers[0] = produce_answer(0, version=9)
    hold = proxy.hold("Produce", skip=1, client_id="victim")
    big = produce(3, version=9, payload=b"x" * 300_000, client_id="victim")
    with connect(proxy) as c:
        c.sendall(produce(2, version=9, client_id="victim"))  # skipped: passes
        assert broker.responses(c, 1) == [2]
        c.sendall(big + request(3, 12, 4))  # held whole, across many chunks
        assert hold.wait(2) and silent(c) and broker.cids() == [2]
        assert hold.held[0].frame == big
        assert hold.release() == ["NONE"]  # the late request took effect
        assert broker.responses(c, 2) == [3, 4]  # the client hears back after all
    assert broker.cids() == [2, 3, 4]


def test_heal_lets_a_held_request_go_on(proxy, broker):
    hold = proxy.hold("Produce")
    with connect(proxy) as c:
        c.sendall(produce(1))
        assert hold.wait(2) and silent(c)
        proxy.heal()
        assert broker.responses(c, 1) == [1]
    assert broker.cids() == [1] and proxy.faults() == []


def test_nemesis_hold_and_inject_are_fault_ops(proxy, broker):
    from types import SimpleNamespace

    from deliverylab.history import History
    from deliverylab.nemesis import Nemesis, NemesisError

    broker.answers[26] = throttle_error(0)
    history = History()
    nemesis = Nemesis(SimpleNamespace(proxies={1: proxy}, nodes=[1]), history)
    with pytest.raises(NemesisError, match="no request is held"):
        nemesis.inject_held()
    record = nemesis.apply("hold_request", api="EndTxn", client_id="app")
    with connect(proxy) as c:
        c.sendall(request(26, 1, 7, "app"))
        assert record.handle.wait(2)
    done = nemesis.inject_held()
    assert "the broker answered NONE" in done.did
    assert [(op.fault, op.kind) for op in history.faults()] == [
        ("hold_request", "fault"), ("inject_held", "fault")]
    assert broker.cids() == [7]


def test_release_after_the_client_left_uses_the_kept_broker_connection(proxy, broker):
    broker.answers[26] = throttle_error(0)
    hold = proxy.hold("EndTxn")
    with connect(proxy) as c:
        c.sendall(request(26, 1, 5))
        assert hold.wait(2)
    # The client gave up and closed; the proxy reads nothing more from it, so the link
    # and its broker connection stay open for the late request.
    time.sleep(0.2)
    assert proxy.stats()["connections_open"] == 1
    assert hold.release() == ["NONE"] and hold.held[0].how == "released"
    assert broker.cids() == [5]
