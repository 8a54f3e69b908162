"""The fault proxy's own process: every proxy of one notebook on one asyncio loop.

Why a process of its own: in the notebook's process the proxy's loop shared the GIL
with the student's producer loop, and every chunk it forwarded waited for that loop to
let go (one round of ``bench/proxy_overhead.py`` fell to 61 % of direct throughput).
Here the byte pumping (:mod:`.link`) has an interpreter to itself.

The owner (:class:`deliverylab.proxy.proxy.Proxy`, through its ``_Child``) talks over this
process's stdin and stdout: each message a 4-byte length and a pickle. A request is
``(rid, proxy id, verb, args)`` and is answered ``("reply", rid, ok, value)`` at once,
except ``inject``, answered when the broker has. The fault handles (``AckLoss``,
``Hold``) live in the owner; their budgets are spent here (:class:`Loss`,
:class:`HoldState`), and every change is sent back as an event *before* the reply of
the request that caused it, so an owner that got its reply has the news too.

Lifetime: when stdin reaches EOF -- the owner closed it, or died however it died (a
kernel restart is a SIGKILL) -- every listener stops and the process exits, removing
its log if it is empty. That is the guarantee :mod:`deliverylab.process.reaper` is built
on, here without a second process.
"""

from __future__ import annotations

import asyncio
import os
import pickle
import signal
import struct
from typing import Any, TypeVar

from ..errors import LabError, PortTaken
from .framing import RequestHeader, api_name, error_name_of, parse_response_error
from .link import _Link, _Side

LOG_ENV = "DELIVERYLAB_PROXY_LOG"  # the owner names the log it sends stderr to

# --- fault state (the owner holds the handles) ----------------------------------------


class Budget:
    """What :class:`Loss` and :class:`HoldState` share: choosing requests of one api (of
    one client, if ``client_id``) up to ``count``, giving a choice back, cancelling.

    Why one class: both budgets may be armed on several proxies at once and must spend
    ``count`` exactly once between them, and a request chosen on a connection that died
    before the fault could act must be chosen again; written once, the two faults cannot
    drift apart on that rule. Every change is told to the owner's handle (``_tell``).
    """

    def __init__(self, server: Server, bid: int, key: int, count: int,
                 client_id: str | None, cancelled: bool) -> None:
        self.server, self.id = server, bid
        self.api_key, self.count, self.client_id = key, count, client_id
        self.chosen = 0  # requests chosen, not given back
        self.cancelled = cancelled

    @property
    def finished(self) -> bool:
        return self.cancelled or self.chosen >= self.count

    def _take(self, head: RequestHeader) -> bool:
        """Choose this request if it is of the api and client and budget is left."""
        if head.api_key != self.api_key or (self.client_id is not None
                                            and head.client_id != self.client_id):
            return False
        if self.cancelled or self.chosen >= self.count or self._passes():
            return False
        self.chosen += 1
        self._tell()
        return True

    def _passes(self) -> bool:
        """Let a request that would be chosen through all the same (``Hold``'s skip)."""
        return False

    def _unchoose(self) -> None:
        """A chosen request's connection died before the fault acted: choose another."""
        self.chosen -= 1
        self._tell()

    def cancel(self) -> None:
        self.cancelled = True
        self._tell()

    def _tell(self) -> None:
        raise NotImplementedError


class Loss(Budget):
    """The budget of one ``AckLoss`` handle, shared by every proxy it is armed on.

    A chosen request is forwarded and its response will be dropped; the budget is
    finished only once ``count`` responses really were (``dropped``).
    """

    def __init__(self, server: Server, lid: int, count: int, key: int,
                 client_id: str | None, cancelled: bool) -> None:
        super().__init__(server, lid, key, count, client_id, cancelled)
        self.dropped = 0

    @property
    def finished(self) -> bool:
        return self.cancelled or self.dropped >= self.count

    def _fired(self, proxy: str, cid: int) -> None:
        self.dropped += 1
        self._tell((proxy, cid))

    def _tell(self, fired: tuple[str, int] | None = None) -> None:
        self.server.send(("loss", self.id, self.chosen, self.dropped, self.cancelled, fired))


class HoldState(Budget):
    """The budget of one ``Hold`` handle and the requests it keeps from the broker."""

    def __init__(self, server: Server, hid: int, key: int, count: int, skip: int,
                 client_id: str | None, cancelled: bool) -> None:
        super().__init__(server, hid, key, count, client_id, cancelled)
        self._skip = skip
        self.held: list[Held] = []

    def _passes(self) -> bool:
        if self._skip:
            self._skip -= 1
            return True
        return False

    def _keep(self, proxy: Engine, link: _Link, head: RequestHeader, frame: bytes) -> None:
        held = Held(self.server.new_held_id(), self, proxy, link, head, frame)
        self.held.append(held)
        self.server.helds[held.id] = held
        self.server.send(("held", self.id, held.id, proxy.id, head, frame))

    def _tell(self) -> None:
        self.server.send(("hold", self.id, self.chosen, self.cancelled))


