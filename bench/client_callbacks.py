"""Issue 41's SystemError, reproduced without a Kafka cluster: N iterations, counted.

Run: ``.venv/bin/python bench/client_callbacks.py [-n 50] [--load 2] [--lib DIR]``
(through ``/work/shared/tools/heavy`` when ``--load`` starts CPU hogs).

The failure seen in CI, out of ``producer.flush()`` in an IDEMPOTENT ``isolate_leader``
run, was ``SystemError: _PyErr_SetObject: exception <class 'str'> is not a
BaseException subclass``. Two things meet there:

* **librdkafka** acknowledges some messages *without an offset*: an idempotent
  producer whose batch failed with "possibly persisted" (a timeout, a lost connection,
  ``NOT_ENOUGH_REPLICAS_AFTER_APPEND``) and whose next batch then succeeded reports the
  first batch delivered -- "implicitly acked" (``rd_kafka_dr_implicit_ack``,
  rdkafka_broker.c) -- with ``RD_KAFKA_OFFSET_INVALID``, and ``Message.offset()`` is
  None. The lab's delivery callback compared it with 0: a ``TypeError``.
* **confluent-kafka** (2.13.0 to 2.16.1, the newest on PyPI; PR #2019) stores an
  exception raised in a callback for the end of the call with ``PyErr_Fetch`` and drops
  its type (``cfl_exception_fetch``, confluent_kafka.h); it restores it with
  ``PyErr_SetObject(Py_TYPE(value), value)``. On Python < 3.12 an exception raised by C
  code is not normalised yet: its value is the message *string*. So any such error in
  any callback comes out of ``flush()`` as that SystemError, the real one lost.

Each iteration runs in a child process (a native crash would show as a signal, and is
counted) against librdkafka's own in-process mock cluster, driven through ctypes
(``rd_kafka_mock_*``, exported by the wheel's librdkafka): the first Produce response
says ``NOT_ENOUGH_REPLICAS_AFTER_APPEND``, the next ones succeed, as in librdkafka's
test 0144. Three cases per iteration:

* ``client``: a plain Producer whose delivery callback does what the lab's did
  (``msg.offset() >= 0``): the client bug, without the lab. Expected: SystemError
  every time on Python 3.11 with confluent-kafka 2.13-2.16.
* ``recorder``: the lab's :class:`~deliverylab.clients.Recorder` (from ``--lib``, default
  this checkout): every value recorded ``ok``, the first without an offset, and
  ``flush()`` returns. ``--lib /work/main/lib`` runs the code before the fix.
* ``logger``: a Producer pointed at a closed port (librdkafka logs refused
  connections) whose logger has a filter that raises from C; through the lab's
  ``ClientLog`` the flush returns, the failure counted.
* ``fatal``: the lab's Recorder on an idempotent producer that librdkafka turns fatal
  (``rd_kafka_test_fatal_error``, librdkafka's own test hook) with deliveries queued.
  confluent-kafka's ``error_cb`` leaves the ``KafkaException`` *set* while the next
  callbacks run (it never fetches it); depending on what C code meets it first, the
  flush raises a SystemError around it or, the error silently cleared, "returned
  NULL without setting an exception". With ``raise_pending`` in the lab's callbacks:
  the fatal ``KafkaException`` itself (outcome ``KafkaException(fatal)``).

A benchmark, not a CI test: ``tests/unit/test_clients.py`` checks the fix once.
"""

from __future__ import annotations

import argparse
import ctypes
import glob
import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import confluent_kafka
from confluent_kafka import Producer

HERE = Path(__file__).resolve()
CASES = ("client", "recorder", "logger", "fatal")
TOPIC = "bench-callbacks"
VALUES = 5
#: librdkafka's codes and API key used below (rdkafka.h, rdkafka_protocol.h).
NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
OUT_OF_ORDER_SEQUENCE_NUMBER = 45
PRODUCE_API = 0


