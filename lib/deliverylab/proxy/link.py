"""One proxied connection, inside the proxy's own process: the client's socket, its twin
socket to the broker, and the bytes between them.

Why its own module: this is the byte pump, the part that must be fast. It runs in the
proxy process (:mod:`.engine`), never in the notebook's, so forwarding does not
wait for the notebook's GIL. It looks at frame boundaries and the first bytes of each
header only (see :mod:`.framing`); everything else is forwarded as it arrives.
"""

from __future__ import annotations

import asyncio
import socket
import struct
from collections import OrderedDict, deque
from typing import Any, Protocol

from .framing import (
    ERROR_PEEK,
    REQUEST_PEEK,
    Frame,
    FrameScanner,
    FramingError,
    RequestHeader,
    error_name_of,
    parse_request_header,
    parse_response_correlation,
    parse_response_error,
)

# What a link needs of the engine that made it (``engine.Engine`` and its budgets),
# named here: the engine imports the links, and a link reads the engine's fault state
# and reports counts back, so these shapes are the whole of that back-and-forth.

class Loss(Protocol):
    """An ``AckLoss`` budget (``engine.Loss``): a chosen response is dropped."""

    def _unchoose(self) -> None: ...
    def _fired(self, proxy: str, cid: int) -> None: ...


class Held(Protocol):
    """A request a hold kept (``engine.Held``)."""

    head: RequestHeader

    def mark(self, how: str) -> None: ...


class HoldState(Protocol):
    """A ``Hold`` budget (``engine.HoldState``): keeps the chosen request."""

    def _unchoose(self) -> None: ...
    def _keep(self, proxy: Any, link: _Link, head: RequestHeader, frame: bytes) -> None: ...


class Engine(Protocol):
    """One proxy inside the proxy process (``engine.Engine``): its loop, its faults,
    its counters."""

    name: str
    target_host: str
    target_port: int
    _loop: asyncio.AbstractEventLoop
    _links: set[_Link]
    _holds: list[Any]
    _delays: dict[str, float]
    _blackholed: bool
    _acks_dropped: int

    def _choose(self, head: RequestHeader) -> Loss | None: ...
    def _choose_hold(self, head: RequestHeader) -> HoldState | None: ...
    async def _send_alone(self, held: Any) -> None: ...
    def _count_request(self, key: int, size: int) -> None: ...
    def _count_response(self, key: int, size: int) -> None: ...


