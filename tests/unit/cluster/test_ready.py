"""The cluster waits against brokers whose metadata disagree (no cluster).

Right after a topic is created, one broker may know it and the next may not: a wait
that returned on the first answer and then asked again handed ``None`` on (it
happened: ``recipes._wait_isr_full`` -> ``AttributeError: 'NoneType' object has no
attribute 'leader'``). A stand-in admin answers from a script of metadata snapshots.
"""
from __future__ import annotations

import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from deliverylab.chapters.at_most_once import recipes
from deliverylab.cluster.ready import aside, wait_whole
from deliverylab.errors import ClusterNotReady

WHOLE = SimpleNamespace(error=None, partitions={
    0: SimpleNamespace(leader=2, replicas=[2, 1, 3], isrs=[1, 2, 3])})
SHRUNK = SimpleNamespace(error=None, partitions={
    0: SimpleNamespace(leader=2, replicas=[2, 1, 3], isrs=[2])})


class Brokers:
    """Answers ``list_topics`` from ``script`` in turn (its last entry from then on):
    each entry is the topics one broker knows."""

    def __init__(self, *script: dict) -> None:
        self.script = list(script)
        self.asked = 0
        self.nodes = {1: None, 2: None, 3: None}

    def admin(self) -> Brokers:
        return self

    def list_topics(self, topic: str | None = None, timeout: float = 5) -> SimpleNamespace:
        topics = self.script[min(self.asked, len(self.script) - 1)]
        self.asked += 1
        if topic is not None:
            topics = {k: v for k, v in topics.items() if k == topic}
        return SimpleNamespace(brokers={1: None, 2: None, 3: None}, topics=topics)

    def _partition(self, topic: str, partition: int, timeout: float = 5.0):
        meta = self.list_topics(topic).topics.get(topic)
        return None if meta is None else meta.partitions.get(partition)


def test_wait_whole_returns_the_metadata_that_showed_it_whole() -> None:
    brokers = Brokers({}, {"t": SHRUNK}, {"t": WHOLE}, {})  # the 4th broker forgot it
    seen = wait_whole(brokers, ["t"], timeout=5, steady=0.0)
    assert seen == {"t": WHOLE}


def test_the_isr_wait_reads_leader_and_replicas_from_what_it_waited_for() -> None:
    brokers = Brokers({"t": WHOLE}, {})  # whole once, then a broker that does not know t
    assert recipes._wait_isr_full(brokers, "t", 0, timeout=5) == (2, [2, 1, 3])


def test_the_isr_wait_names_a_partition_that_does_not_exist() -> None:
    with pytest.raises(Exception, match="partition.*7.*0 to 0"):
        recipes._wait_isr_full(Brokers({"t": WHOLE}), "t", 7, timeout=5)


def test_wait_whole_raises_naming_what_it_waited_for_never_returns_early() -> None:
    with pytest.raises(ClusterNotReady, match="every replica of t in sync"):
        wait_whole(Brokers({"t": SHRUNK}), ["t"], timeout=1, steady=0.0)


def test_wait_until_returns_the_probe_s_answer_or_raises_naming_what_it_waited_for():
    from deliverylab.cluster.ready import wait_until

    answers = iter([None, 0, {"leader": 2}])
    assert wait_until("a leader", lambda: next(answers), 5, interval=0.01) == {"leader": 2}
    with pytest.raises(ClusterNotReady, match=r"waiting for the moon; the sky is cloudy"):
        wait_until("the moon", lambda: None, 0.05, interval=0.01,
                   explain=lambda: "; the sky is cloudy")
    with pytest.raises(RuntimeError, match="node 3 died"):
        wait_until("anything", lambda: None, 5, check=_raise("node 3 died"))


def _raise(message: str):
    def check() -> None:
        raise RuntimeError(message)
    return check


def test_the_cluster_s_wait_asks_again_after_a_kafka_error_and_raises_cluster_not_ready():
    from confluent_kafka import KafkaError, KafkaException

    from deliverylab.cluster.ready import wait_until
    from deliverylab.errors import TimedOut

    def probe() -> None:
        raise KafkaException(KafkaError(KafkaError._TRANSPORT, "broker down"))

    with pytest.raises(ClusterNotReady, match=r"waiting for a leader \(last error: .*broker "
                       r"down") as err:
        wait_until("a leader", probe, 0.03, interval=0.01)
    assert isinstance(err.value, TimedOut)



def test_an_admin_request_that_timed_out_is_asked_again_not_raised():
    """A broker too busy to answer a probe's request in its own bound (a future's
    ``TimeoutError``, seen at start-up on a loaded machine) is "not yet"."""
    from deliverylab.cluster.ready import wait_until

    answers = iter([TimeoutError(), TimeoutError(), "ready"])

    def probe() -> str:
        answer = next(answers)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    assert wait_until("the topic", probe, 5, interval=0.01) == "ready"

def test_work_run_aside_holds_neither_its_result_nor_the_process_exit() -> None:
    """An early init that lost the race may go on for 30 s: the process that started the
    cluster exits at once all the same, and the Future carries a result or an error."""
    assert aside(lambda a, b: a + b, 2, 3).result(5) == 5
    failed = aside(int, "not a number")
    assert isinstance(failed.exception(5), ValueError)
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-c", "import time\n"
                    "from deliverylab.cluster.ready import aside\n"
                    "aside(time.sleep, 30)"], check=True, timeout=25)
    assert time.monotonic() - t0 < 20
