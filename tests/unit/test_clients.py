"""Client helpers' own logic, without a broker."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from deliverylab.clients import TxnProducer, end_transaction
from deliverylab.waiting import wait_until


class _Flushing:
    """A stand-in for librdkafka's flush: only the error it raises matters here."""

    def __init__(self, error: KafkaError) -> None:
        self.error = error

    def flush(self, timeout: float) -> int:
        raise KafkaException(self.error)


def _producer(error: KafkaError) -> TxnProducer:
    txn = TxnProducer.__new__(TxnProducer)  # no cluster: close() touches only .producer
    txn.producer = _Flushing(error)
    return txn


def test_closing_a_fenced_producer_does_not_raise():
    _producer(KafkaError(KafkaError._FENCED, "fenced", fatal=True)).close()


def test_closing_raises_an_error_that_is_not_fatal():
    with pytest.raises(KafkaException):
        _producer(KafkaError(KafkaError._TIMED_OUT, "timed out")).close()


def test_bootstrap_of_takes_an_address_or_a_cluster_and_names_a_bad_one():
    from types import SimpleNamespace

    from deliverylab.clients import bootstrap_of
    from deliverylab.errors import BadValue

    cluster = SimpleNamespace(bootstrap_servers="127.0.0.1:1",
                              direct_bootstrap_servers="127.0.0.1:2")
    assert bootstrap_of(" 127.0.0.1:9 ") == "127.0.0.1:9"
    assert bootstrap_of(cluster) == "127.0.0.1:1"  # clients under test: through the proxy
    assert bootstrap_of(cluster, direct=True) == "127.0.0.1:2"  # evidence: around it
    assert bootstrap_of(SimpleNamespace(bootstrap_servers="h:3"), direct=True) == "h:3"
    assert bootstrap_of(SimpleNamespace(bootstrap_servers=lambda: "h:4")) == "h:4"
    for bad in ("", None, SimpleNamespace()):
        with pytest.raises(BadValue, match="bootstrap address"):
            bootstrap_of(bad)


# --- issue 41: nothing of the lab's raises into librdkafka ----------------------------


