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
