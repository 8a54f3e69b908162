"""The lab's own librdkafka clients: shared settings, and the one way to record a send.

librdkafka prints every refused connection to stderr. While a cluster starts, or after
a student kills a broker on purpose, that is hundreds of lines burying the lesson. The
lab's internal clients send their logs to a Python logger instead, silent by default:
``logging.getLogger("deliverylab.librdkafka").addHandler(...)`` brings them back.

**No exception of the lab's may cross into librdkafka.** confluent-kafka (2.13.0 to at
least 2.16.1, its PR #2019) keeps an exception raised in a callback for the end of the
blocking call with ``PyErr_Fetch`` and throws its *type* away; on Python < 3.12 an
exception raised by C code (``None >= 0``'s ``TypeError``) is not normalised yet, its
value is the message string, and the restore becomes ``SystemError: _PyErr_SetObject:
exception <class 'str'> is not a BaseException subclass`` out of ``flush()``, the real
error lost. So the logger handed to librdkafka (:class:`ClientLog`) and the delivery
callbacks (:func:`guarded`) keep their own errors and give them back in Python, after
the call (:meth:`Recorder.check`). ``bench/client_callbacks.py`` reproduces it.
"""

from __future__ import annotations

import ctypes
import logging
import threading
import uuid
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer

from .errors import LabError, TimedOut, bad_value
from .history import History, outcome_of
from .modes import TRANSACTIONAL, DeliveryMode
from .values import ValueId, encode, key
from .waiting import wait_until

LOGGER = logging.getLogger("deliverylab.librdkafka")
LOGGER.addHandler(logging.NullHandler())
LOGGER.propagate = False


#: Any function called through ``ctypes.pythonapi`` (a ``PyDLL``) raises the exception
#: set on this thread when it returns, if there is one: that is documented ``PyDLL``
#: behaviour, and this call does nothing else.
_ERROR_INDICATOR_CHECK = ctypes.pythonapi.Py_IsInitialized


def raise_pending() -> None:
    """Raise the exception confluent-kafka left *set* on this thread, if any.

    Its ``error_cb`` turns librdkafka's fatal error (fencing, a broken idempotent
    sequence) into a ``KafkaException`` it sets and does not take back; the next
    callbacks of the same ``flush``/``poll`` then run Python with it pending. Whatever
    C code notices it first decides its fate: a ``SystemError`` "returned a result
    with an exception set" around it, or silently cleared (seen in an ``isinstance``
    here; CPython's ``_PyType_Lookup`` clears a pending error on a method-cache miss)
    and the call ends in "returned NULL without setting an exception", the fatal error
    lost (``bench/client_callbacks.py``, case ``fatal``). Raised here,
    first thing in a lab callback, it is a plain ``KafkaException`` that
    confluent-kafka keeps and raises from the call.
    """
    _ERROR_INDICATOR_CHECK()


def passes_through(exc: BaseException) -> bool:
    """Must this exception, caught in a callback, still reach the blocking call?

    Yes for what is not the callback's own failure: an interrupt or exit
    (``KeyboardInterrupt``, ``SystemExit``), and a ``KafkaException`` -- confluent-kafka
    raises a fatal error (fencing) by leaving it set while the next callbacks run, so
    it surfaces inside them. Re-raised from an ``except`` clause it is a normalised
    instance, which confluent-kafka restores intact.
    """
    return not isinstance(exc, Exception) or kafka_cause(exc) is not None


def _kept(callback: Callable[..., Any], args: tuple, errors: list[BaseException]) -> None:
    """Call ``callback``; its own failure goes to ``errors``, what passes through is
    raised (re-raised from this ``except``: normalised). So does an error C code left
    set under a result: confluent-kafka's ``KafkaError`` compared with None returns
    False *and* leaves a TypeError set, which a plain return would carry into the call."""
    try:
        callback(*args)
        raise_pending()
    except BaseException as exc:
        if passes_through(exc):
            raise
        errors.append(exc)


def guarded(callback: Callable[..., Any], errors: list[BaseException]) -> Callable[..., None]:
    """``callback`` as librdkafka may call it: an exception of its own is appended to
    ``errors`` (for the caller to raise after the blocking call) instead of crossing
    into confluent-kafka, which would lose it (module docstring). A fatal error left
    pending by confluent-kafka (:func:`raise_pending`) is raised -- after the callback
    ran, so that this report is recorded too."""
    def call(*args: Any) -> None:
        try:
            raise_pending()
        except BaseException:
            _kept(callback, args, errors)
            raise
        _kept(callback, args, errors)
    return call