def _mock_cluster():
    """librdkafka's own in-process mock broker (bench/client_callbacks.py drives it)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "bench" / "client_callbacks.py"
    spec = importlib.util.spec_from_file_location("client_callbacks_bench", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


def test_an_implicitly_acked_send_is_recorded_ok_without_an_offset_and_flush_returns():
    """The real path of the CI failure: librdkafka's implicit ack (a 'possibly
    persisted' first batch, then a success) reports the first value delivered with no
    offset; the Recorder records it ok and the flush returns (it raised the mangled
    SystemError before)."""
    from confluent_kafka import Producer

    from deliverylab.clients import Recorder, config
    from deliverylab.history import History
    from deliverylab.values import ValueId

    bench = _mock_cluster()
    mock = bench.MockCluster()
    mock.create_topic("t")
    mock.fail_next_produce()
    history = History()
    recorder = Recorder(history, "p", "t")
    producer = Producer(config(mock.bootstrap, **bench.implicit_ack_settings()))
    for seq in range(3):
        recorder.send(producer, ValueId("p", seq), partition=0)
    assert producer.flush(15) == 0
    assert recorder.settle() == 0
    sends = {op.values[0]: op for op in history if op.kind == "send"}
    assert [sends[f"p:{s}"].outcome for s in range(3)] == ["ok"] * 3
    assert sends["p:0"].offset is None  # acked implicitly: written, place unknown
    assert [sends[f"p:{s}"].offset for s in (1, 2)] == [0, 1]
    assert recorder.callback_errors == []


def test_a_delivery_callback_that_fails_is_raised_after_the_flush_not_inside_it():
    """A lab bug in a delivery callback comes back in Python with its own type, and
    the value it could not record stays pending: settled as maybe written."""
    from confluent_kafka import Message

    from deliverylab.clients import Recorder
    from deliverylab.errors import LabError
    from deliverylab.history import History
    from deliverylab.values import ValueId

    history = History()
    recorder = Recorder(history, "p", "t")
    vid = ValueId("p", 0)
    recorder.pending[vid] = None
    report = recorder._report(vid, None, then=lambda err, msg: len(None))  # TypeError
    report(None, Message(topic="t", partition=0, offset=7))  # must not raise
    assert [type(e) for e in recorder.callback_errors] == [TypeError]
    with pytest.raises(LabError, match="could not be recorded: TypeError") as caught:
        recorder.settle()
    assert isinstance(caught.value.__cause__, TypeError)
    assert [op.offset for op in history if op.kind == "send"] == [7]


def test_a_kafka_exception_or_an_interrupt_in_a_callback_still_passes_through():
    """confluent-kafka leaves a fatal error set while the next callbacks run: it
    surfaces inside them and must reach flush(); so must Ctrl-C."""
    from deliverylab.clients import guarded

    errors: list[BaseException] = []
    fatal = KafkaException(KafkaError(KafkaError._FENCED, "fenced", fatal=True))
    for exc in (fatal, KeyboardInterrupt()):
        def boom(exc: BaseException = exc) -> None:
            raise exc
        with pytest.raises(type(exc)):
            guarded(boom, errors)()
    wrapped = SystemError("returned a result with an exception set")
    wrapped.__cause__ = fatal

    def around() -> None:
        raise wrapped
    with pytest.raises(SystemError):
        guarded(around, errors)()
    assert errors == []


def test_the_client_logger_never_raises_and_counts_what_failed():
    import logging

    from deliverylab.clients import CLIENT_LOG, ClientLog, config

    class Failing(logging.Filter):
        def filter(self, record: logging.LogRecord) -> bool:
            return len(record.levelno) > 0  # a TypeError raised by C code

    inner = logging.getLogger("deliverylab.test_clients.failing")
    inner.propagate = False
    inner.addFilter(Failing())
    log = ClientLog(inner)
    log.log(logging.ERROR, "%s [%s] %s", "FAIL", "rdkafka#producer-1", "refused")
    log.log(logging.WARNING, "%s [%s] %s", "FAIL", "rdkafka#producer-1", "again")
    assert log.failures == 2 and log.last_failure.startswith("TypeError")
    assert config("h:1")["logger"] is CLIENT_LOG


def test_a_producer_logging_through_a_failing_logger_flushes_cleanly():
    """Against a closed port librdkafka logs every refused connection from inside
    flush(); a raising logger handed to it directly made flush raise the SystemError."""
    import logging

    from confluent_kafka import Producer

    from deliverylab.clients import ClientLog

    class Failing(logging.Filter):
        def filter(self, record: logging.LogRecord) -> bool:
            return len(record.levelno) > 0

    inner = logging.getLogger("deliverylab.test_clients.closed_port")
    inner.propagate = False
    inner.addFilter(Failing())
    log = ClientLog(inner)
    producer = Producer({"bootstrap.servers": "127.0.0.1:1", "logger": log,
                         "reconnect.backoff.ms": 10, "reconnect.backoff.max.ms": 50,
                         "message.timeout.ms": 1000})
    producer.produce("t", b"x")

    def failed_in_the_filter() -> bool:
        producer.flush(0.5)  # log lines are served inside flush: it must not raise
        return log.failures > 0  # the lines came, failed in the filter, and were kept

    # a loaded machine may take a while to refuse; flush(0.5) is the pause
    wait_until("librdkafka's log lines, failed in the filter", failed_in_the_filter, 10,
               interval=0)


def test_a_fatal_error_left_pending_by_the_client_is_raised_plainly_and_every_report_kept():
    """librdkafka turned fatal with deliveries queued: confluent-kafka's error_cb leaves
    the KafkaException set while the delivery reports run. The lab's callbacks raise
    it first thing (after recording their report): flush() raises the fatal
    KafkaException itself, not a SystemError around it or one that lost it."""
    result = _mock_cluster().case_fatal()
    assert result["outcome"] == "KafkaException(fatal)", result
    assert result["recorded"] == 5  # every value's report recorded (_PURGE_QUEUE: fail)


class _Ending:
    """A stand-in for librdkafka's commit/abort: raises the given errors in turn."""

    def __init__(self, *errors: KafkaError) -> None:
        self.errors, self.calls = list(errors), []

    def commit_transaction(self, timeout: float) -> None:
        self.calls.append(("commit", timeout))
        if self.errors:
            raise KafkaException(self.errors.pop(0))

    def abort_transaction(self, timeout: float) -> None:
        self.calls.append(("abort", timeout))
        if self.errors:
            raise KafkaException(self.errors.pop(0))


_TIMEOUT = KafkaError(KafkaError._TIMED_OUT, "timed out", retriable=True)


def test_a_timed_out_commit_is_resumed_by_calling_commit_again():
    p = _Ending(_TIMEOUT, _TIMEOUT)
    end_transaction(p, "commit", 5)
    assert p.calls == [("commit", 5)] * 3