class MockCluster:
    """librdkafka's in-process mock Kafka cluster, through the wheel's own librdkafka.

    A real librdkafka client talks the real protocol to it; only the broker is
    librdkafka's test double. Lives as long as this process (nothing to stop).
    """

    def __init__(self, brokers: int = 1) -> None:
        libs = Path(confluent_kafka.__file__).resolve().parent.parent / "confluent_kafka.libs"
        found = glob.glob(str(libs / "librdkafka*.so*"))
        if not found:
            raise RuntimeError(f"no librdkafka shared library in {libs}: this bench needs "
                               "the confluent-kafka wheel's bundled librdkafka")
        rdk = ctypes.CDLL(found[0])
        rdk.rd_kafka_conf_new.restype = ctypes.c_void_p
        rdk.rd_kafka_new.restype = ctypes.c_void_p
        rdk.rd_kafka_new.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p,
                                     ctypes.c_size_t]
        rdk.rd_kafka_mock_cluster_new.restype = ctypes.c_void_p
        rdk.rd_kafka_mock_cluster_new.argtypes = [ctypes.c_void_p, ctypes.c_int]
        rdk.rd_kafka_mock_cluster_bootstraps.restype = ctypes.c_char_p
        rdk.rd_kafka_mock_cluster_bootstraps.argtypes = [ctypes.c_void_p]
        rdk.rd_kafka_mock_topic_create.argtypes = [ctypes.c_void_p, ctypes.c_char_p,
                                                   ctypes.c_int, ctypes.c_int]
        rdk.rd_kafka_mock_broker_push_request_error_rtts.argtypes = [
            ctypes.c_void_p, ctypes.c_int32, ctypes.c_int16, ctypes.c_size_t]
        errstr = ctypes.create_string_buffer(512)
        # The mock cluster hangs off a client handle of its own (kept: it owns it).
        self._rk = rdk.rd_kafka_new(0, rdk.rd_kafka_conf_new(), errstr, len(errstr))
        if not self._rk:
            raise RuntimeError(f"rd_kafka_new failed: {errstr.value.decode()}")
        self._rdk = rdk
        self._mc = rdk.rd_kafka_mock_cluster_new(self._rk, brokers)
        self.bootstrap = rdk.rd_kafka_mock_cluster_bootstraps(self._mc).decode()

    def create_topic(self, topic: str, partitions: int = 1) -> None:
        self._rdk.rd_kafka_mock_topic_create(self._mc, topic.encode(), partitions, 1)

    def group_rebalance_delay(self, ms: int) -> None:
        """How long the group coordinator waits for more members before its first
        assignment (3000 ms by default, as Kafka's ``group.initial.rebalance.delay.ms``)."""
        self._rdk.rd_kafka_mock_group_initial_rebalance_delay_ms.argtypes = [
            ctypes.c_void_p, ctypes.c_int32]
        self._rdk.rd_kafka_mock_group_initial_rebalance_delay_ms(self._mc, ms)

    def test_fatal_error(self, rk: int, code: int, reason: str) -> None:
        """librdkafka's test hook: client ``rk`` raises a fatal error now."""
        self._rdk.rd_kafka_test_fatal_error.argtypes = [ctypes.c_void_p, ctypes.c_int,
                                                         ctypes.c_char_p]
        if self._rdk.rd_kafka_test_fatal_error(rk, code, reason.encode()):
            raise RuntimeError("rd_kafka_test_fatal_error refused: a fatal error was "
                               "already raised on that client")

    def fail_next_produce(self, broker: int = 1,
                          code: int = NOT_ENOUGH_REPLICAS_AFTER_APPEND) -> None:
        """The broker's next Produce response carries ``code`` (then they succeed)."""
        self._rdk.rd_kafka_mock_broker_push_request_error_rtts(
            self._mc, broker, PRODUCE_API, 1, ctypes.c_int(code), ctypes.c_int(0))

    def slow_produce(self, count: int, rtt_ms: int, broker: int = 1) -> None:
        """The broker answers its next ``count`` Produce requests (no error) only after
        ``rtt_ms``: a client whose request timeout is shorter gives up on each."""
        pairs = [v for _ in range(count) for v in (ctypes.c_int(0), ctypes.c_int(rtt_ms))]
        self._rdk.rd_kafka_mock_broker_push_request_error_rtts(
            self._mc, broker, PRODUCE_API, count, *pairs)


def implicit_ack_settings() -> dict[str, Any]:
    """One message per batch, so the failed first batch is acked by the second's
    success (librdkafka's test 0144 does the same)."""
    return {"enable.idempotence": True, "acks": "all", "batch.num.messages": 1,
            "linger.ms": 0}


def _outcome(exc: BaseException | None) -> str:
    if exc is None:
        return "clean"
    if isinstance(exc, SystemError) and "is not a BaseException subclass" in str(exc):
        return "SystemError(str)"
    return type(exc).__name__


# --- one case, in a child process ---------------------------------------------------


def case_client() -> dict[str, Any]:
    mock = MockCluster()
    mock.create_topic(TOPIC)
    mock.fail_next_produce()
    offsets: list[Any] = []
    producer = Producer({"bootstrap.servers": mock.bootstrap, **implicit_ack_settings()})

    def report(err: Any, msg: Any) -> None:
        offsets.append(msg.offset())
        assert msg.offset() >= 0 or err is not None  # the lab's old comparison

    for i in range(VALUES):
        producer.produce(TOPIC, b"v%d" % i, partition=0, on_delivery=report)
    try:
        producer.flush(15)
        exc = None
    except BaseException as caught:  # noqa: BLE001 -- counted, not handled
        exc = caught
    return {"outcome": _outcome(exc), "error": repr(exc) if exc else None,
            "offsets": offsets}