class ClientLog:
    """The ``logger`` librdkafka writes to: forwards to :data:`LOGGER` and never raises.

    librdkafka's log lines reach Python from inside ``poll``/``flush`` (confluent-kafka
    forwards them to the polled queue: the thread that polls, never one of librdkafka's
    own). A logging handler or filter that raises -- one a student adds to see the
    lines, or the file behind it gone -- would abort that call with the mangled
    ``SystemError`` (module docstring). A failure is counted and kept instead
    (``failures``, ``last_failure``), and logging goes on; a fatal error left pending
    by confluent-kafka is raised after the line is logged, as :func:`guarded` does.
    """

    def __init__(self, logger: logging.Logger) -> None:
        self.logger = logger
        self.failures = 0
        self.last_failure: str | None = None
        #: librdkafka's "current transaction failed" lines (``TXNERR``), per client.id:
        #: the one sign Python gets that a transaction became abortable on its own
        #: (:func:`wait_transaction_failed`).
        self.txn_failed: dict[str, int] = {}
        self._errors: list[BaseException] = []
        self._log = guarded(self.logger.log, self._errors)

    def log(self, level: int, msg: str, *args: Any) -> None:
        # confluent-kafka's arguments: facility, the client's name ("<client.id>#producer-N"),
        # the line.
        if len(args) == 3 and args[0] == "TXNERR":
            client = str(args[1]).rpartition("#")[0]
            self.txn_failed[client] = self.txn_failed.get(client, 0) + 1
        try:
            self._log(level, msg, *args)
        finally:  # also when a pending fatal error is on its way out
            while self._errors:
                exc = self._errors.pop()
                self.failures += 1
                self.last_failure = f"{type(exc).__name__}: {exc}"


#: The one adapter every lab client logs through (:func:`config`).
CLIENT_LOG = ClientLog(LOGGER)


def bootstrap_of(target: Any, direct: bool = False) -> str:
    """The bootstrap address of ``target``: a ``"host:port[,...]"`` string as is, or an
    object's ``.bootstrap_servers`` (a :class:`~deliverylab.cluster.Cluster`: through
    its fault proxies, what clients under test use). ``direct=True`` prefers its
    ``.direct_bootstrap_servers``: the evidence readers' path, which no fault touches.
    """
    if isinstance(target, str) and target.strip():
        return target.strip()
    for attr in (("direct_bootstrap_servers",) if direct else ()) + ("bootstrap_servers",):
        found = getattr(target, attr, None)
        found = found() if callable(found) else found
        if isinstance(found, str) and found.strip():
            return found.strip()
    raise bad_value("cluster", target, "a bootstrap address 'host:port[,host:port]' or an "
                    "object with .bootstrap_servers (e.g. a Cluster)")


def config(bootstrap: str, **settings: Any) -> dict[str, Any]:
    """A client configuration: bootstrap address, quiet logging, then ``settings``.

    Keys use librdkafka's dotted names; pass them as a dict to avoid Python keyword
    limits, e.g. ``config(b, **{"enable.idempotence": True})``.
    """
    return {"bootstrap.servers": bootstrap, "logger": CLIENT_LOG, **settings}


# --- the one recording path: a delivery report becomes a send op -------------------------

#: Errors that mean "a newer producer with this transactional.id exists" (fenced).
FENCING_CODES = frozenset({KafkaError._FENCED, KafkaError.PRODUCER_FENCED,
                           KafkaError.INVALID_PRODUCER_EPOCH})


def kafka_cause(exc: BaseException | None) -> KafkaException | None:
    """The KafkaException in an exception's chain (itself, its cause or context).

    confluent-kafka may raise a fatal error (fencing) from inside ``flush()`` while a
    delivery callback runs, and Python then reports it as a ``SystemError`` around it.
    """
    seen = 0
    while exc is not None and seen < 5:
        if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
            return exc
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None


def is_fencing(error: BaseException | KafkaError | None) -> bool:
    """Does this error (or the KafkaException inside it) say the producer is fenced?

    A fatal error counts too: librdkafka turns fencing into a fatal ``_FENCED``, and a
    producer in a fatal state can never write again either way.
    """
    if isinstance(error, KafkaError):
        err = error
    else:
        cause = kafka_cause(error)
        if cause is None:
            return False
        err = cause.args[0]
    return err.code() in FENCING_CODES or err.fatal()


