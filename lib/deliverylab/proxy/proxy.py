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

Process: all proxies of one Python process share one asyncio loop in a process of its
own (:mod:`.engine`; the forwarding is :mod:`.link`), so forwarding never
waits for the notebook's GIL (with the loop in a thread of the notebook's process, a busy
producer loop there brought one round of bench/proxy_overhead.py down to 61 % of direct
throughput). This module is the owner's side: every public method is a request
to that process and waits for its reply; the fault handles (:class:`AckLoss`,
:class:`Hold`) live here and are kept current by the process's events. The process
exits when its pipe closes: when the last proxy stops, or when this process dies,
however it dies.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import os
import pickle
import struct
import subprocess
import tempfile
import threading
import weakref
from pathlib import Path
from typing import Any

from ..errors import LabError, bad_value
from ..process.children import child_env, python_module
from ..waiting import verdict_within
from .framing import DIRECTIONS, api_key
from .handles import FaultHandle, HeldRequest, Hold

__all__ = ["AckLoss", "HeldRequest", "Hold", "Proxy"]

_ids = itertools.count(1)  # proxies and requests, as the proxy process knows them

# --- fault handles -------------------------------------------------------------------


class AckLoss(FaultHandle):
    """Handle of one ``lose_acks`` fault: how many acks to lose, and how many were lost.

    One handle may be armed on several proxies at once (the Nemesis does that when it
    does not know which broker will receive the write); the budget is shared, so
    ``count=1`` loses exactly one ack wherever it happens. ``wait()`` blocks until the
    fault has really fired, so a recipe never races its own fault. The budget is spent
    in the proxy process; this handle mirrors it from the process's events.
    """

    _cancel_verb = "cancel_loss"

    def __init__(self, count: int, api: str | int = "Produce",
                 client_id: str | None = None) -> None:
        super().__init__(api, count, client_id)
        self._armed = 0  # requests chosen (forwarded; their responses will be dropped)
        self._dropped = 0
        self.dropped_ids: list[tuple[str, int]] = []  # (proxy name, correlation id)

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

    def _spec(self) -> tuple:
        with self._cond:
            return (self._id, self.count, self.api_key, self.client_id, self._cancelled)

    def _update(self, armed: int, dropped: int, cancelled: bool,
                fired: tuple[str, int] | None) -> None:
        """An event of the proxy process (on the pipe's reader thread)."""
        with self._cond:
            self._armed = armed
            self._dropped = max(self._dropped, dropped)
            self._cancelled = self._cancelled or cancelled
            if fired is not None:
                self.dropped_ids.append(fired)
            self._cond.notify_all()

    def __repr__(self) -> str:
        return f"<AckLoss {self.api} dropped {self.dropped}/{self.count}>"


# --- the proxy process ----------------------------------------------------------------


