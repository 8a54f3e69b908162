"""A Kafka-aware fault proxy: one per broker, between every client and its broker.

Brokers *advertise* the proxy's address on their client listener, so every byte a
producer, consumer or admin client exchanges with a broker passes through here, while
replication and the KRaft quorum use their own listeners and never do. That is what
lets the lab break the client's view of the cluster *only*: lose an acknowledgement the
broker really sent, slow a client down, cut it off.

Why Kafka-aware rather than a plain TCP proxy: a lost ack must be *one* ack. Kafka's
framing is simple (a 4-byte big-endian size, then a header whose first fields are the
api key, api version and correlation id; a response starts with the correlation id) and
a broker answers the requests of one connection in order, so the proxy can tell which
response answers which request without decoding anything else. Bytes are forwarded as
they arrive; only frame boundaries and the first bytes of each header are looked at.

Threading: all proxies share one asyncio loop in a daemon thread, so a proxy never
blocks a notebook cell and dies with the kernel. Every public method is thread-safe: it
runs its work on the loop thread and waits for it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import socket
import struct
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import Any, TypeVar

from .errors import LabError, PortTaken, bad_value
from .framing import (
    DIRECTIONS,
    ERROR_PEEK,
    REQUEST_PEEK,
    FrameScanner,
    FramingError,
    RequestHeader,
    api_key,
    api_name,
    error_name_of,
    parse_request_header,
    parse_response_correlation,
    parse_response_error,
)
from .proxyhold import HeldRequest, Hold

__all__ = ["AckLoss", "HeldRequest", "Hold", "Proxy"]

T = TypeVar("T")

# --- fault handles -------------------------------------------------------------------


class AckLoss:
    """Handle of one ``lose_acks`` fault: how many acks to lose, and how many were lost.

    One handle may be armed on several proxies at once (the Nemesis does that when it
    does not know which broker will receive the write); the budget is shared, so
    ``count=1`` loses exactly one ack wherever it happens. ``wait()`` blocks until the
    fault has really fired, so a recipe never races its own fault.
    """

    def __init__(self, count: int, api: str | int = "Produce",
                 client_id: str | None = None) -> None:
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise bad_value("count", count, "a whole number >= 1")
        self.count = count
        self.api_key = api_key(api)
        self.client_id = client_id
        self._cond = threading.Condition()
        self._armed = 0  # requests chosen (forwarded; their responses will be dropped)
        self._dropped = 0
        self._cancelled = False
        self.dropped_ids: list[tuple[str, int]] = []  # (proxy name, correlation id)

    @property
    def api(self) -> str:
        return api_name(self.api_key)

    @property
    def dropped(self) -> int:
        """Responses swallowed so far."""
        with self._cond:
            return self._dropped

    @property
    def done(self) -> bool:
        with self._cond:
            return self._dropped >= self.count

    @property
    def active(self) -> bool:
        """Still able to choose a request (not cancelled, budget left)."""
        with self._cond:
            return not self._cancelled and self._armed < self.count

    @property
    def finished(self) -> bool:
        """Cancelled, or every ack dropped: it will never choose a request again."""
        with self._cond:
            return self._cancelled or self._dropped >= self.count

    def wait(self, timeout: float | None = None) -> bool:
        """Block until ``count`` acks were dropped; False if the timeout came first."""
        with self._cond:
            return self._cond.wait_for(lambda: self._dropped >= self.count, timeout)

    def cancel(self) -> None:
        """Choose no further request (``heal`` calls it)."""
        with self._cond:
            self._cancelled = True
            self._cond.notify_all()

    # Called on the proxy loop thread.
    def _take(self, key: int, client_id: str | None = None) -> bool:
        if key != self.api_key or (self.client_id is not None and client_id != self.client_id):
            return False
        with self._cond:
            if self._cancelled or self._armed >= self.count:
                return False
            self._armed += 1
            return True

    def _unarm(self) -> None:
        """A chosen request's connection died before its response: choose another one."""
        with self._cond:
            self._armed -= 1

    def _fired(self, proxy: str, cid: int) -> None:
        with self._cond:
            self._dropped += 1
            self.dropped_ids.append((proxy, cid))
            self._cond.notify_all()

    def __repr__(self) -> str:
        return f"<AckLoss {self.api} dropped {self.dropped}/{self.count}>"