def end_transaction(producer: Producer, how: str = "commit", timeout: float = 30.0,
                    attempts: int = 3) -> None:
    """``commit_transaction``/``abort_transaction``, resumed while the error is retriable.

    Why: a call that times out (``_TIMED_OUT``, retriable) has not ended the
    transaction; librdkafka keeps ending it in the background and refuses any other
    transactional call meanwhile (``_CONFLICT``: "Conflicting commit_transaction API
    call is already in progress"). Its contract is to call the same method again, which
    resumes and returns the outcome. Seen on a loaded machine: a commit waiting on a
    paused leader's produce request outlived its 30 s, and the workload's next
    ``begin_transaction`` failed. An abortable, fatal or fencing error, or a timeout on
    the last attempt, is raised for the caller to record and handle.
    """
    if how not in ("commit", "abort"):
        raise bad_value("how", how, "'commit' or 'abort'")
    end = getattr(producer, f"{how}_transaction")
    for attempt in range(1, attempts + 1):
        try:
            end(timeout)
            return
        except KafkaException as exc:
            err = exc.args[0]
            if (attempt == attempts or not err.retriable() or err.txn_requires_abort()
                    or err.fatal()):
                raise


def wait_transaction_failed(producer: Producer, client_id: str, seen: int,
                            timeout: float = 10.0) -> None:
    """Serve ``producer`` until librdkafka has logged its transaction failed (``TXNERR``)
    more than ``seen`` times (:attr:`ClientLog.txn_failed` of ``client_id``, read before).

    Why, a librdkafka bug (2.16.0, and its master as read on 2026-11-28): a message that
    outlives ``message.timeout.ms`` in a transaction is failed in a broker thread
    (its delivery report), and only then, in the same thread, is the transaction marked
    abortable with an epoch bump (``rd_kafka_broker_toppar_msgq_scan`` then
    ``rd_kafka_idemp_drain_epoch_bump``). An ``abort_transaction()`` waiting for that
    message may run its whole abort in between -- the transaction back to Ready -- and
    the late mark is then a transition librdkafka asserts against ("BUG: Invalid
    transaction state transition attempted: Ready -> AbortableError"): SIGABRT, the
    Python process gone (chapter 09's late write: once in CI, within 99 s of a loop
    beside two CPU hogs; ``bench/txn_abort_race.py`` shows it without the lab). Whoever
    aborts a transaction whose message is timing out flushes until
    its delivery report came, then waits here; the abort then starts from
    AbortableError, a valid transition. A raising wait: no mark, no abort.
    """
    def marked() -> bool:
        producer.poll(0.05)  # serves the log lines (confluent-kafka queues them)
        return CLIENT_LOG.txn_failed.get(client_id, 0) > seen

    wait_until(f"librdkafka to mark the transaction of {client_id} failed (TXNERR)",
               marked, timeout, interval=0)