class Held:
    """One request a hold kept: its link, header and whole frame, and what became of it."""

    def __init__(self, hid: int, hold: HoldState, proxy: Engine, link: _Link,
                 head: RequestHeader, frame: bytes) -> None:
        self.id, self.hold, self.proxy, self.link = hid, hold, proxy, link
        self.head, self.frame = head, frame
        self.how = ""  # "released" (on the client's own connection) or "injected"
        self.error: str | None = None  # the broker's answer

    def mark(self, how: str) -> None:
        self.how = how
        self._tell()

    def answer(self, error: str) -> None:
        self.error = error
        self._tell()

    def _tell(self) -> None:
        self.hold.server.send(("held_state", self.id, self.how, self.error))


# --- one proxy ------------------------------------------------------------------------


_B = TypeVar("_B", bound=Budget)


def _first_taker(budgets: list[_B], head: RequestHeader) -> _B | None:
    """The first budget still open that chooses ``head``; finished ones are dropped
    from ``budgets`` (in place: it is the engine's own list)."""
    budgets[:] = [b for b in budgets if not b.finished]
    for budget in budgets:
        if budget._take(head):
            return budget
    return None


class Engine:
    """What one ``Proxy`` is inside this process: a listener, its links, its faults.

    The links (:mod:`.link`) read ``_delays``, ``_blackholed``, ``_losses`` and
    ``_holds`` here and report counts back; the ``do_*`` methods are the owner's verbs.
    """

    def __init__(self, pid: int, name: str, host: str, listen_port: int,
                 target_port: int) -> None:
        self.id, self.name = pid, name
        self.host, self.listen_port = host, listen_port
        self.target_host, self.target_port = host, target_port
        self._loop = asyncio.get_running_loop()
        self._server: asyncio.base_events.Server | None = None
        self._links: set[_Link] = set()
        self._losses: list[Loss] = []
        self._holds: list[HoldState] = []
        self._delays = {"to_broker": 0.0, "to_client": 0.0}
        self._blackholed = False
        self._zero_counters()

    async def start(self) -> None:
        try:
            self._server = await self._loop.create_server(
                self._accept, self.host, self.listen_port, reuse_address=True, backlog=128)
        except OSError as exc:
            raise PortTaken(f"{self.name} could not listen on {self.host}:{self.listen_port} "
                            f"({exc.strerror or exc}); is another process using the port?"
                            ) from None

    def _accept(self) -> _Side:
        link = _Link(self)  # type: ignore[arg-type]
        self._links.add(link)
        self._accepted += 1
        return link.client

    def do_stop(self) -> None:
        if self._server is not None:
            self._server.close()
        self._server = None
        for fault in (*self._losses, *self._holds):
            fault.cancel()
        self._losses.clear()
        self._holds.clear()
        for link in list(self._links):
            link.close()

    # -- faults
    def do_arm(self, loss: Loss) -> None:
        self._losses.append(loss)

    def do_arm_hold(self, hold: HoldState) -> None:
        self._holds.append(hold)

    def _choose(self, head: RequestHeader) -> Loss | None:
        return _first_taker(self._losses, head) if self._losses else None

    def _choose_hold(self, head: RequestHeader) -> HoldState | None:
        return _first_taker(self._holds, head)

    async def _send_alone(self, held: Held) -> None:
        """Deliver a held frame on a connection of its own and record the answer.

        A fresh connection carries nothing else, so the late request reorders no other
        request; the broker needs no handshake first (ApiVersions is optional).
        """
        held.mark("injected")
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
        held.answer(error)

    def do_release(self, held: Held) -> str:
        held.link.release_held(held)  # type: ignore[arg-type]
        return held.how

    async def do_inject(self, held: Held, timeout: float) -> None:
        held.link.close()  # the client's own connection, if it still waits there
        try:
            await asyncio.wait_for(self._send_alone(held), timeout)
        except TimeoutError:
            held.answer("NO_ANSWER")

    def do_delay(self, seconds: float, directions: tuple[str, ...]) -> None:
        for d in directions:
            self._delays[d] = seconds

    def do_blackhole(self) -> None:
        self._blackholed = True
        for link in self._links:
            for side in (link.client, link.broker):
                side.pause("blackhole")
            for box in (link.to_broker, link.to_client):
                if box.timer is not None:
                    box.timer.cancel()
                    box.timer = None

    def do_reset(self) -> int:
        links = list(self._links)
        for link in links:
            link.reset = True
            link.close()
        return len(links)

    def do_heal(self) -> None:
        for loss in self._losses:
            loss.cancel()
        self._losses.clear()
        for hold in self._holds:  # a held request still waited for goes on late
            hold.cancel()
            for held in hold.held:
                if not held.how and held.proxy is self and not held.link.closed:
                    held.link.release_held(held)  # type: ignore[arg-type]
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

    def do_faults(self) -> list[str]:
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

    # -- counters
    def _count_request(self, key: int, size: int) -> None:
        self._requests[key] = self._requests.get(key, 0) + 1
        self._bytes_to_broker += size

    def _count_response(self, key: int, size: int) -> None:
        self._responses[key] = self._responses.get(key, 0) + 1
        self._bytes_to_client += size

    def _zero_counters(self) -> None:
        self._requests: dict[int, int] = {}
        self._responses: dict[int, int] = {}
        self._bytes_to_broker = 0
        self._bytes_to_client = 0
        self._accepted = 0
        self._acks_dropped = 0

    def do_stats(self) -> dict[str, Any]:
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
            "faults": self.do_faults(),
        }

    def do_requests(self, key: int) -> int:
        return self._requests.get(key, 0)