def case_recorder() -> dict[str, Any]:
    from deliverylab.clients import Recorder, config
    from deliverylab.history import History
    from deliverylab.values import ValueId

    mock = MockCluster()
    mock.create_topic(TOPIC)
    mock.fail_next_produce()
    history = History()
    recorder = Recorder(history, "bench", TOPIC)
    producer = Producer(config(mock.bootstrap, **implicit_ack_settings()))
    for i in range(VALUES):
        recorder.send(producer, ValueId("bench", i), partition=0)
    try:
        producer.flush(15)
        recorder.settle()
        exc = None
    except BaseException as caught:  # noqa: BLE001 -- counted, not handled
        exc = caught
    sends = [op for op in history if op.kind == "send"]
    acked = sum(op.outcome == "ok" for op in sends)
    without_offset = sum(op.outcome == "ok" and op.offset is None for op in sends)
    outcome = _outcome(exc)
    if outcome == "clean" and acked != VALUES:
        outcome = f"only {acked} of {VALUES} recorded ok"
    return {"outcome": outcome, "error": repr(exc) if exc else None, "acked": acked,
            "acked_without_offset": without_offset}


class _Raising(logging.Filter):
    """A filter that fails the way C code fails: an unnormalised TypeError."""

    def filter(self, record: logging.LogRecord) -> bool:
        return len(record.levelno) > 0  # type: ignore[arg-type]  # TypeError from C


def case_logger() -> dict[str, Any]:
    from deliverylab import clients

    inner = logging.getLogger("bench.client_callbacks")
    inner.propagate = False
    inner.addFilter(_Raising())
    adapter = getattr(clients, "ClientLog", None)  # absent before the fix
    logger = adapter(inner) if adapter is not None else inner
    producer = Producer({"bootstrap.servers": "127.0.0.1:1", "logger": logger,
                         "reconnect.backoff.ms": 10, "reconnect.backoff.max.ms": 50,
                         "message.timeout.ms": 1500})
    producer.produce(TOPIC, b"x")
    try:
        producer.flush(2)
        exc = None
    except BaseException as caught:  # noqa: BLE001 -- counted, not handled
        exc = caught
    return {"outcome": _outcome(exc), "error": repr(exc) if exc else None,
            "log_failures": getattr(logger, "failures", None)}


def case_fatal() -> dict[str, Any]:
    from confluent_kafka import KafkaException

    from deliverylab.clients import Recorder, config
    from deliverylab.history import History
    from deliverylab.values import ValueId

    mock = MockCluster()
    mock.create_topic(TOPIC)
    history = History()
    recorder = Recorder(history, "bench", TOPIC)
    producer = Producer(config(mock.bootstrap, **{"enable.idempotence": True,
                                                  "linger.ms": 50}))
    producer.list_topics(TOPIC, timeout=10)
    for i in range(VALUES):
        recorder.send(producer, ValueId("bench", i), partition=0)
    # The Producer object's rd_kafka_t: the first field after PyObject_HEAD (Handle,
    # confluent_kafka.h). Bench-only: a wrong layout would crash this child, counted.
    rk = ctypes.c_void_p.from_address(id(producer) + object.__basicsize__).value
    mock.test_fatal_error(rk, OUT_OF_ORDER_SEQUENCE_NUMBER, "bench: injected fatal error")
    try:
        producer.flush(15)
        exc = None
    except BaseException as caught:  # noqa: BLE001 -- counted, not handled
        exc = caught
    outcome = _outcome(exc)
    if (isinstance(exc, KafkaException) and exc.args
            and getattr(exc.args[0], "fatal", lambda: False)()):
        outcome = "KafkaException(fatal)"
    elif isinstance(exc, SystemError):
        outcome = ("SystemError(around the fatal error)" if exc.__cause__ is not None
                   else "SystemError(fatal error lost)")
    return {"outcome": outcome, "error": repr(exc)[:200] if exc else None,
            "recorded": sum(op.kind == "send" for op in history)}


def child(case: str) -> None:
    result = {"client": case_client, "recorder": case_recorder, "logger": case_logger,
              "fatal": case_fatal}[case]()
    print("RESULT " + json.dumps(result), flush=True)


# --- the loop -------------------------------------------------------------------------