class Recorder:
    """Sends lab values through a librdkafka producer and records each as a ``send`` op.

    Every client of the lab (workloads, the processing stage, the hand-driven
    transactional producer, zombies, tests, benchmarks) records through this one path,
    as Jepsen's clients return their op from ``invoke!``: one value per send op, its
    outcome from the delivery report (ok / fail / info, see
    :func:`~deliverylab.history.classify`), the offset where it was acknowledged, and
    the transaction it belonged to. Values handed to the client but never reported are
    recorded as ``info`` by :meth:`settle`: maybe written.
    """

    def __init__(self, history: History, process: str, topic: str) -> None:
        self.history = history
        self.process = process
        self.topic = topic
        self.pending: dict[ValueId, str | None] = {}  # handed over, not yet reported
        self.counts = {"ok": 0, "fail": 0, "info": 0}
        self.errors: list[KafkaError] = []
        #: Exceptions the delivery callbacks raised (a lab bug): raised by :meth:`check`.
        self.callback_errors: list[BaseException] = []
        # No lock: delivery callbacks run in the thread that polls or flushes, and
        # confluent-kafka may raise a fatal error (fencing) *inside* a callback, at its
        # first C call -- a lock taken there would stay taken forever. Dict operations
        # are atomic under the GIL.

    def _report(self, vid: ValueId, txn: str | None,
                then: Callable[[KafkaError | None, Any], None] | None) -> Callable:
        def done(err: KafkaError | None, msg: Any) -> None:
            outcome = outcome_of(err)
            ok = err is None
            # An acknowledged message may have no offset: ``msg.offset()`` is None when
            # librdkafka acks it *implicitly* (an idempotent batch whose response was
            # lost or said "possibly persisted", followed by a later batch's success)
            # or on DUPLICATE_SEQUENCE_NUMBER. Written, place unknown. (Comparing that
            # None with 0 here was the SystemError of issue 41.)
            self.history.record(self.process, "send", outcome, [vid], topic=self.topic,
                                partition=msg.partition() if ok else None,
                                offset=msg.offset() if ok else None, txn=txn, error=err)
            # Only once recorded: a value whose record failed stays pending, and
            # settle() calls it maybe written rather than dropping it.
            self.pending.pop(vid, None)
            self.counts[outcome] += 1
            if err is not None:
                self.errors.append(err)
            if then is not None:
                then(err, msg)
        return guarded(done, self.callback_errors)

    def send(self, producer: Producer, vid: ValueId, partition: int | None = None,
             txn: str | None = None, payload_size: int = 0,
             then: Callable[[KafkaError | None, Any], None] | None = None) -> None:
        """Hand one value to ``producer``; its delivery report becomes the send op.

        A full local queue waits for deliveries to drain; a fencing error raised by
        ``produce()`` itself is recorded as a failed send and re-raised.
        """
        self.pending[vid] = txn
        kwargs = {} if partition is None else {"partition": partition}
        while True:
            try:
                producer.produce(self.topic, encode(vid.producer, vid.seq, payload_size),
                                 key=key(vid.producer), on_delivery=self._report(vid, txn, then),
                                 **kwargs)
                producer.poll(0)
                return
            except BufferError:  # local queue full: let deliveries drain, then retry
                producer.poll(0.1)
            except KafkaException as exc:
                self.pending.pop(vid, None)
                self.history.record(self.process, "send", "fail", [vid], topic=self.topic,
                                    txn=txn, error=exc)
                raise

    def settle(self, detail: str = "no delivery report", error: object = None) -> int:
        """Record every value still unreported as ``info`` (maybe written); returns how
        many. Call after ``flush()`` returned or raised. With no ``error`` (the flush
        returned), a delivery callback's own failure is raised here (:meth:`check`)."""
        left, self.pending = self.pending, {}
        for vid, txn in left.items():
            self.history.record(self.process, "send", "info", [vid], topic=self.topic,
                                txn=txn, detail=detail, error=error)
        self.counts["info"] += len(left)
        if error is None:
            self.check()
        return len(left)

    def check(self) -> None:
        """Raise what a delivery callback of this Recorder raised, in Python, with its
        own traceback (the callback kept it from librdkafka: module docstring)."""
        if self.callback_errors:
            first = self.callback_errors[0]
            raise LabError(f"{len(self.callback_errors)} delivery report(s) of "
                           f"{self.process} could not be recorded: "
                           f"{type(first).__name__}: {first}") from first


# --- a transactional producer driven by hand ---------------------------------------------