# --- the process ----------------------------------------------------------------------


class Server:
    """Reads the owner's requests, runs them on the engines, writes replies and events."""

    def __init__(self, out_fd: int) -> None:
        self.out_fd = out_fd
        self.engines: dict[int, Engine] = {}
        self.losses: dict[int, Loss] = {}
        self.holds: dict[int, HoldState] = {}
        self.helds: dict[int, Held] = {}
        self._held_ids = 0

    def new_held_id(self) -> int:
        self._held_ids += 1
        return self._held_ids

    def send(self, message: tuple) -> None:
        data = pickle.dumps(message, pickle.HIGHEST_PROTOCOL)
        view = memoryview(struct.pack(">I", len(data)) + data)
        while view:  # a blocking pipe: the owner's reader thread drains it
            view = view[os.write(self.out_fd, view):]

    def handle(self, rid: int, pid: int, verb: str, args: tuple) -> None:
        try:
            if verb == "start":
                engine = Engine(pid, *args)
                task = asyncio.ensure_future(engine.start())
                task.add_done_callback(lambda t: self._started(rid, engine, t))
                return
            if verb == "inject":
                held = self.helds[args[0]]
                task = asyncio.ensure_future(held.proxy.do_inject(held, args[1]))
                task.add_done_callback(lambda t: self._finished(rid, t))
                return
            value = self._run(pid, verb, args)
        except Exception as exc:  # handed back to the owner, who raises it
            self._reply(rid, False, exc)
            return
        self._reply(rid, True, value)

    def _run(self, pid: int, verb: str, args: tuple) -> Any:
        if verb == "cancel_loss":
            return self.losses[args[0]].cancel() if args[0] in self.losses else None
        if verb == "cancel_hold":
            return self.holds[args[0]].cancel() if args[0] in self.holds else None
        engine = self.engines[pid]
        if verb == "arm":
            lid = args[0]
            loss = self.losses.get(lid) or Loss(self, *args)
            self.losses[lid] = loss
            return engine.do_arm(loss)
        if verb == "arm_hold":
            hid = args[0]
            hold = self.holds.get(hid) or HoldState(self, *args)
            self.holds[hid] = hold
            return engine.do_arm_hold(hold)
        if verb == "release":
            held = self.helds[args[0]]
            return held.proxy.do_release(held)
        if verb == "stop":
            del self.engines[pid]
        return getattr(engine, "do_" + verb)(*args)

    def _started(self, rid: int, engine: Engine, task: asyncio.Future) -> None:
        if task.exception() is None:
            self.engines[engine.id] = engine
        self._finished(rid, task)

    def _finished(self, rid: int, task: asyncio.Future) -> None:
        exc = task.exception()
        self._reply(rid, exc is None, exc)

    def _reply(self, rid: int, ok: bool, value: Any) -> None:
        try:
            self.send(("reply", rid, ok, value))
        except (pickle.PicklingError, TypeError, AttributeError):
            self.send(("reply", rid, False, LabError(f"the proxy process: {value!r}")))

    async def serve(self, in_fd: int) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=1 << 20)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader),
                                     os.fdopen(in_fd, "rb", buffering=0))
        try:
            while True:
                size = struct.unpack(">I", await reader.readexactly(4))[0]
                self.handle(*pickle.loads(await reader.readexactly(size)))
        except asyncio.IncompleteReadError:
            pass  # EOF: the owner is gone, or done with every proxy
        for engine in list(self.engines.values()):
            engine.do_stop()


def main() -> None:
    """Serve the owner on stdin/stdout until stdin closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a notebook interrupt is not for us
    out_fd = os.dup(1)
    os.dup2(2, 1)  # a stray print goes to the log, never into the message pipe
    asyncio.run(Server(out_fd).serve(0))
    _drop_empty_log(os.environ.get(LOG_ENV))


def _drop_empty_log(path: str | None) -> None:
    """Remove this process's log (its stderr) if nothing was written to it: a healthy
    run leaves nothing behind in the temporary folder, whether the owner closed the pipe
    or died. A log with something in it stays: an error message named it."""
    if not path:
        return
    try:
        if os.path.getsize(path) == 0:
            os.unlink(path)
    except OSError:
        pass


if __name__ == "__main__":
    main()