def run_case(case: str, lib: str, timeout: float, script: Path = HERE) -> dict[str, Any]:
    """One case in a child process (``script --child case``): its result, or the signal
    or exit that ended it with its stderr's tail."""
    env = {**os.environ, "PYTHONPATH": lib, "PYTHONFAULTHANDLER": "1"}
    started = time.monotonic()
    try:
        proc = subprocess.run([sys.executable, str(script), "--child", case], env=env,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"outcome": "hung", "seconds": timeout}
    seconds = time.monotonic() - started
    if proc.returncode < 0:
        name = signal.Signals(-proc.returncode).name
        return {"outcome": f"crash {name}", "seconds": seconds, "tail": proc.stderr[-2000:]}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        return {"outcome": f"exit {proc.returncode}", "seconds": seconds,
                "tail": proc.stderr[-2000:]}
    return {**json.loads(lines[-1][len("RESULT "):]), "seconds": seconds}


def loop_arguments(doc: str, cases: tuple[str, ...]) -> argparse.ArgumentParser:
    """The options of a bench that runs cases in child processes N times, under load:
    this one and ``txn_abort_race.py`` (which adds its own)."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("-n", "--iterations", type=int, default=50)
    ap.add_argument("--load", type=int, default=0, metavar="HOGS",
                    help="CPU hogs (stress-ng --cpu HOGS) running meanwhile; issue 41: 2")
    ap.add_argument("--cases", default=",".join(cases))
    ap.add_argument("--timeout", type=float, default=60.0, help="per child, seconds")
    ap.add_argument("--child", choices=cases, help=argparse.SUPPRESS)
    return ap


def chosen_cases(args: argparse.Namespace, cases: tuple[str, ...]) -> list[str]:
    """The cases ``--cases`` names, or one line saying what is accepted."""
    chosen = [c for c in args.cases.split(",") if c]
    unknown = sorted(set(chosen) - set(cases))
    if unknown or args.iterations < 1:
        raise SystemExit(f"bad --cases {unknown} or -n {args.iterations}: cases are "
                         f"{', '.join(cases)}, -n a whole number >= 1")
    return chosen


def client_version() -> str:
    """confluent-kafka's version (a tuple before 2.x)."""
    client = confluent_kafka.version()
    return client[0] if isinstance(client, tuple) else client


def run_loop(args: argparse.Namespace, cases: list[str], lib: str,
             script: Path = HERE) -> dict[str, list[dict[str, Any]]]:
    """Every case ``args.iterations`` times, each in a child of ``script``, beside
    ``args.load`` CPU hogs: each case's results in order (progress every 10)."""
    from cpu_load import start_load  # bench/, beside this script (tests load it alone)

    hogs = start_load(args.load)
    results: dict[str, list[dict[str, Any]]] = {c: [] for c in cases}
    t0 = time.monotonic()
    try:
        for i in range(args.iterations):
            for case in cases:
                results[case].append(run_case(case, lib, args.timeout, script))
            if (i + 1) % 10 == 0 or i + 1 == args.iterations:
                print(f"  {i + 1}/{args.iterations} iterations, load average "
                      f"{os.getloadavg()[0]:.2f}", flush=True)
    finally:
        if hogs is not None:
            hogs.terminate()
            hogs.wait(10)
    print(f"\n{args.iterations} iterations in {time.monotonic() - t0:.0f} s; load average "
          f"at end: {os.getloadavg()[0]:.2f}")
    return results


def main() -> None:
    ap = loop_arguments(__doc__, CASES)
    ap.add_argument("--lib", default=str(HERE.parents[1] / "lib"),
                    help="where deliverylab is imported from (/work/main/lib: before)")
    args = ap.parse_args()
    if args.child:
        return child(args.child)
    cases = chosen_cases(args, CASES)
    client = client_version()
    print(f"confluent-kafka {client}, librdkafka "
          f"{confluent_kafka.libversion()[0]}, Python {sys.version.split()[0]}; "
          f"deliverylab from {args.lib}")
    print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; "
          f"{args.load} CPU hog(s)")
    results = run_loop(args, cases, args.lib)
    counts = {c: Counter(r["outcome"] for r in results[c]) for c in cases}
    examples: dict[tuple[str, str], dict[str, Any]] = {}
    for case in cases:
        for result in results[case]:
            examples.setdefault((case, result["outcome"]), result)
    for case in cases:
        row = ", ".join(f"{k}: {v}" for k, v in counts[case].most_common())
        print(f"  {case:9s} {row}")
    print("\none of each outcome:")
    for (case, outcome), result in sorted(examples.items()):
        shown = {k: v for k, v in result.items() if k not in ("outcome", "tail")}
        print(f"  {case} / {outcome}: {json.dumps(shown)[:300]}")
        if "tail" in result:
            print("    " + result["tail"].strip().replace("\n", "\n    ")[-1500:])
    crashed = sum(v for c in cases for k, v in counts[c].items() if k.startswith("crash"))
    print(f"\nSystemErrors: {sum(counts[c]['SystemError(str)'] for c in cases)} "
          f"(client alone: {counts['client']['SystemError(str)'] if 'client' in cases else '-'})"
          f"; native crashes: {crashed}")


if __name__ == "__main__":
    main()