class _Side(asyncio.Protocol):
    """One socket of a link (the client's or the broker's); hands bytes to the link."""

    def __init__(self, link: _Link, role: str) -> None:
        self.link = link
        self.role = role
        self.transport: asyncio.Transport | None = None
        self.paused: set[str] = set()  # why reading is paused; read again when empty

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.link.side_up(self)
        self._apply()  # reasons to pause may predate the socket (a blackhole)

    def data_received(self, data: bytes) -> None:
        if self.role == "client":
            self.link.from_client(data)
        else:
            self.link.from_broker(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self.link.close()

    # Backpressure: when this socket's send buffer is full, stop reading the other side.
    def pause_writing(self) -> None:
        self.link.other(self).pause("backpressure")

    def resume_writing(self) -> None:
        self.link.other(self).unpause("backpressure")

    def pause(self, reason: str) -> None:
        self.paused.add(reason)
        self._apply()

    def unpause(self, reason: str) -> None:
        self.paused.discard(reason)
        self._apply()

    def _apply(self) -> None:
        """Read if and only if nothing asks for a pause."""
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        if self.paused and transport.is_reading():
            transport.pause_reading()
        elif not self.paused and not transport.is_reading():
            transport.resume_reading()


class _Outbox:
    """Writes one direction of a link, optionally late (``delay``), always in order."""

    def __init__(self, link: _Link, side: _Side, direction: str) -> None:
        self.link = link
        self.side = side
        self.direction = direction
        self.queue: deque[tuple[float, bytes | None]] = deque()  # None: close the link
        self.timer: asyncio.TimerHandle | None = None
        self.early: list[bytes] = []  # bytes that came before the socket was connected

    def send(self, data: bytes | None) -> None:
        proxy = self.link.proxy
        delay = proxy._delays[self.direction]
        if not self.queue and delay <= 0 and not proxy._blackholed:
            self._write(data)
            return
        due = proxy._loop.time() + delay
        if self.queue:
            due = max(due, self.queue[-1][0])  # never overtake bytes already waiting
        self.queue.append((due, data))
        self.arm()

    def arm(self) -> None:
        if self.timer is None and self.queue and not self.link.proxy._blackholed:
            loop = self.link.proxy._loop
            self.timer = loop.call_at(self.queue[0][0], self.flush)

    def flush(self, now: bool = False) -> None:
        """Write what is due (everything with ``now``), then wait for the next item."""
        if self.timer is not None:
            self.timer.cancel()  # a no-op when this *is* the timer's call
            self.timer = None
        proxy = self.link.proxy
        if proxy._blackholed:
            return
        t = proxy._loop.time()
        while self.queue and (now or self.queue[0][0] <= t):
            _, data = self.queue.popleft()
            self._write(data)
            if self.link.closed:
                self.queue.clear()
                return
        self.arm()

    def _write(self, data: bytes | None) -> None:
        if data is None:
            self.link.close()
            return
        transport = self.side.transport
        if transport is None:
            self.early.append(data)
        elif not transport.is_closing():
            transport.write(data)

    def cancel(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.queue.clear()


class _Link:
    """One client connection and its twin connection to the broker.

    Request side: every frame header is parsed (api, correlation id, acks) and recorded
    in ``inflight`` by correlation id. Response side: each response's correlation id
    finds its request; a response chosen by a lost-ack fault is swallowed and the link
    closed, which the client sees as a broken connection with a request in flight, so
    it retries on a new connection.
    """

    def __init__(self, proxy: Engine) -> None:
        self.proxy = proxy
        self.client = _Side(self, "client")
        self.broker = _Side(self, "broker")
        self.to_broker = _Outbox(self, self.broker, "to_broker")
        self.to_client = _Outbox(self, self.client, "to_client")
        self.requests = FrameScanner(REQUEST_PEEK)
        self.responses = FrameScanner(ERROR_PEEK)
        self.inflight: OrderedDict[int, tuple[int, Loss | None]] = OrderedDict()
        # A Hold's request: held from its first byte until released; ``holding`` is the
        # hold and the request (None once its whole frame was kept); ``watch`` maps the
        # correlation id of a released request to what waits for its error code.
        self.holding: tuple[HoldState, RequestHeader, int] | None = None
        self.watch: dict[int, Held] = {}
        # A lost-ack target: forward requests up to the end of the target request, hold
        # the rest, so that no later request reaches the broker only to have its ack
        # lost too when the link closes. Only the target's ack is lost.
        self.hold_at: int | None = None
        self.held: list[bytes] = []
        self.target: tuple[int, Loss] | None = None
        self.closed = False
        self.reset = False

    def other(self, side: _Side) -> _Side:
        return self.broker if side is self.client else self.client

    def side_up(self, side: _Side) -> None:
        if self.closed:
            side.transport.abort()  # the link died while this side was connecting
            return
        if self.proxy._blackholed:
            side.pause("blackhole")
        if side is self.client:
            side.pause("connecting")  # read nothing until the broker side is up
            self.proxy._loop.create_task(self._connect_broker())
        else:
            early, self.to_broker.early = self.to_broker.early, []
            for data in early:
                side.transport.write(data)
            self.client.unpause("connecting")

    async def _connect_broker(self) -> None:
        proxy = self.proxy
        try:
            await proxy._loop.create_connection(lambda: self.broker, proxy.target_host,
                                                proxy.target_port)
        except OSError:
            self.close()  # the broker is down: the client sees its connection closed

    def _frames(self, scanner: FrameScanner, data: bytes) -> tuple[int, list[Frame]] | None:
        """The stream offset of ``data`` and the frames whose head it completes; None
        (and the link closed) when the bytes are not Kafka framing."""
        base = scanner.pos
        try:
            return base, scanner.feed(data)
        except FramingError:
            self.close()
            return None

    # -- client -> broker
    def from_client(self, data: bytes) -> None:
        proxy = self.proxy
        scanned = self._frames(self.requests, data)
        if scanned is None:
            return
        base, frames = scanned
        for frame in frames:
            try:
                head = parse_request_header(frame.head)
            except FramingError:
                self.close()
                return
            beyond_hold = self.hold_at is not None and frame.start >= self.hold_at
            if not beyond_hold:
                proxy._count_request(head.api_key, frame.length)
            if not head.expects_response:
                continue
            loss = None
            if not beyond_hold and self.target is None and proxy._holds:
                hold = proxy._choose_hold(head)
                if hold is not None:
                    self.holding = (hold, head, frame.length)
                    self.hold_at = frame.start
                    beyond_hold = True
            if not beyond_hold and self.target is None:
                loss = proxy._choose(head)
                if loss is not None:
                    self.target = (head.correlation_id, loss)
                    self.hold_at = frame.end
            self.inflight[head.correlation_id] = (head.api_key, loss)
        if self.hold_at is None or base + len(data) <= self.hold_at:
            self.to_broker.send(data)
            return
        cut = max(0, self.hold_at - base)
        if cut:
            self.to_broker.send(data[:cut])
        self.held.append(data[cut:])
        if self.holding is not None:
            hold, head, length = self.holding
            kept = b"".join(self.held)
            if len(kept) < length:
                return  # keep reading until the held request's frame is whole
            self.held = [kept]
            self.holding = None
            hold._keep(proxy, self, head, kept[:length])
        self.client.pause("hold")

    def release_held(self, held: Held) -> None:
        """Send a held request on this connection, or inject it if the client left."""
        if self.closed:
            held.mark("injected")  # before the task runs: its answer is now awaited
            self.proxy._loop.create_task(self.proxy._send_alone(held))
            return
        held.mark("released")
        self.watch[held.head.correlation_id] = held
        # Read nothing from the client until the answer came: a client that gave up
        # would be seen closing, and the link with it, before the broker answered.
        self.release_hold(keep_paused=True)

    def release_hold(self, keep_paused: bool = False) -> None:
        """``heal`` before the target's response came: let everything through again."""
        if self.target is not None:
            self.target[1]._unchoose()
            cid = self.target[0]
            if cid in self.inflight:
                self.inflight[cid] = (self.inflight[cid][0], None)
        self.target = None
        self.hold_at = None
        if self.holding is not None:
            self.holding[0]._unchoose()
            self.holding = None
        held, self.held = self.held, []
        for data in held:
            self.to_broker.send(data)
        if not keep_paused:
            self.client.unpause("hold")

    # -- broker -> client
    def from_broker(self, data: bytes) -> None:
        proxy = self.proxy
        scanned = self._frames(self.responses, data)
        if scanned is None:
            return
        base, frames = scanned
        for frame in frames:
            cid = parse_response_correlation(frame.head)
            key, loss = self._pop_request(cid)
            watched = self.watch.pop(cid, None)
            if watched is not None:
                code = parse_response_error(key, watched.head.api_version, frame.head)
                watched.answer(error_name_of(code))
                if not self.watch:
                    self.client.unpause("hold")
            if loss is None:
                proxy._count_response(key, frame.length)
                continue
            # The chosen ack: forward what precedes it, swallow it, close the link.
            cut = max(0, frame.start - base)
            if cut:
                self.to_client.send(data[:cut])
            self.target = None
            proxy._acks_dropped += 1
            loss._fired(proxy.name, cid)
            self.to_client.send(None)
            return
        self.to_client.send(data)

    def _pop_request(self, cid: int) -> tuple[int, Loss | None]:
        if cid not in self.inflight:
            return -1, None
        # Responses come in request order; anything older got none (cannot happen for
        # requests that expect one, but never let the table grow).
        while True:
            old, entry = self.inflight.popitem(last=False)
            if old == cid:
                return entry

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.to_broker.cancel()
        self.to_client.cancel()
        if self.target is not None:  # the chosen ack never came back: choose again
            self.target[1]._unchoose()
            self.target = None
        if self.holding is not None:  # the held frame never came whole: choose again
            self.holding[0]._unchoose()
            self.holding = None
        for side in (self.client, self.broker):
            transport = side.transport
            if transport is None:
                continue
            if self.reset and side is self.client:
                sock = transport.get_extra_info("socket")
                if sock is not None:
                    try:  # linger 0: the client gets a RST, "connection reset by peer"
                        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                        struct.pack("ii", 1, 0))
                    except OSError:
                        pass
            transport.abort()
        self.proxy._links.discard(self)