# --- the shared event loop -----------------------------------------------------------


class _Reactor:
    """One asyncio loop in one daemon thread, shared by every proxy of the process.

    One loop rather than one per proxy: fewer threads competing for the GIL with the
    student's own code, and one place to stop.
    """

    _lock = threading.Lock()
    _instance: _Reactor | None = None

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.users = 0
        self.thread = threading.Thread(target=self._run, name="deliverylab-proxy", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()
        self.loop.close()

    @classmethod
    def acquire(cls) -> _Reactor:
        with cls._lock:
            if cls._instance is None or not cls._instance.thread.is_alive():
                cls._instance = cls()
            cls._instance.users += 1
            return cls._instance

    def release(self) -> None:
        with self._lock:
            self.users -= 1
            if self.users > 0 or _Reactor._instance is not self:
                return
            _Reactor._instance = None
        self.loop.call_soon_threadsafe(self.loop.stop)
        if threading.current_thread() is not self.thread:
            self.thread.join(timeout=5)

    def call(self, fn: Callable[[], T], timeout: float = 10.0) -> T:
        """Run ``fn`` on the loop thread and return its result (directly if already there)."""
        if threading.current_thread() is self.thread:
            return fn()
        fut: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            try:
                fut.set_result(fn())
            except BaseException as exc:  # handed back to the caller
                fut.set_exception(exc)

        self.loop.call_soon_threadsafe(run)
        return fut.result(timeout)


# --- one proxied connection ----------------------------------------------------------


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

    def __init__(self, proxy: Proxy) -> None:
        self.proxy = proxy
        self.client = _Side(self, "client")
        self.broker = _Side(self, "broker")
        self.to_broker = _Outbox(self, self.broker, "to_broker")
        self.to_client = _Outbox(self, self.client, "to_client")
        self.requests = FrameScanner(REQUEST_PEEK)
        self.responses = FrameScanner(ERROR_PEEK)
        self.inflight: OrderedDict[int, tuple[int, AckLoss | None]] = OrderedDict()
        # A Hold's request: held from its first byte until released; ``holding`` is the
        # hold and the request (None once its whole frame was kept); ``watch`` maps the
        # correlation id of a released request to what waits for its error code.
        self.holding: tuple[Hold, RequestHeader, int] | None = None
        self.watch: dict[int, HeldRequest] = {}
        # A lost-ack target: forward requests up to the end of the target request, hold
        # the rest, so that no later request reaches the broker only to have its ack
        # lost too when the link closes. Only the target's ack is lost.
        self.hold_at: int | None = None
        self.held: list[bytes] = []
        self.target: tuple[int, AckLoss] | None = None
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

    # -- client -> broker
    def from_client(self, data: bytes) -> None:
        proxy = self.proxy
        base = self.requests.pos
        try:
            frames = self.requests.feed(data)
        except FramingError:
            self.close()
            return
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
            hold._keep(HeldRequest(proxy, self, head, kept[:length], hold))
        self.client.pause("hold")

    def release_held(self, held: HeldRequest) -> None:
        """Send a held request on this connection, or inject it if the client left."""
        if self.closed:
            held.how = "injected"  # before the task runs: its answer is now awaited
            self.proxy._loop.create_task(self.proxy._send_alone(held))
            return
        held.how = "released"
        self.watch[held.head.correlation_id] = held
        # Read nothing from the client until the answer came: a client that gave up
        # would be seen closing, and the link with it, before the broker answered.
        self.release_hold(keep_paused=True)

    def release_hold(self, keep_paused: bool = False) -> None:
        """``heal`` before the target's response came: let everything through again."""
        if self.target is not None:
            self.target[1]._unarm()
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
        base = self.responses.pos
        try:
            frames = self.responses.feed(data)
        except FramingError:
            self.close()
            return
        for frame in frames:
            cid = parse_response_correlation(frame.head)
            key, loss = self._pop_request(cid)
            watched = self.watch.pop(cid, None)
            if watched is not None:
                code = parse_response_error(key, watched.head.api_version, frame.head)
                watched.hold._answered(watched, error_name_of(code))
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

    def _pop_request(self, cid: int) -> tuple[int, AckLoss | None]:
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
            self.target[1]._unarm()
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


# --- the proxy -----------------------------------------------------------------------


class Proxy:
    """A fault-injecting TCP proxy in front of one broker's client listener.

    Args:
        listen_port: the port the broker advertises (clients connect here).
        target_port: the broker's real client listener.
        name: shown in stats and fault records (the Cluster uses ``proxy-<node>``).
        host: interface to listen on, and the broker's host.

    Faults (each thread-safe, each undone by :meth:`heal`): :meth:`lose_acks`,
    :meth:`hold`, :meth:`delay`, :meth:`blackhole`, :meth:`reset`.
    """

    def __init__(self, listen_port: int, target_port: int, name: str = "proxy",
                 host: str = "127.0.0.1") -> None:
        self.listen_port = listen_port
        self.target_port = target_port
        self.target_host = host
        self.name = name
        self.host = host
        self._reactor: _Reactor | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._links: set[_Link] = set()
        self._losses: list[AckLoss] = []
        self._holds: list[Hold] = []
        self._delays = {"to_broker": 0.0, "to_client": 0.0}
        self._blackholed = False
        self._reset_counters()

    def _reset_counters(self) -> None:
        self._requests: dict[int, int] = {}
        self._responses: dict[int, int] = {}
        self._bytes_to_broker = 0
        self._bytes_to_client = 0
        self._accepted = 0
        self._acks_dropped = 0

    # ---------------------------------------------------------------- lifecycle
    @property
    def running(self) -> bool:
        return self._server is not None

    def start(self) -> Proxy:
        """Listen on ``listen_port``; returns once the port accepts connections."""
        if self._server is not None:
            return self
        reactor = _Reactor.acquire()

        async def listen() -> asyncio.base_events.Server:
            return await reactor.loop.create_server(
                self._accept, self.host, self.listen_port, reuse_address=True, backlog=128)

        try:
            server = asyncio.run_coroutine_threadsafe(listen(), reactor.loop).result(10)
        except OSError as exc:
            reactor.release()
            raise PortTaken(f"{self.name} could not listen on {self.host}:{self.listen_port} "
                            f"({exc.strerror or exc}); is another process using the port?"
                            ) from exc
        self._reactor, self._loop, self._server = reactor, reactor.loop, server
        return self

    def stop(self) -> None:
        """Stop listening and drop every connection."""
        if self._server is None:
            return
        reactor, server = self._reactor, self._server

        def shut() -> None:
            server.close()
            for loss in self._losses:
                loss.cancel()
            self._losses.clear()
            for hold in self._holds:
                hold.cancel()
            self._holds.clear()
            for link in list(self._links):
                link.close()

        try:
            reactor.call(shut)
        except (concurrent.futures.TimeoutError, RuntimeError):
            pass  # the loop is gone already (interpreter exit)
        self._server = self._reactor = self._loop = None
        reactor.release()

    def __enter__(self) -> Proxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        faults = ", ".join(self.faults()) or "no faults"
        return (f"<Proxy {self.name} {self.host}:{self.listen_port} -> {self.target_port} "
                f"{state}, {faults}>")

    def _call(self, fn: Callable[[], T]) -> T:
        if self._reactor is None:
            raise LabError(f"{self.name} is not running: call start() first")
        return self._reactor.call(fn)

    def _accept(self) -> _Side:
        link = _Link(self)
        self._links.add(link)
        self._accepted += 1
        return link.client

    # ------------------------------------------------------------------- faults
    def lose_acks(self, count: int = 1, api: str | int = "Produce",
                  client_id: str | None = None) -> AckLoss:
        """Forward the next ``count`` requests of ``api`` and drop their responses.

        The broker does the work (a Produce is appended, replicated per ``acks``) but
        the client never hears back: the proxy swallows the response and closes that
        client connection. To the client that is a broken connection with a request in
        flight, so it retries on a new connection, at once, without waiting for any
        timeout: without idempotence the broker appends a second copy; with it, the
        broker recognises the producer id and sequence number and does not.

        Exactly the chosen acks are lost: on the chosen request's connection, requests
        pipelined after it are held back (never forwarded) until the link closes, so
        the client retries them without their having been written. Produce requests
        with ``acks=0`` are never chosen (they get no response to lose).

        ``client_id`` limits the fault to requests of clients with that ``client.id``,
        so that a background workload on the same broker cannot take the lost ack meant
        for the client under study.

        Returns an :class:`AckLoss`; ``.wait(timeout)`` blocks until the acks were
        really dropped, ``.dropped`` counts them.
        """
        loss = AckLoss(count, api, client_id)
        self.arm(loss)
        return loss

    def drop_responses(self, api: str | int = "Produce", count: int = 1,
                       client_id: str | None = None) -> AckLoss:
        """The design guide's name for :meth:`lose_acks` (same fault, api first)."""
        return self.lose_acks(count, api, client_id)

    def arm(self, loss: AckLoss) -> AckLoss:
        """Let this proxy spend ``loss``'s budget too (one fault over several proxies)."""
        self._call(lambda: self._losses.append(loss))
        return loss

    def hold(self, api: str | int = "Produce", count: int = 1, skip: int = 0,
             client_id: str | None = None) -> Hold:
        """Keep the next ``count`` requests of ``api`` (after ``skip`` of them) from the
        broker until :meth:`Hold.release` or :meth:`Hold.inject` (see :class:`Hold`).

        The client sees no answer: it waits for its ``socket.timeout.ms`` /
        ``request.timeout.ms``, then gives up on the connection and retries elsewhere,
        while the proxy still has the request, ready to deliver it late.
        """
        return self.arm_hold(Hold(api, count, skip, client_id))

    def arm_hold(self, hold: Hold) -> Hold:
        """Let this proxy spend ``hold``'s budget too (one fault over several proxies)."""
        self._call(lambda: self._holds.append(hold))
        return hold

    def _choose_hold(self, head: RequestHeader) -> Hold | None:
        self._holds = [h for h in self._holds if not h.finished]
        for hold in self._holds:
            if hold._take(head):
                return hold
        return None

    async def _send_alone(self, held: HeldRequest) -> None:
        """Deliver a held frame on a connection of its own and record the answer.

        A fresh connection carries nothing else, so the late request reorders no other
        request; the broker needs no handshake first (ApiVersions is optional).
        """
        held.how = "injected"
        error = "CONNECTION_FAILED"
        try:
            reader, writer = await asyncio.open_connection(self.target_host, self.target_port)
            try:
                writer.write(held.frame)
                await writer.drain()
                size = struct.unpack(">i", await reader.readexactly(4))[0]
                body = await reader.readexactly(size)
                code = parse_response_error(held.head.api_key, held.head.api_version, body)
                error = error_name_of(code)
            finally:
                writer.close()
        except (OSError, asyncio.IncompleteReadError, struct.error):
            pass
        held.hold._answered(held, error)

    def _inject(self, held: HeldRequest, timeout: float) -> None:
        if self._loop is None:
            raise LabError(f"{self.name} is not running: a held request cannot be injected")

        def leave() -> None:
            held.link.close()  # the client's own connection, if it still waits there
        self._call(leave)
        future = asyncio.run_coroutine_threadsafe(self._send_alone(held), self._loop)
        try:
            future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            held.hold._answered(held, "NO_ANSWER")

    def delay(self, ms: float, direction: str = "both") -> None:
        """Hold every byte ``ms`` milliseconds before forwarding it (order is kept)."""
        if direction not in DIRECTIONS:
            raise bad_value("direction", direction, " or ".join(map(repr, DIRECTIONS)))
        if not isinstance(ms, (int, float)) or isinstance(ms, bool) or ms < 0:
            raise bad_value("ms", ms, "a number of milliseconds >= 0")
        names = ("to_broker", "to_client") if direction == "both" else (direction,)

        def apply() -> None:
            for d in names:
                self._delays[d] = ms / 1000.0

        self._call(apply)

    def blackhole(self) -> None:
        """Let nothing through, like a network partition between clients and this broker.

        Existing connections stall (the proxy stops reading both sockets, so bytes wait
        in kernel buffers); new connections are accepted but go nowhere. Clients see no
        error, only silence, until their own timeouts fire (``request.timeout.ms``,
        ``message.timeout.ms``, ``session.timeout.ms``): that is how a partition looks,
        unlike a refused connection, which looks like a dead broker. ``heal()`` lets the
        stalled bytes flow again.
        """
        def apply() -> None:
            self._blackholed = True
            for link in self._links:
                for side in (link.client, link.broker):
                    side.pause("blackhole")
                for box in (link.to_broker, link.to_client):
                    if box.timer is not None:
                        box.timer.cancel()
                        box.timer = None

        self._call(apply)

    def reset(self) -> int:
        """Reset every live connection (the client sees "connection reset by peer").

        Returns how many were reset. New connections are accepted as usual.
        """
        def apply() -> int:
            links = list(self._links)
            for link in links:
                link.reset = True
                link.close()
            return len(links)

        return self._call(apply)

    def heal(self) -> None:
        """Clear every fault: no delay, no blackhole, no pending lost acks."""
        def apply() -> None:
            for loss in self._losses:
                loss.cancel()
            self._losses.clear()
            for hold in self._holds:  # a held request still waited for goes on late
                hold.cancel()
                for held in hold.held:
                    if not held.how and held.proxy is self and not held.link.closed:
                        held.link.release_held(held)
            self._holds.clear()
            self._delays = {"to_broker": 0.0, "to_client": 0.0}
            self._blackholed = False
            for link in list(self._links):
                if link.target is not None or link.held:
                    link.release_hold()
                for side in (link.client, link.broker):
                    side.unpause("blackhole")
                for box in (link.to_broker, link.to_client):
                    box.flush(now=True)

        if self._reactor is not None:
            self._call(apply)

    def faults(self) -> list[str]:
        """Names of the faults active now (empty when healthy)."""
        active = []
        if self._blackholed:
            active.append("blackhole")
        if any(self._delays.values()):
            active.append("delay " + ", ".join(
                f"{d} {s * 1000:g} ms" for d, s in self._delays.items() if s))
        if any(not loss.finished for loss in self._losses):
            active.append("lose_acks")
        if any(not hold.finished for hold in self._holds):
            active.append("hold")
        return active

    # ---------------------------------------------------------------- counters
    def _choose(self, head: RequestHeader) -> AckLoss | None:
        if not self._losses:
            return None
        self._losses = [loss for loss in self._losses if not loss.finished]
        for loss in self._losses:
            if loss._take(head.api_key, head.client_id):
                return loss
        return None

    def _count_request(self, key: int, size: int) -> None:
        self._requests[key] = self._requests.get(key, 0) + 1
        self._bytes_to_broker += size

    def _count_response(self, key: int, size: int) -> None:
        self._responses[key] = self._responses.get(key, 0) + 1
        self._bytes_to_client += size

    def stats(self) -> dict[str, Any]:
        """Counters since start (or :meth:`clear_stats`): requests and responses per api,
        bytes each way (whole frames), connections, acks dropped, active faults."""
        def snap() -> dict[str, Any]:
            return {
                "name": self.name,
                "requests": {api_name(k): v for k, v in sorted(self._requests.items())},
                "responses": {api_name(k): v for k, v in sorted(self._responses.items())
                              if k >= 0},
                "bytes_to_broker": self._bytes_to_broker,
                "bytes_to_client": self._bytes_to_client,
                "connections_accepted": self._accepted,
                "connections_open": len(self._links),
                "acks_dropped": self._acks_dropped,
                "faults": self.faults(),
            }

        return self._call(snap)

    def clear_stats(self) -> None:
        self._call(self._reset_counters)

    def requests(self, api: str | int) -> int:
        """How many requests of ``api`` were forwarded so far (a recipe's progress probe)."""
        key = api_key(api)
        return self._call(lambda: self._requests.get(key, 0))

    def wait_requests(self, api: str | int, count: int, timeout: float = 10.0) -> bool:
        """Poll until ``count`` requests of ``api`` were forwarded; False on timeout."""
        end = time.monotonic() + timeout
        while self.requests(api) < count:
            if time.monotonic() >= end:
                return False
            time.sleep(0.01)
        return True
