"""recipes.read_partition against a new leader that cannot give its watermarks yet.

No cluster: a stand-in consumer answers OFFSET_NOT_AVAILABLE (a leader whose high
watermark has not caught up after a failover) before it answers, which chapter 01's
partitioned-leader cell met on containers and raised out of the recipe.
"""
from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from deliverylab.chapters import recipes
from deliverylab.errors import ClusterNotReady


class Stalled:
    """A consumer whose watermark request fails ``times`` times, then finds nothing."""

    def __init__(self, times: int, code: int = KafkaError.OFFSET_NOT_AVAILABLE) -> None:
        self.times, self.code, self.asked, self.closed = times, code, 0, False

    def __call__(self, conf: dict) -> Stalled:
        return self

    def get_watermark_offsets(self, tp, timeout: float) -> tuple[int, int]:
        self.asked += 1
        if self.asked <= self.times:
            raise KafkaException(KafkaError(self.code))
        return 0, 0

    def close(self) -> None:
        self.closed = True


def test_a_leader_not_caught_up_is_asked_again(monkeypatch):
    stalled = Stalled(times=2)
    monkeypatch.setattr(recipes, "Consumer", stalled)
    assert recipes.read_partition("127.0.0.1:1", "t", 0, timeout=10) == []
    assert stalled.asked == 3 and stalled.closed


def test_a_leader_that_never_answers_is_a_timeout_naming_it(monkeypatch):
    stalled = Stalled(times=10**6)
    monkeypatch.setattr(recipes, "Consumer", stalled)
    with pytest.raises(ClusterNotReady, match="watermarks of t/0.*OFFSET_NOT_AVAILABLE"):
        recipes.read_partition("127.0.0.1:1", "t", 0, timeout=1)
    assert stalled.closed
