"""Client helpers' own logic, without a broker."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from deliverylab.clients import TxnProducer


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