class Fenced(LabError):
    """A newer producer with the same ``transactional.id`` has fenced this one."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


#: Seconds a consumer's close may take before it is let go (:func:`close_consumer`).
CLOSE_WITHIN = 30.0
#: Warnings about closes let go, for whoever wants to see them (a test, a notebook).
CLOSE_LOG = logging.getLogger("deliverylab.close")


def close_consumer(consumer: Any, timeout: float = CLOSE_WITHIN) -> bool:
    """Close a group consumer, letting go of it if librdkafka never returns.

    Why not ``consumer.close()``: closing a consumer that still holds an assignment runs
    its rebalance callback from inside the close, and confluent-kafka's callback asks
    ``rd_kafka_rebalance_protocol()``, a request to the group's queue that a terminating
    group may never answer: the close then blocks forever (librdkafka issue #4041,
    confluent-kafka-go #1016; seen here once, in chapter 02b's eager run through a hub:
    ``Consumer_close`` -> ``rd_kafka_poll_cb`` -> ``Consumer_rebalance_cb`` ->
    ``rd_kafka_rebalance_protocol``, on confluent-kafka 2.16.1 / librdkafka 2.16.0).
    The close runs in a thread of its own; after ``timeout`` seconds the lab goes on (the
    broker ends the member's session by its timeout) and says so on ``CLOSE_LOG``.
    Returns whether the close returned. An error the close raises is raised here.
    """
    raised: list[BaseException] = []

    def close() -> None:
        try:
            consumer.close()
        except BaseException as exc:  # handed to the caller's thread below
            raised.append(exc)

    worker = threading.Thread(target=close, name="lab-consumer-close", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        CLOSE_LOG.warning("a consumer's close did not return within %.0f s (librdkafka "
                          "#4041: its rebalance callback waits on a terminating group); "
                          "let go, its session times out on the broker", timeout)
        return False
    if raised:
        raise raised[0]
    return True


#: Seconds a topic just created may stay unknown to the broker a new client asks: the
#: controller has it and the broker that answered ``create_topic`` too, another broker's
#: metadata cache lags (by seconds on a loaded machine: seen in a cold test run).
TOPIC_KNOWN_WITHIN = 15.0


def _topic_metadata(client: Any, topic: str, timeout: float) -> Any:
    """The topic's metadata once the broker ``client`` asks knows it, or None after
    ``timeout`` (then it does not exist: the caller names the bad value)."""
    def known() -> Any:
        meta = client.list_topics(topic, timeout=5).topics.get(topic)
        return meta if meta is not None and meta.error is None and meta.partitions else None

    try:
        return wait_until(f"metadata of topic {topic!r}", known, timeout,
                          retry=(KafkaException,))
    except TimedOut:
        return None


class TxnProducer:
    """A transactional producer you drive by hand: :meth:`begin`, :meth:`write`,
    :meth:`commit`, :meth:`abort`. Every op is recorded in ``history`` with the
    conventions of :class:`~deliverylab.workload.ProducerWorkload` (one send per value,
    a ``txn`` id per transaction), so the checker and the Inspector judge it alike.

    Each method returns one line saying what happened (the fault panel shows it).
    ``transaction_timeout_ms`` (default 2 minutes, long enough to look at an open
    transaction) is how long the coordinator lets a transaction stay open before it
    aborts it on its own. A second instance with the same ``transactional_id`` fences
    this one: its next write or commit raises :class:`Fenced`.
    """

    def __init__(self, target: Any, topic: str, history: History,
                 transactional_id: str | None = None, process: str = "txn-producer",
                 mode: DeliveryMode = TRANSACTIONAL, timeout: float = 30.0,
                 transaction_timeout_ms: int = 120_000, writer: str | None = None) -> None:
        self.bootstrap = bootstrap_of(target)
        self.topic = topic
        self.history = history
        self.process = process
        #: The producer named in the values (``writer:seq``): ``process`` unless this is
        #: a second instance of one logical producer (a zombie writes its values).
        self.writer = writer or process
        self.transactional_id = transactional_id or f"{process}-{uuid.uuid4().hex[:6]}"
        self.timeout = timeout
        self.producer = Producer(config(self.bootstrap, **{
            **mode.producer, "transactional.id": self.transactional_id,
            "transaction.timeout.ms": int(transaction_timeout_ms)}))
        meta = _topic_metadata(self.producer, topic, min(timeout, TOPIC_KNOWN_WITHIN))
        if meta is None:
            raise bad_value("topic", topic, "an existing topic")
        self.partitions = len(meta.partitions)
        self.seq = 0
        self.txn: str | None = None
        self.count = 0
        self.fenced = False
        self.last: dict[int, int] = {}
        self.recorder = Recorder(history, process, topic)
        try:
            self.producer.init_transactions(timeout)
        except KafkaException as exc:
            self.history.record(process, "init_txn", "fail", error=exc)
            raise
        self.history.record(process, "init_txn", "ok", detail=self.transactional_id)

    def __repr__(self) -> str:
        state = "fenced" if self.fenced else (f"in {self.txn}" if self.txn else "idle")
        return f"<TxnProducer {self.process} ({self.transactional_id}) {state}>"

    def _fence(self, exc: KafkaException, what: str) -> Fenced:
        err = exc.args[0]
        self.fenced = True
        return Fenced(f"{self.process} was fenced: {what} refused with {err.name()} -- a "
                      f"newer producer uses transactional.id {self.transactional_id!r}",
                      err.name())

    def begin(self) -> str:
        if self.txn is not None:
            return f"{self.txn} is already open: write, then commit or abort it"
        self.count += 1
        txn = f"{self.process}/txn-{self.count}"
        try:
            self.producer.begin_transaction()
        except KafkaException as exc:
            raise (self._fence(exc, "begin") if is_fencing(exc) else exc) from exc
        self.txn = txn
        self.history.record(self.process, "begin_txn", "ok", txn=txn)
        return f"began {txn}"

    def write(self, count: int | None = None) -> str:
        """Write ``count`` values (default: one per partition), round-robin over the
        partitions, and wait until the broker has them (uncommitted, if in a transaction)."""
        if self.txn is None:
            self.begin()
        n = self.partitions if count is None else count
        txn = self.txn
        results: list[tuple[Any, Any]] = []
        for _ in range(n):
            vid = ValueId(self.writer, self.seq)
            partition = self.seq % self.partitions
            self.seq += 1
            try:
                self.recorder.send(self.producer, vid, partition, txn,
                                   then=lambda err, msg: results.append((err, msg)))
            except KafkaException as exc:
                raise (self._fence(exc, "write") if is_fencing(exc) else exc) from exc
        try:
            self.producer.flush(self.timeout)
        except (KafkaException, SystemError) as exc:
            # A fatal error (fencing) is raised from inside flush(), even in the middle
            # of delivery callbacks (Python then wraps it in a SystemError).
            cause = kafka_cause(exc)
            self.recorder.settle("flush raised", error=cause or exc)
            if cause is not None and is_fencing(cause):
                raise self._fence(cause, "write") from exc
            raise
        self.recorder.check()
        bad = [err for err, _ in results if err is not None]
        if bad:
            if any(is_fencing(e) for e in bad):
                raise self._fence(KafkaException(bad[0]), "write")
            raise LabError(f"{len(bad)} of {n} writes failed: {bad[0].name()}")
        # An implicitly acknowledged write has no offset (None): written, place unknown.
        where = sorted(((m.partition(), m.offset()) for _, m in results),
                       key=lambda po: (po[0], -1 if po[1] is None else po[1]))
        for p, o in where:
            if o is not None:
                self.last[p] = o
        spots = ", ".join(f"p{p}@{'?' if o is None else o}" for p, o in where)
        return f"wrote {n} value(s) in {txn} at {spots} (not visible to read_committed yet)"

    def commit(self) -> str:
        return self._end("commit", "committed", "its values are visible to read_committed "
                         "readers")

    def abort(self) -> str:
        return self._end("abort", "aborted", "its values stay in the log, hidden from "
                         "read_committed")

    def _end(self, how: str, done: str, result: str) -> str:
        """Commit or abort the open transaction, recording the op either way."""
        if self.txn is None:
            return f"no open transaction to {how}"
        txn, self.txn = self.txn, None
        try:
            end_transaction(self.producer, how, self.timeout)
        except KafkaException as exc:
            self.history.record(self.process, f"{how}_txn", "fail", txn=txn, error=exc)
            if is_fencing(exc):
                raise self._fence(exc, how) from exc
            raise
        self.history.record(self.process, f"{how}_txn", "ok", txn=txn)
        return f"{done} {txn}: {result}"

    def close(self) -> None:
        """Let go of the client (an open transaction is aborted by the coordinator after
        ``transaction.timeout.ms``, or at once by the next producer with this id).

        A fenced producer is in a fatal state and its flush raises; closing it must not,
        or tidying up after the very fault a chapter demonstrates would fail the cell."""
        try:
            self.producer.flush(0)
        except KafkaException as exc:
            if not exc.args[0].fatal():
                raise


def zombie_write(producer: Producer, topic: str, history: History,
                 process: str = "zombie", timeout: float = 30.0) -> str | None:
    """Let a producer that may have been fenced write one value and commit.

    For a crashed pipeline's producer (``Pipeline.zombie``): its transaction was left
    open when it crashed. Returns ``None`` if the write *and* commit succeeded (the
    zombie was not fenced), else the error's name, recorded in ``history``. The attempt
    is itself the registry's ``zombie_producer`` fault, recorded as a fault op.
    """
    txn = f"{process}/late-write"
    history.record(process, "fault", "info", fault="zombie_producer", txn=txn,
                   detail=f"{process} comes back and writes")
    recorder = Recorder(history, process, topic)
    try:
        recorder.send(producer, ValueId(process, 0), txn=txn)
        producer.flush(timeout)
        producer.commit_transaction(timeout)
        recorder.check()
    except (KafkaException, SystemError) as exc:
        cause = kafka_cause(exc)
        recorder.settle("flush or commit raised", error=cause or exc)
        history.record(process, "commit_txn", "fail", txn=txn, error=cause or exc)
        return cause.args[0].name() if cause is not None else type(exc).__name__
    if recorder.errors:
        history.record(process, "commit_txn", "fail", txn=txn, error=recorder.errors[0])
        return recorder.errors[0].name()
    history.record(process, "commit_txn", "ok", txn=txn)
    return None