def test_an_abortable_or_fatal_error_is_raised_at_once_and_never_retried():
    for err in (KafkaError(KafkaError._TIMED_OUT, "x", retriable=True, txn_requires_abort=True),
                KafkaError(KafkaError._FENCED, "fenced", fatal=True),
                KafkaError(KafkaError._STATE, "not retriable")):
        p = _Ending(err)
        with pytest.raises(KafkaException) as info:
            end_transaction(p, "abort")
        assert info.value.args[0] is err and len(p.calls) == 1


def test_a_commit_still_timing_out_after_every_attempt_raises():
    p = _Ending(_TIMEOUT, _TIMEOUT, _TIMEOUT)
    with pytest.raises(KafkaException):
        end_transaction(p, "commit", 1, attempts=3)
    assert len(p.calls) == 3


def test_end_transaction_names_a_bad_how():
    with pytest.raises(ValueError, match="'commit' or 'abort'"):
        end_transaction(_Ending(), "rollback")


class _Metadata:
    """What ``list_topics(topic)`` answers: unknown to this broker ``unknown`` times."""

    def __init__(self, unknown: int) -> None:
        self.unknown, self.asked = unknown, 0

    def list_topics(self, topic, timeout):
        from types import SimpleNamespace

        self.asked += 1
        if self.asked <= self.unknown:
            err = SimpleNamespace(str=lambda: "Broker: Unknown topic or partition")
            return SimpleNamespace(topics={topic: SimpleNamespace(error=err, partitions={})})
        return SimpleNamespace(topics={topic: SimpleNamespace(error=None, partitions={0: 0})})


def test_a_topic_a_lagging_broker_does_not_know_yet_is_waited_for_then_none_if_never():
    from deliverylab.clients import _topic_metadata

    lagging = _Metadata(unknown=2)
    assert _topic_metadata(lagging, "t", 5).partitions == {0: 0} and lagging.asked == 3
    assert _topic_metadata(_Metadata(unknown=10**6), "t", 0.3) is None


class _Closing:
    def __init__(self, hang: bool = False, error: Exception | None = None) -> None:
        import threading as th

        self.release, self.hang, self.error, self.closed = th.Event(), hang, error, False

    def close(self) -> None:
        if self.hang:
            self.release.wait(5)
        if self.error is not None:
            raise self.error
        self.closed = True


def test_a_consumer_close_that_never_returns_is_let_go_and_said(caplog):
    from deliverylab.clients import close_consumer

    assert close_consumer(_Closing()) is True
    stuck = _Closing(hang=True)
    with caplog.at_level("WARNING", logger="deliverylab.close"):
        assert close_consumer(stuck, timeout=0.2) is False
    assert "#4041" in caplog.text and not stuck.closed
    stuck.release.set()
    with pytest.raises(RuntimeError, match="boom"):
        close_consumer(_Closing(error=RuntimeError("boom")))


def test_the_client_log_counts_each_clients_failed_transactions():
    import logging

    from deliverylab.clients import ClientLog

    log = ClientLog(logging.getLogger("deliverylab.test_clients.txnerr"))
    log.log(logging.ERROR, "%s [%s] %s", "TXNERR", "tx-a#producer-3",
            "Current transaction failed in state InTransaction: 1 message(s) timed out")
    log.log(logging.ERROR, "%s [%s] %s", "FAIL", "tx-a#producer-3", "refused")
    log.log(logging.ERROR, "%s [%s] %s", "TXNERR", "tx-b#producer-4", "failed")
    log.log(logging.ERROR, "%s [%s] %s", "TXNERR", "tx-a#producer-3", "failed again")
    assert log.txn_failed == {"tx-a": 2, "tx-b": 1}


def test_waiting_for_a_failed_transaction_serves_the_producer_until_librdkafka_logs_it():
    """The wait polls (log lines are served inside poll) and returns once the client's
    TXNERR line came; another client's line does not count; none at all raises."""
    import logging

    from deliverylab.clients import CLIENT_LOG, wait_transaction_failed
    from deliverylab.errors import TimedOut

    class Producer:
        def __init__(self, name: str, after: int) -> None:
            self.name, self.after, self.polls = name, after, 0

        def poll(self, timeout: float) -> int:
            self.polls += 1
            if self.polls == self.after:
                CLIENT_LOG.log(logging.ERROR, "%s [%s] %s", "TXNERR", self.name, "failed")
            return 0

    seen = CLIENT_LOG.txn_failed.get("w-1", 0)
    producer = Producer("w-1#producer-9", after=3)
    wait_transaction_failed(producer, "w-1", seen, timeout=5)
    assert producer.polls == 3
    with pytest.raises(TimedOut, match="w-2"):
        wait_transaction_failed(Producer("w-3#producer-1", after=1), "w-2", 0, timeout=0.3)