def _read_exact(stream: Any, size: int) -> bytes | None:
    data = b""
    while len(data) < size:
        chunk = stream.read(size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


class _Child:
    """The proxy process and the pipe to it: one per Python process, shared by every
    proxy, so that one lost-ack budget can be spent on several proxies.

    Requests are written under a lock by any thread; one reader thread hands replies to
    their callers and applies events to the handles, in the order the process sent them.
    """

    _lock = threading.Lock()
    _instance: _Child | None = None

    def __init__(self) -> None:
        self.log = Path(tempfile.gettempdir()) / f"deliverylab-proxy-{os.getpid()}.log"
        # No reaper: the engine exits on EOF of its stdin, however this process dies.
        env = {**child_env(), "DELIVERYLAB_PROXY_LOG": str(self.log)}
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                python_module("proxy.engine"), stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=log, env=env, close_fds=True,
                start_new_session=True)  # a Ctrl-C in the notebook is not for the proxy
        self.users = 0
        self.alive = True
        self._write = threading.Lock()
        self._pending: dict[int, concurrent.futures.Future] = {}
        self.handles: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()
        self.helds: weakref.WeakValueDictionary[int, HeldRequest] = (
            weakref.WeakValueDictionary())
        self.proxies: weakref.WeakValueDictionary[int, Proxy] = weakref.WeakValueDictionary()
        threading.Thread(target=self._read, name="deliverylab-proxy-pipe", daemon=True).start()

    @classmethod
    def acquire(cls) -> _Child:
        with cls._lock:
            if cls._instance is None or not cls._instance.alive:
                cls._instance = cls()
            cls._instance.users += 1
            return cls._instance

    def release(self) -> None:
        with self._lock:
            self.users -= 1
            if self.users > 0 or _Child._instance is not self:
                return
            _Child._instance = None
        try:
            self.proc.stdin.close()  # EOF: the process stops its listeners and exits
            self.proc.wait(5)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait(5)

    def _died(self) -> LabError:
        code = self.proc.poll()
        return LabError(f"the fault proxy's process is gone (exit code {code}); "
                        f"its log: {self.log}")

    def call(self, pid: int, verb: str, *args: Any, timeout: float = 10.0) -> Any:
        """Send one request and wait for its reply (re-raising the process's error)."""
        fut: concurrent.futures.Future = concurrent.futures.Future()
        rid = next(_ids)
        self._pending[rid] = fut
        data = pickle.dumps((rid, pid, verb, args), pickle.HIGHEST_PROTOCOL)
        try:
            if not self.alive:
                raise self._died()
            with self._write:
                try:
                    self.proc.stdin.write(struct.pack(">I", len(data)) + data)
                    self.proc.stdin.flush()
                except (OSError, ValueError):
                    raise self._died() from None
            try:
                return fut.result(timeout)
            except concurrent.futures.TimeoutError:
                raise LabError(f"the fault proxy's process did not answer {verb!r} within "
                               f"{timeout:g} s; its log: {self.log}") from None
        finally:
            self._pending.pop(rid, None)

    def tell(self, verb: str, *args: Any) -> None:
        """A request whose failure does not matter (the process is gone: so is its state)."""
        try:
            self.call(0, verb, *args)
        except LabError:
            pass

    def _read(self) -> None:
        stream = self.proc.stdout
        while (head := _read_exact(stream, 4)) is not None:
            body = _read_exact(stream, struct.unpack(">I", head)[0])
            if body is None:
                break
            message = pickle.loads(body)
            if message[0] == "reply":
                _, rid, ok, value = message
                fut = self._pending.get(rid)
                if fut is not None:
                    fut.set_result(value) if ok else fut.set_exception(value)
            else:
                self._event(*message)
        self.alive = False
        for fut in list(self._pending.values()):
            if not fut.done():
                fut.set_exception(self._died())

    def _event(self, kind: str, *args: Any) -> None:
        if kind in ("loss", "hold"):  # a budget moved: AckLoss._update / Hold._update
            handle = self.handles.get(args[0])
            if handle is not None:
                handle._update(*args[1:])
        elif kind == "held":
            hid, held_id, pid, head, frame = args
            hold = self.handles.get(hid)
            if hold is not None:
                held = HeldRequest(self.proxies.get(pid), head, frame, hold, id=held_id)
                self.helds[held_id] = held
                hold._keep(held)
        elif kind == "held_state":
            held = self.helds.get(args[0])
            if held is not None:
                held.hold._answered(held, *args[1:])


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
        self._id = next(_ids)
        self._child: _Child | None = None

    # ---------------------------------------------------------------- lifecycle
    @property
    def running(self) -> bool:
        return self._child is not None

    def start(self) -> Proxy:
        """Listen on ``listen_port``; returns once the port accepts connections."""
        if self._child is not None:
            return self
        child = _Child.acquire()
        child.proxies[self._id] = self
        try:
            child.call(self._id, "start", self.name, self.host, self.listen_port,
                       self.target_port)
        except BaseException:
            child.release()
            raise
        self._child = child
        return self

    def stop(self) -> None:
        """Stop listening and drop every connection."""
        child, self._child = self._child, None
        if child is None:
            return
        try:
            child.call(self._id, "stop")
        except LabError:
            pass  # the process is gone already (interpreter exit)
        child.release()

    def __enter__(self) -> Proxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        faults = ", ".join(self.faults()) or "no faults"
        return (f"<Proxy {self.name} {self.host}:{self.listen_port} -> {self.target_port} "
                f"{state}, {faults}>")

    def _call(self, verb: str, *args: Any, timeout: float = 10.0) -> Any:
        child = self._child
        if child is None:
            raise LabError(f"{self.name} is not running: call start() first")
        return child.call(self._id, verb, *args, timeout=timeout)

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

    def arm(self, loss: AckLoss) -> AckLoss:
        """Let this proxy spend ``loss``'s budget too (one fault over several proxies)."""
        self._attach(loss)
        self._call("arm", *loss._spec())
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
        self._attach(hold)
        self._call("arm_hold", *hold._spec())
        return hold

    def _attach(self, handle: AckLoss | Hold) -> None:
        child = self._child
        if child is None:
            raise LabError(f"{self.name} is not running: call start() first")
        if handle._child is not None and handle._child is not child:
            raise LabError(f"{handle!r} is armed in another proxy process (one that was "
                           "stopped or died); make a new one")
        handle._child = child
        child.handles[handle._id] = handle

    def _release(self, held: HeldRequest) -> str:
        """Send a held request on on its client's connection (``Hold.release``)."""
        return self._call("release", held.id)

    def _inject(self, held: HeldRequest, timeout: float) -> None:
        """Send a held request on a connection of its own (``Hold.inject``); returns once
        the broker answered, or ``timeout`` passed (the answer is then NO_ANSWER)."""
        if self._child is None:
            raise LabError(f"{self.name} is not running: a held request cannot be injected")
        self._call("inject", held.id, timeout, timeout=timeout + 10)

    def delay(self, ms: float, direction: str = "both") -> None:
        """Hold every byte ``ms`` milliseconds before forwarding it (order is kept)."""
        if direction not in DIRECTIONS:
            raise bad_value("direction", direction, " or ".join(map(repr, DIRECTIONS)))
        if not isinstance(ms, (int, float)) or isinstance(ms, bool) or ms < 0:
            raise bad_value("ms", ms, "a number of milliseconds >= 0")
        names = ("to_broker", "to_client") if direction == "both" else (direction,)
        self._call("delay", ms / 1000.0, names)

    def blackhole(self) -> None:
        """Let nothing through, like a network partition between clients and this broker.

        Existing connections stall (the proxy stops reading both sockets, so bytes wait
        in kernel buffers); new connections are accepted but go nowhere. Clients see no
        error, only silence, until their own timeouts fire (``request.timeout.ms``,
        ``message.timeout.ms``, ``session.timeout.ms``): that is how a partition looks,
        unlike a refused connection, which looks like a dead broker. ``heal()`` lets the
        stalled bytes flow again.
        """
        self._call("blackhole")

    def reset(self) -> int:
        """Reset every live connection (the client sees "connection reset by peer").

        Returns how many were reset. New connections are accepted as usual.
        """
        return self._call("reset")

    def heal(self) -> None:
        """Clear every fault: no delay, no blackhole, no pending lost acks (held requests
        still waited for go on late)."""
        if self._child is not None:
            self._call("heal")

    def faults(self) -> list[str]:
        """Names of the faults active now (empty when healthy, or stopped)."""
        return self._call("faults") if self._child is not None else []

    # ---------------------------------------------------------------- counters
    def stats(self) -> dict[str, Any]:
        """Counters since start: requests and responses per api,
        bytes each way (whole frames), connections, acks dropped, active faults."""
        return self._call("stats")

    def requests(self, api: str | int) -> int:
        """How many requests of ``api`` were forwarded so far (a recipe's progress probe)."""
        return self._call("requests", api_key(api))

    def wait_requests(self, api: str | int, count: int, timeout: float = 10.0) -> bool:
        """Poll until ``count`` requests of ``api`` were forwarded; False on timeout (the
        recipes ask whether a client got that far, and say so when it did not)."""
        return verdict_within(f"{count} {api} requests through the proxy",
                              lambda: self.requests(api) >= count, timeout, interval=0.01)
